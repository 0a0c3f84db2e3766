"""Gluon's ``Trainer``: sum each parameter's gradients across its devices, then update every copy.

``trainer.step(batch_size)`` pushes, for each parameter with a gradient, an
``allreduce`` of its devices' gradients (``autopar.parallel``: copies and
sums on the copy lanes) and the optimizer's update of each device's copy
with the gradient scaled by ``rescale_grad / batch_size`` -- MXNet's
``kvstore="device"``, without a store: every device ends with the same sum
and updates its own copy, so the copies stay equal. Everything is pushed: a
parameter's sum starts as soon as its gradient is ready on every device,
while backward still computes the earlier layers, and ``step`` returns at
once. The updates are ``autopar.parallel``'s (``sgd``: torch's formulas,
which are MXNet's for a constant learning rate; ``adam``).

As MXNet's, ``step`` and ``update`` raise ``UserWarning`` for a parameter whose
gradient no backward wrote since the last step (a layer the forward did not
use), naming it; ``ignore_stale_grad=True`` skips such a parameter instead. A
stale gradient is never applied. ``step`` pushes all of its sums and updates,
across devices, as one group: all-or-nothing under Ctrl-C.
"""

from __future__ import annotations

from typing import Any

from autopar.engine._group import atomic
from autopar.gluon._parameter import Parameter

_OPTIMIZERS = ("sgd", "adam")


class Trainer:
    """``Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})``; ``step(batch_size)``."""

    def __init__(self, params: Any, optimizer: str, optimizer_params: dict[str, Any] | None = None,
                 kvstore: Any = "device", compression_params: Any = None, update_on_kvstore: Any = None) -> None:  # fmt: skip
        values = list(params.values()) if isinstance(params, dict) else list(params)
        for i, p in enumerate(values):
            if not isinstance(p, Parameter):
                raise TypeError(f"Trainer: parameter {i} is a {type(p).__name__}; give net.collect_params()")
        if not isinstance(optimizer, str) or optimizer.lower() not in _OPTIMIZERS:
            raise ValueError(f"Trainer: optimizer={optimizer!r}; expected one of {', '.join(_OPTIMIZERS)}")
        settings = dict(optimizer_params or {})
        self._params = values
        self._kind = optimizer.lower()
        self._lr = float(settings.pop("learning_rate", 0.01 if self._kind == "sgd" else 0.001))
        self._rescale = float(settings.pop("rescale_grad", 1.0))
        self._wd = float(settings.pop("wd", 0.0))
        self._extra: dict[str, Any]
        if self._kind == "sgd":
            self._extra = {"momentum": float(settings.pop("momentum", 0.0))}
        else:
            self._extra = {"betas": (float(settings.pop("beta1", 0.9)), float(settings.pop("beta2", 0.999))),
                           "eps": float(settings.pop("epsilon", 1e-8))}  # fmt: skip
        if settings:
            raise ValueError(f"Trainer: unsupported optimizer_params {sorted(settings)} for {self._kind!r}")
        self._updater = self._make_updater()
        self._states: dict[tuple[int, Any], Any] = {}

    def _make_updater(self) -> Any:
        from autopar import parallel

        if self._kind == "sgd":
            return parallel.SGD(self._lr, self._extra["momentum"], self._wd)
        return parallel.Adam(self._lr, self._extra["betas"], self._extra["eps"], self._wd)

    @property
    def learning_rate(self) -> float:
        return self._lr

    def set_learning_rate(self, lr: float) -> None:
        if not float(lr) > 0:
            raise ValueError(f"Trainer.set_learning_rate: lr={lr!r}; expected a number > 0")
        self._lr = self._updater.lr = float(lr)

    def _trained(self) -> list[Parameter]:
        return [p for p in self._params if p.grad_req != "null"]

    def _live(self, ignore_stale_grad: bool) -> list[Parameter]:
        """The parameters to update: those whose gradient a backward wrote on every device since the
        last step. A stale one raises MXNet's ``UserWarning`` (an exception, as MXNet raises it), or
        with ``ignore_stale_grad=True`` is skipped on every device -- its copies stay equal, and a
        stale gradient is never applied. Once the updates are pushed, every gradient is stale again."""
        live = []
        for p in self._trained():
            arrays = p.list_data()
            stale = [a.device for a in arrays if a._ag is None or not a._ag.fresh]
            if stale and not ignore_stale_grad:
                raise UserWarning(
                    f"Gradient of Parameter {p.name!r} on context {stale[0]} has not been updated by backward "
                    f"since the last step. This could mean a bug in your model that made it only use a subset "
                    f"of the Parameters (Blocks) for this iteration. If you are intentionally only using a "
                    f"subset, call step with ignore_stale_grad=True to skip updating the Parameters with a "
                    f"stale gradient"
                )
            if not stale:
                live.append(p)
        return live

    def _used(self) -> None:
        """Every gradient is stale again: called last in the group that pushed the updates (a Ctrl-C
        is raised after it, so a step that pushed its updates never leaves them fresh for a retry)."""
        for p in self._trained():
            for a in p.list_data():
                if a._ag is not None:
                    a._ag.fresh = False

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients across its devices, into every device's gradient (pushed)."""
        self._allreduce(self._trained())

    @atomic("Trainer.allreduce_grads()")
    def _allreduce(self, params: list[Parameter]) -> None:
        from autopar.arrays._autograd import no_grad
        from autopar.parallel import allreduce

        with no_grad():
            for p in params:
                grads = p.list_grad()
                if len(grads) > 1:
                    allreduce(grads)

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """Update every copy of every parameter with its (summed) gradient / ``batch_size`` (pushed).

        A parameter whose gradient no backward wrote since the last step raises ``UserWarning``
        (MXNet), or is skipped with ``ignore_stale_grad=True``: never updated with a stale gradient."""
        scale = self._scale(batch_size)
        self._update(self._live(ignore_stale_grad), scale)

    def _scale(self, batch_size: int) -> float:
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, float)) or batch_size <= 0:
            raise ValueError(f"Trainer.step: batch_size={batch_size!r}; expected the number of samples (> 0)")
        return self._rescale / batch_size

    @atomic("Trainer.update()")
    def _update(self, params: list[Parameter], scale: float) -> None:
        from autopar.arrays._autograd import no_grad

        updater = self._updater
        with no_grad():
            updater.begin_step()
            for p in params:
                for device, array in zip(p.list_ctx(), p.list_data()):
                    key = (id(p), device)
                    if key not in self._states:
                        self._states[key] = updater.state(array)
                    updater.update(array, array.grad, self._states[key], scale)
        self._used()

    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """``allreduce_grads()`` then ``update(batch_size)``: returns at once.

        All-or-nothing under Ctrl-C, across devices: the sums and the updates of every copy are
        pushed as one group (``engine/_group.py``), so an interrupt landing meanwhile is raised once
        all are pushed -- never one device updated and another not. A stale gradient (``update``)
        raises before anything is pushed."""
        scale = self._scale(batch_size)
        self._step(self._live(ignore_stale_grad), scale)

    @atomic("Trainer.step()")
    def _step(self, params: list[Parameter], scale: float) -> None:
        self._allreduce(params)
        self._update(params, scale)

    def __repr__(self) -> str:
        return f"Trainer({len(self._params)} parameters, {self._kind}, learning_rate={self._lr:g})"
