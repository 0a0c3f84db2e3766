"""Optimizers: each update is pushed as engine ops -- one per parameter (and state array), or one per bucket.

``SGD`` and ``Adam`` follow ``torch.optim``'s formulas (SGD: momentum
without dampening, L2 weight decay added to the gradient; Adam: bias-corrected
moments, L2 weight decay added to the gradient; ``_adam.py``). ``update`` pushes table
entries of ``arrays/_updates.py`` written into the parameter and its state
arrays on the parameter's device (Adam: one op per parameter); it reads the gradient, so it runs the
moment that gradient (summed across devices) is ready. ``scale`` multiplies
the gradient first (``1 / devices`` averages a sum across devices, as DDP
does).

``update_bucket`` updates the parameters of one gradient bucket (their
``.grad`` are views of one flat array, ``_step.py``). Plain SGD does it in
*one* engine op per bucket -- reading the flat gradient, writing every
parameter of the bucket, with torch's ``_foreach`` kernels -- instead of one
per parameter: a data-parallel LeNet step pushes 3 updates per device, not 10,
and at the end of backward the first layers' update is one op after their
sum instead of a queue of small ones. It falls back to one op per parameter
for parameters on GPUs (not measured there yet), on other machines, or that
are views of a larger array, and for a bucket of one parameter (its own op,
the table's ``sgd_update``: the bits ``update`` gives it, whoever pushes it);
momentum and Adam always update per parameter.
``bucket_kernel`` hands plain SGD's bucket update, as a function, to a
caller that runs it inside an op of its own: on CPU devices of one process
the data-parallel step runs every device's update inside the bucket's sum
(``_local.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from autopar.arrays import _updates  # noqa: F401  (the update entries)
from autopar.arrays import _views
from autopar.arrays._array import NDArray
from autopar.arrays._creation import zeros_like
from autopar.arrays._dispatch import bind_into, push
from autopar.arrays._table import TABLE
from autopar.engine import Var


# A bucket's update as one function to run inside an engine op, the vars it reads, the vars it writes.
BucketKernel = tuple[Callable[[], None], tuple[Var, ...], tuple[Var, ...]]


def _positive(op: str, name: str, value: Any, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (not allow_zero and value == 0):
        raise ValueError(f"{op}: {name}={value!r}; expected a number {'>=' if allow_zero else '>'} 0")
    return float(value)


class Optimizer:
    """The interface the data-parallel step uses: ``state``, ``begin_step``, ``update``."""

    def state(self, param: NDArray) -> tuple[NDArray, ...]:
        """The state arrays one parameter needs (zeros, on its device)."""
        return ()

    def begin_step(self) -> None:
        """Called once per step, before the updates of that step."""

    def update(self, param: NDArray, grad: NDArray, state: tuple[NDArray, ...], scale: float = 1.0) -> None:
        raise NotImplementedError

    def update_bucket(self, params: Sequence[NDArray], flat_grad: NDArray, states: Sequence[tuple[NDArray, ...]],
                      scale: float = 1.0) -> None:  # fmt: skip
        """Update ``params``, whose ``.grad`` are consecutive views of ``flat_grad`` (one bucket)."""
        for param, state in zip(params, states):
            self.update(param, param.grad, state, scale)

    def bucket_kernel(self, params: Sequence[NDArray], flat_grad: NDArray, states: Sequence[tuple[NDArray, ...]],
                      scale: float = 1.0) -> BucketKernel | None:  # fmt: skip
        """``update_bucket`` as one function on this process's tensors, with the vars it reads and
        writes -- for a caller that runs it inside an op of its own -- or None where it is not one."""
        return None


class SGD(Optimizer):
    """``w -= lr * d``, ``d = g * scale + weight_decay * w`` (with ``momentum``: ``buf = momentum * buf + d``; ``w -= lr * buf``)."""

    def __init__(self, lr: float, momentum: float = 0.0, weight_decay: float = 0.0) -> None:
        self.lr = _positive("sgd", "lr", lr, allow_zero=False)
        self.momentum = _positive("sgd", "momentum", momentum)
        self.weight_decay = _positive("sgd", "weight_decay", weight_decay)

    def __repr__(self) -> str:
        return f"sgd(lr={self.lr:g}, momentum={self.momentum:g}, weight_decay={self.weight_decay:g})"

    def state(self, param: NDArray) -> tuple[NDArray, ...]:
        return (zeros_like(param),) if self.momentum else ()

    def update(self, param: NDArray, grad: NDArray, state: tuple[NDArray, ...], scale: float = 1.0) -> None:
        if not self.momentum:
            bind_into(TABLE["sgd_update"], param, (param, grad, self.lr, self.weight_decay, float(scale)),
                      what="sgd update")  # fmt: skip
            return
        (buf,) = state
        bind_into(TABLE["momentum_update"], buf, (buf, grad, param, self.momentum, self.weight_decay, float(scale)),
                  what="sgd momentum")  # fmt: skip
        bind_into(TABLE["sgd_update"], param, (param, buf, self.lr, 0.0, 1.0), what="sgd update")

    def update_bucket(self, params: Sequence[NDArray], flat_grad: NDArray, states: Sequence[tuple[NDArray, ...]],
                      scale: float = 1.0) -> None:  # fmt: skip
        kernel = self.bucket_kernel(params, flat_grad, states, scale)
        if kernel is None:
            super().update_bucket(params, flat_grad, states, scale)
            return
        run, reads, writes = kernel
        push(run, reads, writes, params[0].device, "sgd update")

    def bucket_kernel(self, params: Sequence[NDArray], flat_grad: NDArray, states: Sequence[tuple[NDArray, ...]],
                      scale: float = 1.0) -> BucketKernel | None:  # fmt: skip
        # One parameter: its own op, the table's sgd_update (captured as a kernel) -- whoever pushes the
        # bucket (update_bucket, or the one-op sum on CPU devices of one process), the bits of update().
        if len(params) < 2:
            return None
        storages = [p._storage for p in params]
        local = params[0].device.kind == "cpu" and not flat_grad._storage.remote and not any(s.remote for s in storages)
        if self.momentum or not local or not all(_views.covers(p._storage, p._view) for p in params):
            return None
        grad_storage, grad_view = flat_grad._storage, flat_grad._view
        shapes = [p.shape for p in params]
        sizes = [p.size for p in params]
        lr, weight_decay, scale = self.lr, self.weight_decay, float(scale)

        # the gradient's tensor and its views, one per parameter, made once per tensor (they cost more than the kernels)
        views: list[Any] = [None, []]

        def run() -> None:  # w -= lr * (g * scale + weight_decay * w), for every parameter of the bucket
            flat = grad_storage.base()
            if flat is not views[0]:
                split = _views.read(flat, grad_view).split(sizes)
                views[:] = flat, [g.view(shape) for g, shape in zip(split, shapes)]
            grads = views[1]
            weights = [s.base() for s in storages]
            if not weight_decay:  # one pass: w += (-lr * scale) * g
                torch._foreach_add_(weights, grads, alpha=-lr * scale)
                return
            steps = torch._foreach_mul(grads, scale) if scale != 1.0 else grads
            steps = torch._foreach_add(steps, weights, alpha=weight_decay)
            torch._foreach_add_(weights, steps, alpha=-lr)

        writes = tuple(s.var for s in storages)
        return run, (grad_storage.var, *writes), writes


def sgd(lr: float, momentum: float = 0.0, weight_decay: float = 0.0) -> SGD:
    """Stochastic gradient descent (``torch.optim.SGD``'s update)."""
    return SGD(lr, momentum, weight_decay)
