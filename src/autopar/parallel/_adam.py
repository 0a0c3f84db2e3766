"""Adam as one engine op per parameter, its step count an array of its state.

Design note
-----------
``torch.optim.Adam`` keeps, per parameter, ``exp_avg``, ``exp_avg_sq`` and
``step`` -- the number of updates that reached the parameter, which the bias
correction uses. Here the step count is a 0-d float64 array of the
parameter's state, ``(exp_avg, exp_avg_sq, step)``, written by the same op
that writes the parameter and the moments. So:

- a failed step fails the step count with the rest of what it would have
  written, and restoring the state (``copyto`` from a snapshot, or
  ``load_state_dict``) restores the count too: a failed step does not count.
  A count kept in Python went on counting, and the next good step's bias
  correction was one step off torch's;
- a parameter's update is *one* engine op -- count, moments, parameter, with
  torch's own kernels (``lerp_``, ``addcmul_``, ``addcdiv``) -- instead of
  three table entries plus a gradient scaling;
- the op on a CPU device reads the count as a Python number (no cost there),
  one on a GPU keeps the bias correction on the device (torch's
  ``capturable`` formulas): no host synchronisation.

A parameter on a cluster node (its storage is remote: no tensor in this
process) is updated by table entries found by name, as the other updates
are: the count, the two moments, then the parameter with the bias correction
computed from the count array (``_update_by_entries``, four ops).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import torch

from autopar.arrays import _updates  # noqa: F401  (count_update, adam_step_update)
from autopar.arrays import _views
from autopar.arrays._array import NDArray
from autopar.arrays._creation import zeros, zeros_like
from autopar.arrays._dispatch import bind_into, push
from autopar.arrays._plan import THREADED_WORK, TINY_WORK
from autopar.arrays._table import TABLE
from autopar.parallel._optim import Optimizer, _positive


def _update(w_storage: Any, w_view: Any, g_storage: Any, g_view: Any, m_storage: Any, v_storage: Any, t_storage: Any,
            b1: float, b2: float, lr: float, eps: float, weight_decay: float, scale: float) -> None:  # fmt: skip
    """The op: count, moments and parameter of one Adam update, torch.optim.Adam's kernels."""
    base = w_storage.base()
    w = _views.read(base, w_view)
    g = _views.read(g_storage.base(), g_view)
    if g.dtype != w.dtype:
        g = g.to(w.dtype)
    if scale != 1.0:
        g = g * scale
    if weight_decay:
        g = g.add(w, alpha=weight_decay)
    m, v, t = m_storage.base(), v_storage.base(), t_storage.base()
    t.add_(1.0)
    m.lerp_(g, 1.0 - b1)
    v.mul_(b2).addcmul_(g, g, value=1.0 - b2)
    whole = w_view is None  # the parameter is its whole storage: updated in place, no copy
    new = stepped(w, m, v, t, lr, b1, b2, eps, on_host=t.device.type == "cpu", inplace=whole)
    if not whole:
        _views.write(base, w_view, new)


def stepped(w: torch.Tensor, m: torch.Tensor, v: torch.Tensor, t: torch.Tensor, lr: float, b1: float, b2: float,
            eps: float, on_host: bool, inplace: bool = False) -> torch.Tensor:  # fmt: skip
    """``w`` after the update from its new moments and count (``inplace``: written into ``w``).
    ``on_host``: torch's default formulas, the count read as a Python number (free on a CPU); else
    torch's ``capturable`` ones, computed on the device from the count tensor (nothing read back:
    no host synchronisation on a GPU)."""
    if on_host:
        n = t.item()
        denom = (v.sqrt() / math.sqrt(1.0 - b2**n)).add_(eps)
        return (w.addcdiv_ if inplace else w.addcdiv)(m, denom, value=-lr / (1.0 - b1**n))
    step_size = (-lr / (1.0 - torch.pow(b1, t))).to(w.dtype)
    root = torch.sqrt(1.0 - torch.pow(b2, t)).to(w.dtype)
    denom = (v.sqrt() / (root * step_size)).add_(eps / step_size)
    return (w.addcdiv_ if inplace else w.addcdiv)(m, denom)


class Adam(Optimizer):
    """torch.optim.Adam's update: bias-corrected first and second moments, a step count per parameter."""

    def __init__(self, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:  # fmt: skip
        self.lr = _positive("adam", "lr", lr, allow_zero=False)
        b1, b2 = betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"adam: betas={betas!r}; each must be in [0, 1)")
        self.betas = (float(b1), float(b2))
        self.eps = _positive("adam", "eps", eps)
        self.weight_decay = _positive("adam", "weight_decay", weight_decay)

    def __repr__(self) -> str:
        return f"adam(lr={self.lr:g}, betas={self.betas}, eps={self.eps:g}, weight_decay={self.weight_decay:g})"

    def state(self, param: NDArray) -> tuple[NDArray, ...]:
        """``(exp_avg, exp_avg_sq, step)``: the moments, and the count of updates so far (0-d float64)."""
        return zeros_like(param), zeros_like(param), zeros((), dtype="float64", device=param.device)

    def update(self, param: NDArray, grad: NDArray, state: tuple[NDArray, ...], scale: float = 1.0) -> None:
        m, v, t = state
        storages = (param._storage, grad._storage, m._storage, v._storage, t._storage)
        if any(s.remote for s in storages) or not all(_views.covers(a._storage, a._view) for a in (m, v, t)):
            self._update_by_entries(param, grad, state, scale)
            return
        b1, b2 = self.betas
        run = partial(_update, param._storage, param._view, grad._storage, grad._view, m._storage, v._storage, t._storage,
                   b1, b2, self.lr, self.eps, self.weight_decay, float(scale))  # fmt: skip
        writes = (param._storage.var, m._storage.var, v._storage.var, t._storage.var)
        # A small one on a CPU is the engine's small op (run now on this thread, or bulked with the
        # next ones): handing each to a worker cost more than the kernels.
        work = 7 * param.size  # reads w, g, m, v; writes w, m, v
        small = work <= TINY_WORK and param.device.kind == "cpu"
        push(run, (grad._storage.var, *writes), writes, param.device, "adam update", inline=small,
             one_thread=small and work > THREADED_WORK)  # fmt: skip

    def _update_by_entries(self, param: NDArray, grad: NDArray, state: tuple[NDArray, ...], scale: float) -> None:
        """The same update as table entries (a parameter on a cluster node, or state arrays that are views)."""
        m, v, t = state
        b1, b2 = self.betas
        if self.weight_decay:
            grad = grad * float(scale) + param * self.weight_decay
            scale = 1.0
        bind_into(TABLE["count_update"], t, (t,), what="adam step count")
        bind_into(TABLE["moment_update"], m, (m, grad, b1, 1.0, float(scale)), what="adam first moment")
        bind_into(TABLE["moment_update"], v, (v, grad, b2, 2.0, float(scale)), what="adam second moment")
        bind_into(TABLE["adam_step_update"], param, (param, m, v, t, self.lr, b1, b2, self.eps), what="adam update")


def adam(lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0) -> Adam:
    """Adam (``torch.optim.Adam``'s update)."""
    return Adam(lr, betas, eps, weight_decay)
