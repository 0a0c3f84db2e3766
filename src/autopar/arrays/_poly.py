"""NumPy's polynomials, interpolation and finite differences: ``vander``, ``polyval``, ``polyfit``,
``interp``, ``gradient`` -- with NumPy's arithmetic, so float64 results match NumPy's.

``vander`` multiplies the powers up one by one (a cumulative product), as
NumPy does; ``polyval`` is Horner's rule, NumPy's loop; ``polyfit`` scales
the Vandermonde columns to unit norm and solves with ``linalg.lstsq`` (which
waits for its result: the rank decides the residuals' shape), NumPy's steps.
``interp`` is one table entry: ``slope * (x - xp[j]) + fp[j]`` on the segment
``xp[j] <= x < xp[j + 1]``, ``fp[-1]`` at ``xp[-1]`` exactly, ``left``/``right``
outside, NumPy's formula. ``gradient`` uses second-order central differences
inside and first- or second-order ones at the edges (``edge_order``), with a
number, or the coordinates, as spacing per axis -- NumPy's formulas; given
coordinates that are an autopar array, it reads them (waits) to see whether
they are evenly spaced, as NumPy decides.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from autopar.arrays import _dtypes
from autopar.arrays import _manipulation as man
from autopar.arrays._dispatch import bind
from autopar.arrays._table import TABLE, define, floating


def _interp(x: torch.Tensor, xp: torch.Tensor, fp: torch.Tensor, left: Any, right: Any) -> torch.Tensor:
    n = xp.shape[0]
    if n == 1:
        out = torch.full_like(x, 0).to(fp.dtype) + fp[0]
    else:
        j = (torch.searchsorted(xp, x.contiguous(), right=True) - 1).clamp(0, n - 2)
        x0, x1, f0, f1 = xp[j], xp[j + 1], fp[j], fp[j + 1]
        slope = (f1 - f0) / (x1 - x0)
        out = slope * (x - x0) + f0
        other = slope * (x - x1) + f1  # NumPy: NaN one way (an infinite slope), try the other
        out = torch.where(torch.isnan(out), torch.where(torch.isnan(other) & (f0 == f1), f0, other), out)
        out = torch.where(x == xp[-1], fp[-1], out)
    out = torch.where(x < xp[0], fp[0] if left is None else torch.tensor(left, dtype=fp.dtype), out)
    out = torch.where(x > xp[-1], fp[-1] if right is None else torch.tensor(right, dtype=fp.dtype), out)
    return torch.where(torch.isnan(x), torch.nan, out) if not out.is_complex() else out


define("interp", _interp, floating("real numeric"), shape=lambda op, sh, s: (sh[0],), differentiable=False)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None, period: Any = None) -> Any:
    """NumPy's 1-D linear interpolation of ``(xp, fp)`` at ``x`` (``xp`` increasing)."""
    if period is not None:
        raise ValueError("interp: period= is not supported; map x into one period first (x % period), "
                         "and extend xp, fp by one period on each side")  # fmt: skip
    x, xp, fp = man._array_like(x), man._array_like(xp), man._array_like(fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.shape != fp.shape or xp.shape[0] == 0:
        raise ValueError(f"interp: xp and fp must be 1-D of the same non-zero length; got shapes {xp.shape} and {fp.shape}")
    for name, v in (("left", left), ("right", right)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise TypeError(f"interp: {name}={v!r}; expected a number or None")
    return bind(TABLE["interp"], (x, xp, fp), {"left": None if left is None else float(left),
                                               "right": None if right is None else float(right)})  # fmt: skip


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:  # noqa: N803 - NumPy's name
    """Columns ``x**(N-1), ..., x, 1`` (``1, x, ...`` with ``increasing``), multiplied up as NumPy does."""
    from autopar.arrays._reductions import cumprod

    x = man._array_like(x)
    if x.ndim != 1:
        raise ValueError(f"vander: x has shape {x.shape}; it must be 1-D")
    n = x.shape[0] if N is None else int(N)
    if n == 0:
        return man.reshape(x, (-1, 1))[:, :0]
    cols = [x * 0 + 1] + [x] * (n - 1)
    powers = cumprod(man.stack(cols, axis=1), axis=1)
    return powers if increasing else man.flip(powers, axis=1)


def polyval(p: Any, x: Any) -> Any:
    """Evaluate the polynomial with coefficients ``p`` (highest power first) at ``x``: Horner's rule."""
    from autopar.arrays._creation import zeros_like

    p, x = man._array_like(p), man._array_like(x)
    if p.ndim != 1:
        raise ValueError(f"polyval: p has shape {p.shape}; give a 1-D sequence of coefficients")
    y = zeros_like(x)
    for i in range(p.shape[0]):
        y = y * x + p[i]
    return y


def polyfit(x: Any, y: Any, deg: int, rcond: Any = None, full: bool = False, w: Any = None, cov: bool = False) -> Any:
    """Least-squares polynomial fit of degree ``deg``: the coefficients, highest power first (waits: lstsq)."""
    from autopar.arrays._linalg_numpy import lstsq

    if cov:
        raise ValueError("polyfit: cov= is not supported; compute it from the fit: "
                         "inv(V.T @ V) * residuals / (len(x) - deg - 1) with V = vander(x, deg + 1)")  # fmt: skip
    x, y = man._array_like(x), man._array_like(y)
    if isinstance(deg, bool) or not isinstance(deg, (int, np.integer)) or deg < 0:
        raise ValueError(f"polyfit: deg={deg!r} must be a non-negative int")
    if x.ndim != 1 or x.shape[0] == 0 or y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise ValueError(f"polyfit: x of shape {x.shape} and y of shape {y.shape}: x must be 1-D, non-empty, "
                         "and y must have as many rows")  # fmt: skip
    order = int(deg) + 1
    f = _dtypes.to_float(x.dtype)
    lhs = vander(x.astype(f) if x.dtype.kind not in "fc" else x, order)
    rhs = y
    if w is not None:
        w = man._array_like(w)
        lhs = lhs * man.reshape(w, (-1, 1))
        rhs = rhs * (w if rhs.ndim == 1 else man.reshape(w, (-1, 1)))
    if rcond is None:
        rcond = x.shape[0] * float(np.finfo(np.dtype(f.name)).eps)
    from autopar.arrays._elementwise import call
    from autopar.arrays._reductions import sum as sum_

    scale = call("sqrt", sum_(lhs * lhs, axis=0))
    c, resids, rank, s = lstsq(lhs / scale, rhs, rcond)
    c = (c.T / scale).T
    return (c, resids, rank, s, rcond) if full else c


def _edge(f: Any, ax: int, i: Any) -> Any:
    return f[(slice(None),) * ax + (i,)]


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: int = 1) -> Any:
    """NumPy's ``gradient``: the derivative of ``f`` along each axis (one array, or a tuple for several axes)."""
    from autopar.arrays._creation import asarray
    from autopar.arrays._manipulation import concat

    f = man._array_like(f)
    if f.dtype.kind not in "fc":
        f = f.astype(_dtypes.float64)
    axes = tuple(range(f.ndim)) if axis is None else man.normalize_axes("gradient", axis, f.ndim)
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order={edge_order!r} must be 1 or 2")
    if len(varargs) == 0:
        spacing: list[Any] = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError(f"gradient: {len(varargs)} spacings for {len(axes)} axes; give one, or one per axis")
    outs = []
    for ax, dx in zip(axes, spacing):
        n = f.shape[ax]
        if n < edge_order + 1:
            raise ValueError(f"gradient: axis {ax} has {n} points; edge_order={edge_order} needs at least {edge_order + 1}")
        if np.ndim(dx) != 0:  # coordinates: their differences, a number when evenly spaced (NumPy's test)
            coords = np.asarray(dx.numpy() if hasattr(dx, "numpy") else dx, dtype=float)
            if coords.shape != (n,):
                raise ValueError(f"gradient: coordinates of shape {coords.shape} for an axis of {n} points")
            diffs = np.diff(coords)
            dx = float(diffs[0]) if (diffs == diffs[0]).all() else diffs
        else:
            dx = float(dx)
        shape = [1] * f.ndim
        shape[ax] = n - 2

        def mid(lo: int, hi: int) -> Any:
            return f[(slice(None),) * ax + (slice(lo, n - hi),)]

        if isinstance(dx, float):
            inner = (mid(2, 0) - mid(0, 2)) / (2.0 * dx)
            if edge_order == 1:
                first = (_edge(f, ax, 1) - _edge(f, ax, 0)) / dx
                last = (_edge(f, ax, -1) - _edge(f, ax, -2)) / dx
            else:
                first = -1.5 / dx * _edge(f, ax, 0) + 2.0 / dx * _edge(f, ax, 1) + -0.5 / dx * _edge(f, ax, 2)
                last = 0.5 / dx * _edge(f, ax, -3) + -2.0 / dx * _edge(f, ax, -2) + 1.5 / dx * _edge(f, ax, -1)
        else:
            d1, d2 = dx[:-1], dx[1:]
            a, b, c = (asarray(v.reshape(shape), dtype=f.dtype, device=f.device) for v in (
                -d2 / (d1 * (d1 + d2)), (d2 - d1) / (d1 * d2), d1 / (d2 * (d1 + d2))))  # fmt: skip
            inner = a * mid(0, 2) + b * mid(1, 1) + c * mid(2, 0)
            if edge_order == 1:
                first = (_edge(f, ax, 1) - _edge(f, ax, 0)) / dx[0]
                last = (_edge(f, ax, -1) - _edge(f, ax, -2)) / dx[-1]
            else:
                e1, e2 = dx[0], dx[1]
                first = (-(2.0 * e1 + e2) / (e1 * (e1 + e2)) * _edge(f, ax, 0) + (e1 + e2) / (e1 * e2) * _edge(f, ax, 1)
                         + -e1 / (e2 * (e1 + e2)) * _edge(f, ax, 2))  # fmt: skip
                e1, e2 = dx[-2], dx[-1]
                last = (e2 / (e1 * (e1 + e2)) * _edge(f, ax, -3) + -(e2 + e1) / (e1 * e2) * _edge(f, ax, -2)
                        + (2.0 * e2 + e1) / (e2 * (e1 + e2)) * _edge(f, ax, -1))  # fmt: skip
        outs.append(concat([man.expand_dims(first, axis=ax), inner, man.expand_dims(last, axis=ax)], axis=ax))
    return outs[0] if len(outs) == 1 else tuple(outs)
