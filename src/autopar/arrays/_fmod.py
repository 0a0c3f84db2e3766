"""Exact floating ``fmod`` and NumPy's ``remainder`` on torch's CPU kernels.

Design note. ``fmod(a, b)`` of finite floats with ``b != 0`` is always exact
(C's ``fmod``, NumPy's ``fmod`` and ``remainder``, Python's ``%``): the result
``a - n*b`` is representable in the inputs' format, and never NaN. torch's CPU
kernels for ``fmod`` and ``remainder`` are not: their vector loop calls Sleef's
``fmod``, which returns NaN wherever ``|a / b|`` overflows the dtype
(``2.0**1023 * (1 + 2**-51) % 0.5``, ``3e38 % 1e-3`` in float32). Only the
elements that reach the vector loop are wrong -- from 8 float64 or 16 float32
on an AVX-512 CPU, 4 float64 in the upstream report -- while shorter tensors take libm's
exact ``fmod``, so the same value gives 0.0 alone and NaN in a longer array
(pytorch/pytorch#193753, open as of torch 2.13; ``floor_divide`` had the same
cause, was fixed upstream, and agrees with NumPy).

The repair costs one ``sum`` of each CPU result of two or more elements (NaN
if any element is; ``fmod`` gives no infinities): a NaN from finite operands
with a nonzero divisor is never a correct ``fmod``, so only those lanes are
recomputed, with NumPy's ``fmod`` in float64 (exact, and exact again when cast
back to a narrower float, as the result is representable there). CUDA's kernel
calls the device's ``fmod``, not Sleef, and is left alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch


def fmod(a: Any, b: Any) -> torch.Tensor:
    """``torch.fmod`` with the NaN lanes of its CPU vector loop recomputed exactly."""
    r = torch.fmod(a, b)
    if not r.is_floating_point() or r.device.type != "cpu" or r.numel() < 2 or not math.isnan(r.sum()):
        return r  # one element takes the exact scalar path; a sum is NaN where any element is
    x, y = torch.broadcast_tensors(torch.as_tensor(a).to(r.dtype), torch.as_tensor(b).to(r.dtype))
    wrong = torch.isnan(r) & torch.isfinite(x) & torch.isfinite(y) & (y != 0)
    if not bool(wrong.any()):
        return r  # NaN inputs, an infinite dividend or a zero divisor: NaN is the answer
    exact = np.fmod(x[wrong].detach().double().numpy(), y[wrong].detach().double().numpy())
    return r.masked_scatter(wrong, torch.from_numpy(exact).to(r.dtype))


def float_remainder(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """NumPy's remainder from the exact ``fmod``: the sign of the divisor, as Python's ``%``.

    Not torch's ``remainder``: its ``a - b * floor(a / b)`` overflows for tiny
    divisors, and its CPU vector loop has ``fmod``'s NaNs.
    """
    r = fmod(a, b)
    fix = (r != 0) & ((r < 0) != (b < 0))
    return torch.where(fix, r + b, r)
