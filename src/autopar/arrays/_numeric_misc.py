"""NumPy's remaining numeric helpers: ``unwrap``, ``sort_complex``, ``real_if_close``,
``asarray_chkfinite``, ``asfortranarray``, ``isfortran``, ``require``, ``spacing``, ``bitwise_count``,
``packbits``, ``unpackbits``, ``einsum_path``.

``unwrap`` follows NumPy's steps (the jumps reduced modulo the period, the
corrections summed cumulatively). ``real_if_close`` and ``asarray_chkfinite``
answer from the values, so they read them (wait). autopar arrays are
C-ordered: ``asfortranarray`` and ``require`` give an autopar array and
``isfortran`` is False. ``einsum_path`` is NumPy's own answer for the
operands' shapes (it looks at nothing else).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from autopar.arrays import _dtypes
from autopar.arrays import _manipulation as man
from autopar.arrays._dispatch import bind
from autopar.arrays._elementwise import call
from autopar.arrays._table import TABLE, define, fixed


def unwrap(p: Any, discont: Any = None, axis: int = -1, *, period: float = 2 * math.pi) -> Any:
    """Unwrap a phase: jumps larger than ``discont`` (default ``period / 2``) become their ``period`` complement."""
    from autopar.arrays._numpy import diff
    from autopar.arrays._reductions import cumsum
    from autopar.arrays._searching import where

    x = man._array_like(p)
    ax = man.normalize_axis("unwrap", axis, x.ndim)
    integral = x.dtype.kind in "iu" and isinstance(period, int) and not isinstance(period, bool)
    if x.dtype.kind not in "fc" and not integral:
        x = x.astype(_dtypes.default_float())
    dd = diff(x, axis=ax)
    if discont is None:
        discont = period / 2
    if integral:  # NumPy's integer path: the interval (-period//2, period//2], ambiguous only for even periods
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    ddmod = call("remainder", dd - low, period) + low
    if ambiguous:
        ddmod = where(call("logical_and", call("equal", ddmod, low), call("greater", dd, 0)), high, ddmod)
    correct = where(call("less", call("abs", dd), discont), 0, ddmod - dd)
    head = x[(slice(None),) * ax + (slice(0, 1),)]
    rest = x[(slice(None),) * ax + (slice(1, None),)] + cumsum(correct, axis=ax)
    return man.concat([head, rest.astype(x.dtype)], axis=ax)


def sort_complex(a: Any) -> Any:
    """Sorted by real part, then imaginary part; always complex (NumPy's)."""
    from autopar.arrays._indexing import take
    from autopar.arrays._keys import lexsort

    x = man.reshape(man._array_like(a), (-1,)) if man._array_like(a).ndim != 1 else man._array_like(a)
    target = _dtypes.complex128 if x.dtype.kind not in "fc" or x.dtype.name in ("float64", "complex128") else _dtypes.complex64
    z = x.astype(target)
    return take(z, lexsort([call("imag", z), call("real", z)]))


def real_if_close(a: Any, tol: float = 100) -> Any:
    """The real part when every imaginary part is within ``tol`` machine epsilons of 0 (reads: waits)."""
    from autopar.arrays._reductions import all as all_

    x = man._array_like(a)
    if x.dtype.kind != "c":
        return x
    limit = tol * float(np.finfo(np.dtype(x.dtype.name)).eps) if tol > 1 else tol
    if bool(all_(call("less", call("abs", call("imag", x)), limit)).item()):
        return call("real", x)
    return x


def asarray_chkfinite(a: Any, dtype: Any = None, order: Any = None) -> Any:
    """``asarray``, raising ValueError if any value is inf or NaN (reads: waits)."""
    from autopar.arrays._creation import asarray
    from autopar.arrays._reductions import all as all_

    x = asarray(a, dtype=dtype)
    if x.dtype.kind in "fc" and not bool(all_(call("isfinite", x)).item()):
        raise ValueError("asarray_chkfinite: array must not contain infs or NaNs")
    return x


def asfortranarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    """An autopar array of ``a`` (autopar arrays are C-ordered: the values are what matter)."""
    from autopar.arrays._creation import asarray

    return asarray(a, dtype=dtype)


def isfortran(a: Any) -> bool:
    """False: autopar arrays are stored in C order."""
    return False


def require(a: Any, dtype: Any = None, requirements: Any = None, *, like: Any = None) -> Any:
    """An autopar array of ``a`` (with ``dtype``); every requirement (C order, aligned, writeable, owning
    its data with ``'O'``) is met by a copy or already."""
    from autopar.arrays._creation import asarray

    reqs = {r.upper()[0] for r in (requirements or [])} if not isinstance(requirements, str) else {requirements.upper()[0]}
    x = asarray(a, dtype=dtype)
    return x.copy() if "O" in reqs or "E" in reqs else x


def spacing(x: Any) -> Any:
    """The distance from ``x`` to the next float away from zero (``spacing(1.0)`` is eps)."""
    a = man._array_like(x)
    if a.dtype.kind not in "f":
        a = a.astype(_dtypes.default_float())
    return call("nextafter", a, call("copysign", math.inf, a)) - a


def _popcount(t: torch.Tensor) -> torch.Tensor:
    v = t.to(torch.int64)
    if t.dtype.is_signed:
        v = v.abs()  # NumPy counts the bits of the magnitude
    v = v - ((v >> 1) & 0x5555555555555555)
    v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
    v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((v * 0x0101010101010101) >> 56).to(torch.uint8) & 0xFF


define("bitwise_count", _popcount, fixed(_dtypes.uint8, "integer"), shape=lambda op, sh, s: (sh[0],),
       differentiable=False, kernel_dtype="exact")  # fmt: skip


def bitwise_count(x: Any) -> Any:
    """The number of 1 bits in each integer's magnitude (uint8)."""
    return bind(TABLE["bitwise_count"], (man._array_like(x),))


def _bits_axis(name: str, x: Any, axis: Any, bitorder: str) -> tuple[Any, int]:
    """``x`` and the axis ``name`` packs or unpacks along (``x`` flattened when ``axis`` is None)."""
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder={bitorder!r}; expected 'big' or 'little'")
    if axis is None:
        return man.reshape(x, (-1,)), 0
    return x, man.normalize_axis(name, axis, x.ndim)


def unpackbits(a: Any, /, axis: Any = None, count: Any = None, bitorder: str = "big") -> Any:
    """Each uint8 as 8 bits (``bitorder='big'``: the most significant first) along ``axis`` (flattened if None)."""
    from autopar.arrays._creation import arange

    x = man._array_like(a)
    if x.dtype.name != "uint8":
        raise TypeError(f"unpackbits: a holds {x.dtype}; expected uint8")
    x, ax = _bits_axis("unpackbits", x, axis, bitorder)
    shifts = arange(7, -1, -1, device=x.device) if bitorder == "big" else arange(8, device=x.device)
    moved = man.moveaxis(x, ax, -1)
    bits = call("bitwise_and", call("bitwise_right_shift", man.expand_dims(moved.astype("int64"), axis=-1), shifts), 1)
    bits = man.reshape(bits, moved.shape[:-1] + (moved.shape[-1] * 8,)).astype("uint8")
    if count is not None:
        from autopar.arrays._creation import zeros

        n = moved.shape[-1] * 8
        c = int(count) if int(count) >= 0 else max(n + int(count), 0)
        if c <= n:
            bits = bits[..., :c]
        else:
            bits = man.concat([bits, zeros(bits.shape[:-1] + (c - n,), dtype="uint8", device=x.device)], axis=-1)
    return man.moveaxis(bits, -1, ax)


def packbits(a: Any, /, axis: Any = None, bitorder: str = "big") -> Any:
    """Groups of 8 truthy/falsy values along ``axis`` (flattened if None) as uint8 (zero-padded at the end)."""
    from autopar.arrays._creation import arange, zeros
    from autopar.arrays._reductions import sum as sum_

    x = man._array_like(a)
    if x.dtype.kind not in "biu":
        raise TypeError(f"packbits: a holds {x.dtype}; expected integers or booleans")
    x, ax = _bits_axis("packbits", x, axis, bitorder)
    moved = man.moveaxis(call("not_equal", x, 0).astype("int64"), ax, -1)
    n = moved.shape[-1]
    pad = (-n) % 8
    if pad:
        moved = man.concat([moved, zeros(moved.shape[:-1] + (pad,), dtype="int64", device=x.device)], axis=-1)
    groups = man.reshape(moved, moved.shape[:-1] + ((n + pad) // 8, 8))
    weights = call("bitwise_left_shift", 1, arange(7, -1, -1, device=x.device) if bitorder == "big" else arange(8, device=x.device))
    packed = sum_(groups * weights, axis=-1).astype("uint8")
    return man.moveaxis(packed, -1, ax)


def einsum_path(*operands: Any, optimize: Any = "greedy", einsum_call: bool = False) -> Any:
    """NumPy's contraction path for operands of these shapes (autopar's einsum lets torch choose its own)."""
    subscripts, arrays = operands[0], operands[1:]
    if not isinstance(subscripts, str):
        raise TypeError("einsum_path: give the subscripts string first (einsum_path('ij,jk->ik', a, b))")
    shapes = [np.empty(man._array_like(op).shape, dtype=np.float64) for op in arrays]
    return np.einsum_path(subscripts, *shapes, optimize=optimize, einsum_call=einsum_call)  # type: ignore[arg-type]
