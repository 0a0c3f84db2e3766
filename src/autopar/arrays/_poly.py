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
    out = torch.where(x < xp[0], fp[0] if left is None else left, out)
    out = torch.where(x > xp[-1], fp[-1] if right is None else right, out)
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


# -- polynomial arithmetic (coefficients highest power first), NumPy's steps ---------------------------


def _coeffs(op: str, p: Any) -> Any:
    if _is_poly1d(p):
        p = p.coeffs
    a = man._array_like(p)
    if a.ndim == 0:
        a = man.reshape(a, (1,))
    if a.ndim != 1:
        raise ValueError(f"{op}: coefficients must be 1-D; got shape {a.shape}")
    return a


def _padded(a: Any, n: int) -> Any:
    from autopar.arrays._creation import zeros

    return a if a.shape[0] == n else man.concat([zeros(n - a.shape[0], dtype=a.dtype, device=a.device), a])


def _wrap(like: tuple[Any, ...], out: Any) -> Any:
    kind = next((type(p) for p in like if _is_poly1d(p)), None)  # a poly1d in: a poly1d (of its kind) out
    return out if kind is None else kind(out)


def _is_poly1d(p: Any) -> bool:
    """Told by its attributes: ``_poly1d`` imports this module, not the other way round."""
    return hasattr(p, "coeffs") and hasattr(p, "deriv") and not hasattr(p, "_dtype")


def polyadd(a1: Any, a2: Any) -> Any:
    a, b = _coeffs("polyadd", a1), _coeffs("polyadd", a2)
    n = max(a.shape[0], b.shape[0])
    return _wrap((a1, a2), _padded(a, n) + _padded(b, n))


def polysub(a1: Any, a2: Any) -> Any:
    a, b = _coeffs("polysub", a1), _coeffs("polysub", a2)
    n = max(a.shape[0], b.shape[0])
    return _wrap((a1, a2), _padded(a, n) - _padded(b, n))


def polymul(a1: Any, a2: Any) -> Any:
    from autopar.arrays._signal import convolve

    return _wrap((a1, a2), convolve(_coeffs("polymul", a1), _coeffs("polymul", a2)))


def polyder(p: Any, m: int = 1) -> Any:
    """The ``m``-th derivative's coefficients."""
    from autopar.arrays._creation import arange

    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
        raise ValueError(f"polyder: m={m!r} must be a non-negative int (the order of the derivative)")
    a = _coeffs("polyder", p)
    for _ in range(int(m)):
        n = a.shape[0] - 1
        if n <= 0:
            a = a[:1] * 0
            break
        a = a[:-1] * arange(n, 0, -1, device=a.device)
    return _wrap((p,), a)


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The ``m``-th antiderivative's coefficients (integration constants ``k``, 0 by default)."""
    from autopar.arrays._creation import arange, asarray

    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
        raise ValueError(f"polyint: m={m!r} must be a non-negative int (the order of the antiderivative)")
    ks = np.zeros(int(m)) if k is None else np.atleast_1d(np.asarray(k, dtype=float))
    if ks.shape[0] == 1 and m > 1:
        ks = np.repeat(ks, int(m))
    if ks.shape[0] < m:
        raise ValueError(f"polyint: k={k!r} gives {ks.shape[0]} constants for m={m}; give one per integration")
    a = _coeffs("polyint", p)
    for i in range(int(m)):
        n = a.shape[0]
        a = man.concat([a / arange(n, 0, -1, device=a.device), asarray([ks[i]], dtype=_dtypes.to_float(a.dtype),
                                                                        device=a.device)])  # fmt: skip
    return _wrap((p,), a)


def polydiv(u: Any, v: Any) -> tuple[Any, Any]:
    """Quotient and remainder of ``u / v`` (NumPy's long division; trimming the remainder reads it: waits)."""
    from autopar.arrays._creation import zeros

    a, b = _coeffs("polydiv", u) + 0.0, _coeffs("polydiv", v) + 0.0
    m, n = a.shape[0] - 1, b.shape[0] - 1
    scale = 1.0 / b[0]
    q = zeros((max(m - n + 1, 1),), dtype=a.dtype, device=a.device)
    r = a.copy()
    for k in range(0, m - n + 1):
        d = scale * r[k]
        q[k] = d
        r[k : k + n + 1] -= d * b
    while r.shape[0] > 1 and np.isclose(r[0].item(), 0, rtol=1e-14):  # NumPy's allclose(r[0], 0, rtol=1e-14)
        r = r[1:]
    return _wrap((u, v), q), _wrap((u, v), r)


def roots(p: Any) -> Any:
    """The roots of the polynomial (eigenvalues of its companion matrix; reads the coefficients: waits)."""
    from autopar.arrays._creation import asarray, zeros
    from autopar.arrays._linalg_numpy import eigvals

    a = _coeffs("roots", p)
    host = a.numpy().ravel()
    nonzero = np.nonzero(host)[0]
    if len(nonzero) == 0:
        return asarray(np.array([]), device=a.device)
    trailing = len(host) - int(nonzero[-1]) - 1
    a = a[int(nonzero[0]) : int(nonzero[-1]) + 1]
    if a.dtype.kind not in "fc":
        a = a.astype(_dtypes.float64)
    n = a.shape[0]
    if n > 1:
        companion = zeros((n - 1, n - 1), dtype=a.dtype, device=a.device)
        if n > 2:
            companion[1:, :-1] = man.broadcast_to(asarray(np.eye(n - 2), dtype=a.dtype, device=a.device), (n - 2, n - 2))
        companion[0, :] = -a[1:] / a[0]
        found = eigvals(companion)
    else:
        found = asarray(np.array([], dtype=np.dtype(a.dtype.name)), device=a.device)
    if trailing:
        found = man.concat([found, zeros(trailing, dtype=found.dtype, device=found.device)])
    return found


def poly(seq_of_zeros: Any) -> Any:
    """The coefficients of the monic polynomial with these roots (of a square matrix: its eigenvalues').
    Complex roots in conjugate pairs give real coefficients (NumPy's test: reads the roots, waits)."""
    from autopar.arrays._creation import asarray, ones
    from autopar.arrays._linalg_numpy import eigvals
    from autopar.arrays._signal import convolve

    z = man._array_like(seq_of_zeros)
    if z.ndim == 2 and z.shape[0] == z.shape[1] and z.shape[0] != 0:
        z = eigvals(z)
    elif z.ndim == 0:
        z = man.reshape(z, (1,))
    elif z.ndim != 1:
        raise ValueError(f"poly: input must be 1-D or a non-empty square 2-D array; got shape {z.shape}")
    if z.shape[0] == 0:
        return asarray(1.0, device=z.device)
    dt = _dtypes.to_float(z.dtype)
    a = ones(1, dtype=dt, device=z.device)
    for i in range(z.shape[0]):
        a = convolve(a, man.concat([ones(1, dtype=dt, device=z.device), -man.reshape(z[i], (1,)).astype(dt)]))
    if dt.kind == "c":
        host = z.numpy()
        pos = host[host.imag > 0]
        neg = host[host.imag < 0]
        if np.array_equal(np.sort(pos), np.sort(neg.conjugate())):
            from autopar.arrays._elementwise import call

            a = call("real", a)
    return a
