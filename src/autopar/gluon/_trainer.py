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
"""

from __future__ import annotations

from typing import Any

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

    def allreduce_grads(self) -> None:
        """Sum each parameter's gradients across its devices, into every device's gradient (pushed)."""
        from autopar.parallel import allreduce

        for p in self._trained():
            grads = p.list_grad()
            if len(grads) > 1:
                allreduce(grads)

    def update(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """Update every copy of every parameter with its (summed) gradient / ``batch_size`` (pushed)."""
        from autopar.arrays._autograd import no_grad

        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, float)) or batch_size <= 0:
            raise ValueError(f"Trainer.step: batch_size={batch_size!r}; expected the number of samples (> 0)")
        scale = self._rescale / batch_size
        updater = self._updater
        with no_grad():
            updater.begin_step()
            for p in self._trained():
                for device, array in zip(p.list_ctx(), p.list_data()):
                    key = (id(p), device)
                    if key not in self._states:
                        self._states[key] = updater.state(array)
                    updater.update(array, array.grad, self._states[key], scale)

    def step(self, batch_size: int, ignore_stale_grad: bool = False) -> None:
        """``allreduce_grads()`` then ``update(batch_size)``: returns at once."""
        from autopar.arrays._autograd import no_grad

        with no_grad():
            self.allreduce_grads()
        self.update(batch_size, ignore_stale_grad)

    def __repr__(self) -> str:
        return f"Trainer({len(self._params)} parameters, {self._kind}, learning_rate={self._lr:g})"
