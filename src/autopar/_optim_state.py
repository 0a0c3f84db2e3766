"""``state_dict()`` / ``load_state_dict()`` of ``autopar.optim``'s optimizers, in torch.optim's layout.

Design note
-----------
torch.optim's layout: ``{"state": {index: {name: tensor}}, "param_groups":
[{setting: value, ..., "params": [index, ...]}]}``, a parameter's index
counting through the groups in order. Only a parameter some step updated
has an entry in ``state`` (SGD without momentum has none). The names are
torch's: ``momentum_buffer`` (SGD), ``exp_avg``, ``exp_avg_sq``, ``step``
(Adam; here a 0-d float64 array, torch's a float32 tensor).

``state_dict()`` gives *copies* of the state arrays (pushed, so it returns
at once and holds the values after the steps pushed before it): a snapshot
that later steps do not change -- what restoring after a failed step needs.
(torch gives the live tensors; a deep copy is the usual advice there.)

``load_state_dict()`` takes such a dict, or torch.optim's own (its tensors,
or NumPy arrays): each value is copied onto its parameter's device in the
parameter's dtype (the count in float64), with the settings of each group.
torch's settings autopar does not implement (``nesterov``, ``amsgrad``,
``maximize`` ...) are accepted at their defaults only, so a state that needs
them fails at the call instead of training differently.
"""

from __future__ import annotations

from typing import Any

# torch.optim settings these optimizers do not take, with the one value each accepts.
TORCH_ONLY: dict[str, Any] = {"dampening": 0, "nesterov": False, "amsgrad": False, "maximize": False,
                              "foreach": None, "capturable": False, "differentiable": False, "fused": None,
                              "decoupled_weight_decay": False}  # fmt: skip


_TORCH_ORDER = ["momentum_buffer", "step", "exp_avg", "exp_avg_sq"]  # the order of torch's state dicts


def _params(opt: Any) -> list[list[Any]]:
    """Each group's parameters as the model has them now (and their state with them)."""
    from autopar.arrays._autograd import no_grad

    with no_grad():
        for group in opt.param_groups:
            opt._follow_moves(group)
    return [list(group["params"]) for group in opt.param_groups]


def state_dict(opt: Any) -> dict[str, Any]:
    """``opt``'s state and settings in torch.optim's layout, the arrays copied (module note)."""
    from autopar.arrays._autograd import no_grad

    state: dict[int, dict[str, Any]] = {}
    groups = []
    index = 0
    with no_grad():
        for group, params in zip(opt.param_groups, _params(opt)):
            indices = []
            for p in params:
                arrays = opt.state.get(id(p))
                if arrays:
                    named = dict(zip(opt._state_names, arrays))
                    state[index] = {n: named[n].copy() for n in sorted(named, key=_TORCH_ORDER.index)}
                indices.append(index)
                index += 1
            settings = {k: v for k, v in group.items() if k != "params"}
            groups.append({**settings, **opt._torch_settings, "params": indices})
    return {"state": state, "param_groups": groups}


def load_state_dict(opt: Any, saved: Any) -> None:
    """Take the settings and state arrays of ``saved`` (module note); raise ValueError before changing anything."""
    name = type(opt).__name__
    if not isinstance(saved, dict) or "state" not in saved or "param_groups" not in saved:
        raise ValueError(f"{name}.load_state_dict: expected a dict with 'state' and 'param_groups' (what "
                         f"state_dict() returns), got {type(saved).__name__}")  # fmt: skip
    saved_groups = list(saved["param_groups"])
    all_params = _params(opt)
    if len(saved_groups) != len(all_params):
        raise ValueError(f"{name}.load_state_dict: the state has {len(saved_groups)} parameter group(s), "
                         f"this optimizer {len(all_params)}; load it into an optimizer made like the saved one")  # fmt: skip
    by_index: dict[int, Any] = {}
    new_groups = []
    for g, (group, params, saved_group) in enumerate(zip(opt.param_groups, all_params, saved_groups)):
        indices = list(saved_group.get("params", ()))
        if len(indices) != len(params):
            raise ValueError(f"{name}.load_state_dict: parameter group {g} has {len(indices)} parameter(s) in the "
                             f"state, {len(params)} here; load it into an optimizer made like the saved one")  # fmt: skip
        settings = {}
        for key, value in saved_group.items():
            if key == "params":
                continue
            if key in TORCH_ONLY and key not in group:
                if value != TORCH_ONLY[key] and not (TORCH_ONLY[key] is False and value is None):
                    raise ValueError(f"{name}.load_state_dict: parameter group {g} has {key}={value!r}, which "
                                     f"autopar's {name} does not implement; it takes {key}={TORCH_ONLY[key]!r} only")  # fmt: skip
                continue
            settings[key] = tuple(value) if isinstance(value, list) and key == "betas" else value
        new_group = {**group, **settings, "params": params}
        opt._check(new_group)  # a bad setting raises here, before anything changed
        new_groups.append(new_group)
        by_index.update(zip(indices, params))
    new_state: dict[int, tuple[Any, ...]] = {}
    for index, entry in dict(saved["state"]).items():
        p = by_index.get(index)
        if p is None:
            raise ValueError(f"{name}.load_state_dict: the state has parameter index {index!r}, which no "
                             f"parameter group lists")  # fmt: skip
        arrays = _arrays(name, index, p, entry, opt._state_names)
        if arrays:
            new_state[id(p)] = arrays
    for group, new_group in zip(opt.param_groups, new_groups):
        group.clear()
        group.update(new_group)
    for params in all_params:
        for p in params:
            opt.state.pop(id(p), None)
    opt.state.update(new_state)


def _arrays(opt_name: str, index: Any, p: Any, entry: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    """One parameter's state arrays, copied from ``entry`` onto its device ((): nothing to keep)."""
    from autopar.arrays._autograd import no_grad
    from autopar.arrays._creation import asarray

    where = f"{opt_name}.load_state_dict: the state of parameter {index}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} is a {type(entry).__name__}; expected a dict of {', '.join(names)}")
    if all(entry.get(n) is None for n in names) and set(entry) <= set(names):
        return ()  # torch's SGD keeps momentum_buffer=None for a parameter it never gave one
    if set(entry) != set(names):
        raise ValueError(f"{where} has {', '.join(sorted(map(str, entry)))}; expected {', '.join(names)}")
    out = []
    with no_grad():
        for n in names:
            value = entry[n]
            count = n == "step"
            a = asarray(value, dtype="float64" if count else p.dtype, device=p.device, copy=True)
            shape = () if count else p.shape
            if a.shape != shape:
                raise ValueError(f"{where}: {n} has shape {a.shape}; its parameter needs {shape}")
            out.append(a)
    return tuple(out)
