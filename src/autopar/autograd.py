"""``autopar.autograd``: gradients in MXNet's spelling (PyTorch's are on the arrays and ``autopar.no_grad``).

    x.attach_grad()
    with autograd.record():
        y = f(x)
    y.backward()          # returns at once: each gradient is its own engine op
    x.grad                # waits only for x's own gradient

How it works -- per-thread modes, the graph torch keeps per op, one engine op
per recorded op in backward, failures, in-place rules: the design note at the
top of ``autopar/arrays/_autograd.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autopar.arrays._autograd import (
    enable_grad,
    is_grad_enabled,
    is_recording,
    is_training,
    no_grad,
    pause,
    predict_mode,
    record,
    train_mode,
)

__all__ = ["backward", "enable_grad", "is_grad_enabled", "is_recording", "is_training", "no_grad", "pause",
           "predict_mode", "record", "train_mode"]  # fmt: skip


def backward(heads: Any, head_grads: Any = None, retain_graph: bool = False, train_mode: bool = True) -> None:
    """MXNet's ``autograd.backward(heads, head_grads)``: backward from several heads at once.

    ``heads`` is an array or a list of them; ``head_grads`` one gradient per
    head (None: ones). Returns at once, like ``y.backward()``.
    """
    from autopar.arrays._backward import backward as push_backward

    many = isinstance(heads, (list, tuple))
    hs: Sequence[Any] = heads if many else [heads]
    if head_grads is None:
        gs: Sequence[Any] = [None] * len(hs)
    else:
        gs = head_grads if isinstance(head_grads, (list, tuple)) else [head_grads]
    push_backward(hs, gs, retain_graph, what="autograd.backward")
