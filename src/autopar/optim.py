"""``autopar.optim``: torch.optim's ``SGD`` and ``Adam`` for autopar parameters.

    trainer = autopar.optim.SGD(net.parameters(), lr=0.1)
    trainer.zero_grad(); loss.backward(); trainer.step()

``step()`` pushes each parameter's update (torch's formulas, the update ops
of ``autopar.parallel``) and returns at once; an update reads its
parameter's gradient, so it runs the moment that gradient is ready, while
backward goes on with the earlier layers. Gradients accumulate as in torch
until ``zero_grad()`` (``set_to_none=True``: ``p.grad = None``).
``param_groups`` are torch's: a list of dicts with ``"params"`` and the
hyper-parameters, which may be changed between steps (``group["lr"] = ...``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from autopar.arrays._array import NDArray
from autopar.engine._group import atomic

__all__ = ["Adam", "Optimizer", "SGD"]


class Optimizer:
    """torch.optim.Optimizer's interface: ``param_groups``, ``zero_grad``, ``step``, ``add_param_group``,
    ``state_dict``, ``load_state_dict``."""

    _state_names: tuple[str, ...] = ()  # torch's names of a parameter's state arrays, in their order
    _torch_settings: dict[str, Any] = {}  # torch's settings this optimizer has at their defaults only

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[int, tuple[NDArray, ...]] = {}
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        for group in groups if isinstance(groups[0], dict) else [{"params": groups}]:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        from autopar.nn._module import is_module_parameter

        group = {**self.defaults, **param_group}
        params = group["params"]
        group["params"] = [params] if type(params) is NDArray else list(params)
        for i, p in enumerate(group["params"]):
            # a module's frozen parameter is accepted (it gets no gradient, so no update), as in torch
            if type(p) is not NDArray or not p.is_leaf or not (p.requires_grad or is_module_parameter(p)):
                raise ValueError(f"{type(self).__name__}: parameter {i} is {type(p).__name__}"
                                 f"{'' if type(p) is not NDArray else ' that does not require grad'}; expected a "
                                 "module's parameters (net.parameters()) or arrays made with requires_grad=True")
        ids = [id(p) for p in group["params"]]
        taken = {id(p) for g in self.param_groups for p in g["params"]}
        if len(set(ids)) != len(ids) or taken.intersection(ids):
            raise ValueError(f"{type(self).__name__}: some parameters appear more than once (in one parameter "
                             "group or in two); each would be updated once per appearance")
        self._check(group)
        self.param_groups.append(group)

    def _check(self, group: dict[str, Any]) -> None:
        """Raise ValueError for a bad hyper-parameter."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        from autopar.arrays._autograd import no_grad

        from autopar.nn._module import moved_to

        for group in self.param_groups:
            for p in map(moved_to, group["params"]):
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    with no_grad():
                        p.grad[...] = 0

    def _updater(self, group: dict[str, Any]) -> Any:
        raise NotImplementedError

    def step(self, closure: Any = None) -> Any:
        """Update every parameter that has a gradient; returns at once (``closure``'s loss, if given).

        All-or-nothing under Ctrl-C: the updates of every parameter are pushed as one group
        (``engine/_group.py``), so an interrupt landing while they are pushed is raised once all
        of them are: the parameters are all updated, or (a Ctrl-C in the closure) none is."""
        from autopar.arrays._autograd import enable_grad

        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:  # a bad setting raises before anything is pushed
            self._check(group)
        self._step()
        return loss

    @atomic("Optimizer.step()")
    def _step(self) -> None:
        from autopar.arrays._autograd import no_grad

        with no_grad():
            for group in self.param_groups:
                updater = self._updater(group)
                updater.begin_step()
                self._follow_moves(group)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if id(p) not in self.state:
                        self.state[id(p)] = updater.state(p)
                    updater.update(p, p.grad, self.state[id(p)])

    def _follow_moves(self, group: dict[str, Any]) -> None:
        """The group's parameters as the model has them now (``Module.to`` since puts new arrays in
        it), each with its state, moved to its new device. (The state stayed with the old array, and
        a step after the move started over from zeros: momentum and Adam's moments lost.)"""
        from autopar.arrays._creation import asarray
        from autopar.nn._module import moved_to

        params = []
        for p in group["params"]:
            now = moved_to(p)
            if now is not p:
                state = self.state.pop(id(p), None)
                if state is not None and id(now) not in self.state:
                    self.state[id(now)] = tuple(asarray(a, device=now.device) for a in state)
            params.append(now)
        group["params"] = params

    def state_dict(self) -> dict[str, Any]:
        """torch.optim's layout: ``{"state": {index: {name: array}}, "param_groups": [{..., "params": [index]}]}``.

        The arrays are copies (a snapshot: later steps do not change it); returns at once."""
        from autopar import _optim_state

        return _optim_state.state_dict(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Take the settings and state of ``state_dict`` (this optimizer's, or torch.optim's own, whose
        tensors are copied onto each parameter's device). Raises ValueError before changing anything."""
        from autopar import _optim_state

        _optim_state.load_state_dict(self, state_dict)

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in self.defaults.items())
        return f"{type(self).__name__}({sum(len(g['params']) for g in self.param_groups)} parameters, {settings})"


class SGD(Optimizer):
    """torch.optim.SGD: ``lr``, ``momentum`` (no dampening, not Nesterov), ``weight_decay`` (L2).
    State: ``momentum_buffer`` (with momentum)."""

    _state_names = ("momentum_buffer",)
    _torch_settings = {"dampening": 0, "nesterov": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False) -> None:  # fmt: skip
        if dampening or nesterov:
            raise ValueError("SGD: dampening and nesterov are not supported; leave them at 0 and False")
        super().__init__(params, {"lr": lr, "momentum": momentum, "weight_decay": weight_decay})

    def _check(self, group: dict[str, Any]) -> None:
        from autopar.parallel import SGD as Update

        Update(group["lr"], group["momentum"], group["weight_decay"])  # raises for a bad value

    def _updater(self, group: dict[str, Any]) -> Any:
        from autopar.parallel import SGD as Update

        return Update(group["lr"], group["momentum"], group["weight_decay"])


class Adam(Optimizer):
    """torch.optim.Adam: ``lr``, ``betas``, ``eps``, ``weight_decay`` (L2); bias-corrected moments, each
    parameter's by the number of steps that updated it (as torch: one first trained later starts at step 1).
    State: ``exp_avg``, ``exp_avg_sq``, ``step`` (the count, a 0-d float64 array: a failed step fails it, and
    restoring the state restores it)."""

    _state_names = ("exp_avg", "exp_avg_sq", "step")
    _torch_settings = {"amsgrad": False}

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False) -> None:  # fmt: skip
        if amsgrad:
            raise ValueError("Adam: amsgrad is not supported; leave it False")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    def _updater(self, group: dict[str, Any]) -> Any:
        from autopar.parallel import Adam as Update

        # made at each step: the group's settings may change between steps (group["lr"] = ...)
        return Update(group["lr"], group["betas"], group["eps"], group["weight_decay"])

    def _check(self, group: dict[str, Any]) -> None:
        from autopar.parallel import Adam as Update

        Update(group["lr"], group["betas"], group["eps"], group["weight_decay"])
