"""NumPy's names beyond the standard: aliases, and functions composed from table entries.

NumPy's top-level namespace is the checklist; docs/arrays.md lists what is
here and what is left out, and why. Most names are aliases (``absolute``,
``concatenate``, ``power``) or short compositions of ops that already are in
the table (``hstack``, ``isclose``, ``median``); a few are entries of their
own (``diff``, ``quantile``, ``nan_to_num``, ``cov``). Functions that answer
with a Python value (``allclose``, ``array_equal``) read it, so they wait.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from autopar.arrays import _creation as cr
from autopar.arrays import _dtypes
from autopar.arrays import _manipulation as man
from autopar.arrays import _reductions as red
from autopar.arrays._dispatch import bind
from autopar.arrays._elementwise import FUNCTIONS as EW
from autopar.arrays._elementwise import call
from autopar.arrays._table import TABLE, define, floating, same

define("diff", lambda t, n, axis: torch.diff(t, n=n, dim=axis), same("any"))
define("quantile", lambda t, q, axis, keepdims, method: torch.quantile(t, torch.tensor(q, dtype=t.dtype, device=t.device),
       dim=axis, keepdim=keepdims, interpolation=method), floating("real numeric"))  # fmt: skip
define("nan_to_num", lambda t, nan, posinf, neginf: torch.nan_to_num(t, nan=nan, posinf=posinf, neginf=neginf), same())
define("cov", lambda t, ddof: torch.cov(t, correction=ddof), floating("numeric"))
define("corrcoef", lambda t: torch.corrcoef(t), floating("numeric"))
define("rot90", lambda t, k, axes: torch.rot90(t, k, list(axes)), same(), compute=False)
define("angle", lambda t: torch.angle(t), floating("numeric"))
define("i0", lambda t: torch.special.i0(t), floating("real numeric"))
define("trapezoid", lambda y, dx, axis: torch.trapezoid(y, dx=dx, dim=axis), floating("real numeric"))

absolute, fabs = EW["abs"], EW["abs"]
arccos, arccosh, arcsin, arcsinh = EW["acos"], EW["acosh"], EW["asin"], EW["asinh"]
arctan, arctan2, arctanh = EW["atan"], EW["atan2"], EW["atanh"]
bitwise_not = invert = EW["bitwise_invert"]
left_shift, right_shift = EW["bitwise_left_shift"], EW["bitwise_right_shift"]
conjugate = EW["conj"]
degrees, radians = EW["rad2deg"], EW["deg2rad"]
mod = EW["remainder"]
power = EW["pow"]
true_divide = EW["divide"]
rint = EW["round"]
fix = EW["trunc"]
concatenate = man.concat
amax, amin = red.max, red.min
int_ = intp = _dtypes.int64
uint = _dtypes.uint64


def around(a: Any, decimals: int = 0) -> Any:
    return man._array_like(a).round(decimals)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
    a, b = man._array_like(a), man._array_like(b)
    close = call("less_equal", call("abs", a - b), atol + rtol * call("abs", b))
    close = call("logical_or", close, a == b)  # equal infinities
    if equal_nan:
        close = call("logical_or", close, call("logical_and", call("isnan", a), call("isnan", b)))
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element is close (reads the value: waits)."""
    return bool(red.all(isclose(a, b, rtol, atol, equal_nan)).item())


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    a, b = man._array_like(a1), man._array_like(a2)
    if a.shape != b.shape:
        return False
    same_ = a == b
    if equal_nan:
        same_ = call("logical_or", same_, call("logical_and", call("isnan", a), call("isnan", b)))
    return bool(red.all(same_).item())


def array_equiv(a1: Any, a2: Any) -> bool:
    try:
        return bool(red.all(man._array_like(a1) == man._array_like(a2)).item())
    except ValueError:
        return False


def average(a: Any, axis: Any = None, weights: Any = None, keepdims: bool = False) -> Any:
    a = man._array_like(a)
    if weights is None:
        return red.mean(a, axis=axis, keepdims=keepdims)
    w = man._array_like(weights)
    if w.shape != a.shape and axis is not None and w.ndim == 1:
        shape = [1] * a.ndim
        shape[man.normalize_axis("average", axis, a.ndim)] = w.shape[0]
        w = man.reshape(w, tuple(shape))
    return red.sum(a * w, axis=axis, keepdims=keepdims) / red.sum(man.broadcast_to(w, a.shape) if w.shape != a.shape
                                                                   else w, axis=axis, keepdims=keepdims)  # fmt: skip


_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile(a: Any, q: Any, axis: Any = None, keepdims: bool = False, method: str = "linear") -> Any:
    a = man._array_like(a)
    if method not in _METHODS:
        raise ValueError(f"quantile: method={method!r}; expected one of {', '.join(_METHODS)}")
    qs = tuple(float(v) for v in np.atleast_1d(np.asarray(q, dtype=float)).ravel())
    if any(not 0 <= v <= 1 for v in qs):
        raise ValueError(f"quantile: q={q!r} must be within [0, 1]")
    if axis is None:
        a, axis = man.reshape(a, (-1,)), 0
    else:
        axis = man.normalize_axis("quantile", axis, a.ndim)
    out = bind(TABLE["quantile"], (a,), {"q": qs, "axis": axis, "keepdims": bool(keepdims), "method": method})
    return out[0] if np.ndim(q) == 0 else out


def percentile(a: Any, q: Any, axis: Any = None, keepdims: bool = False, method: str = "linear") -> Any:
    return quantile(a, np.asarray(q, dtype=float) / 100.0, axis=axis, keepdims=keepdims, method=method)


def median(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return quantile(a, 0.5, axis=axis, keepdims=keepdims)


def _nan_fill(a: Any, value: float) -> Any:
    a = man._array_like(a)
    return a if a.dtype.kind not in "fc" else cr_where(call("isnan", a), value, a)


def cr_where(cond: Any, x: Any, y: Any) -> Any:
    from autopar.arrays._searching import where

    return where(cond, x, y)


def nanmax(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return red.max(_nan_fill(a, -math.inf), axis=axis, keepdims=keepdims)


def nanmin(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return red.min(_nan_fill(a, math.inf), axis=axis, keepdims=keepdims)


def nanprod(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return red.prod(_nan_fill(a, 1.0), axis=axis, keepdims=keepdims)


def nanmean(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    a = man._array_like(a)
    present = call("logical_not", call("isnan", a))
    return red.sum(_nan_fill(a, 0.0), axis=axis, keepdims=keepdims) / red.sum(present, axis=axis, keepdims=keepdims)


def nanvar(a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    a = man._array_like(a)
    present = call("logical_not", call("isnan", a))
    centered = _nan_fill(a - nanmean(a, axis=axis, keepdims=True), 0.0)
    count = red.sum(present, axis=axis, keepdims=keepdims)
    return red.sum(centered * centered, axis=axis, keepdims=keepdims) / (count - ddof)


def nanstd(a: Any, axis: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
    return call("sqrt", nanvar(a, axis=axis, ddof=ddof, keepdims=keepdims))


def nanargmax(a: Any, axis: Any = None) -> Any:
    return red.argmax(_nan_fill(a, -math.inf), axis=axis)


def nanargmin(a: Any, axis: Any = None) -> Any:
    return red.argmin(_nan_fill(a, math.inf), axis=axis)


def nancumsum(a: Any, axis: Any = None) -> Any:
    return red.cumsum(_nan_fill(a, 0.0), axis=axis)


def nancumprod(a: Any, axis: Any = None) -> Any:
    return red.cumprod(_nan_fill(a, 1.0), axis=axis)


def nanmedian(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Median ignoring NaNs (reads the array: waits)."""
    values = man._array_like(a).numpy()
    return cr.asarray(np.nanmedian(values, axis=axis, keepdims=keepdims))


def ptp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return red.max(a, axis=axis, keepdims=keepdims) - red.min(a, axis=axis, keepdims=keepdims)


def diff(a: Any, n: int = 1, axis: int = -1) -> Any:
    a = man._array_like(a)
    return bind(TABLE["diff"], (a,), {"n": int(n), "axis": man.normalize_axis("diff", axis, a.ndim)})


def ediff1d(a: Any) -> Any:
    return diff(man.reshape(man._array_like(a), (-1,)))


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Any:
    return bind(TABLE["nan_to_num"], (man._array_like(x),), {"nan": nan, "posinf": posinf, "neginf": neginf})


def cov(m: Any, rowvar: bool = True, bias: bool = False, ddof: Any = None) -> Any:
    m = man._array_like(m)
    if not rowvar:
        m = man.transpose(m)
    return bind(TABLE["cov"], (m,), {"ddof": int(ddof if ddof is not None else (0 if bias else 1))})


def corrcoef(x: Any, rowvar: bool = True) -> Any:
    x = man._array_like(x)
    return bind(TABLE["corrcoef"], (x if rowvar else man.transpose(x),))


def rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    m = man._array_like(m)
    return bind(TABLE["rot90"], (m,), {"k": int(k), "axes": tuple(man.normalize_axis("rot90", a, m.ndim) for a in axes)})


def angle(z: Any, deg: bool = False) -> Any:
    out = bind(TABLE["angle"], (man._array_like(z),))
    return out * (180.0 / math.pi) if deg else out


def i0(x: Any) -> Any:
    return bind(TABLE["i0"], (man._array_like(x),))


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    if x is not None:
        raise ValueError("trapezoid: x= is not supported; pass the spacing as dx=")
    y = man._array_like(y)
    return bind(TABLE["trapezoid"], (y,), {"dx": float(dx), "axis": man.normalize_axis("trapezoid", axis, y.ndim)})


def atleast_1d(*arys: Any) -> Any:
    out = [man._array_like(a) if man._array_like(a).ndim >= 1 else man.reshape(man._array_like(a), (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys: Any) -> Any:
    out = []
    for a in arys:
        a = man._array_like(a)
        out.append(a if a.ndim >= 2 else man.reshape(a, (1, -1) if a.ndim else (1, 1)))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys: Any) -> Any:
    out = []
    for a in arys:
        a = man._array_like(a)
        if a.ndim == 0:
            a = man.reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = man.reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = man.expand_dims(a, axis=2)
        out.append(a)
    return out[0] if len(out) == 1 else out


def hstack(tup: Any) -> Any:
    arrs = atleast_1d(*tup) if len(tup) > 1 else [atleast_1d(*tup)]
    return man.concat(list(arrs), axis=0 if arrs[0].ndim == 1 else 1)


def vstack(tup: Any) -> Any:
    arrs = atleast_2d(*tup) if len(tup) > 1 else [atleast_2d(*tup)]
    return man.concat(list(arrs), axis=0)


row_stack = vstack


def dstack(tup: Any) -> Any:
    arrs = atleast_3d(*tup) if len(tup) > 1 else [atleast_3d(*tup)]
    return man.concat(list(arrs), axis=2)


def column_stack(tup: Any) -> Any:
    cols = [man._array_like(a) for a in tup]
    cols = [man.reshape(c, (-1, 1)) if c.ndim < 2 else c for c in cols]
    return man.concat(cols, axis=1)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    a = man._array_like(ary)
    axis = man.normalize_axis("array_split", axis, a.ndim)
    n = a.shape[axis]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise ValueError("array_split: the number of sections must be > 0")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = np.cumsum([0, *sizes]).tolist()
    else:
        bounds = [0, *[min(int(i), n) for i in indices_or_sections], n]
    pre = (slice(None),) * axis
    return [a[(*pre, slice(lo, max(lo, hi)))] for lo, hi in zip(bounds[:-1], bounds[1:])]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    a = man._array_like(ary)
    if isinstance(indices_or_sections, int) and a.shape[man.normalize_axis("split", axis, a.ndim)] % indices_or_sections:
        raise ValueError(f"split: an axis of size {a.shape[axis]} does not split into {indices_or_sections} equal parts; "
                         f"use array_split")  # fmt: skip
    return array_split(a, indices_or_sections, axis)


def hsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    a = man._array_like(ary)
    return split(a, indices_or_sections, axis=0 if a.ndim == 1 else 1)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    return split(ary, indices_or_sections, axis=2)


def fliplr(m: Any) -> Any:
    return man.flip(m, axis=1)


def flipud(m: Any) -> Any:
    return man.flip(m, axis=0)


def append(arr: Any, values: Any, axis: Any = None) -> Any:
    a, v = man._array_like(arr), man._array_like(values)
    if axis is None:
        return man.concat([man.reshape(a, (-1,)), man.reshape(v, (-1,))])
    return man.concat([a, v], axis=axis)


def diag(v: Any, k: int = 0) -> Any:
    v = man._array_like(v)
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        out = cr.zeros((n, n), dtype=v.dtype, device=v.device)
        rows = np.arange(v.shape[0]) + max(-k, 0)
        out[rows, rows + k] = v
        return out
    if v.ndim == 2:
        from autopar.arrays._products import diagonal_np

        return diagonal_np(v, offset=k)
    raise ValueError(f"diag: expects a 1-D or 2-D array; got shape {v.shape}")


def diagflat(v: Any, k: int = 0) -> Any:
    return diag(man.reshape(man._array_like(v), (-1,)), k)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:  # noqa: N803 - NumPy's names
    return cr.tril(cr.ones((N, N if M is None else M), dtype=dtype or _dtypes.DEFAULT_FLOAT), k=k)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    rows, cols = np.tril_indices(n, k, m)
    return cr.asarray(rows), cr.asarray(cols)


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    rows, cols = np.triu_indices(n, k, m)
    return cr.asarray(rows), cr.asarray(cols)


def indices(dimensions: Any, dtype: Any = None) -> Any:
    return cr.asarray(np.indices(tuple(dimensions)), dtype=dtype or _dtypes.int64)


def fill_diagonal(a: Any, val: Any) -> None:
    n = min(a.shape)
    idx = np.arange(n)
    a[(idx,) * a.ndim] = val


def logspace(start: float, stop: float, num: int = 50, endpoint: bool = True, base: float = 10.0, dtype: Any = None) -> Any:
    out = call("pow", float(base), cr.linspace(start, stop, num, endpoint=endpoint, dtype="float64"))
    return out.astype(dtype or _dtypes.DEFAULT_FLOAT)


def geomspace(start: float, stop: float, num: int = 50, endpoint: bool = True, dtype: Any = None) -> Any:
    if start == 0 or stop == 0 or (start < 0) != (stop < 0):
        raise ValueError("geomspace: start and stop must be non-zero and of the same sign")
    sign = -1.0 if start < 0 else 1.0
    out = logspace(math.log10(abs(start)), math.log10(abs(stop)), num, endpoint, dtype="float64") * sign
    return out.astype(dtype or _dtypes.DEFAULT_FLOAT)


def divmod_(x1: Any, x2: Any) -> tuple[Any, Any]:
    return call("floor_divide", x1, x2), call("remainder", x1, x2)


def modf(x: Any) -> tuple[Any, Any]:
    whole = call("trunc", x)
    return man._array_like(x) - whole, whole


def isreal(x: Any) -> Any:
    x = man._array_like(x)
    return call("equal", call("imag", x), 0) if x.dtype.kind == "c" else cr.ones(x.shape, dtype="bool", device=x.device)


def iscomplex(x: Any) -> Any:
    return call("logical_not", isreal(x))


def isrealobj(x: Any) -> bool:
    return man._array_like(x).dtype.kind != "c"


def iscomplexobj(x: Any) -> bool:
    return man._array_like(x).dtype.kind == "c"


def isposinf(x: Any) -> Any:
    x = man._array_like(x)
    return call("logical_and", call("isinf", x), call("greater", x, 0))


def isneginf(x: Any) -> Any:
    x = man._array_like(x)
    return call("logical_and", call("isinf", x), call("less", x, 0))


def isscalar(element: Any) -> bool:
    return bool(np.isscalar(element))


def ndim(a: Any) -> int:
    return int(man._array_like(a).ndim)


def shape(a: Any) -> tuple[int, ...]:
    return tuple(man._array_like(a).shape)


def size(a: Any, axis: int | None = None) -> int:
    a = man._array_like(a)
    return int(a.size if axis is None else a.shape[axis])


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    from autopar.arrays._elementwise import broadcast_shapes as rule

    return rule("broadcast_shapes", tuple(tuple(s) if not isinstance(s, int) else (s,) for s in shapes))


def copyto(dst: Any, src: Any) -> None:
    """NumPy's ``copyto(dst, src)``: write ``src`` (broadcast) into ``dst``."""
    dst[...] = src


def may_share_memory(a: Any, b: Any) -> bool:
    return getattr(a, "_storage", None) is not None and a._storage is getattr(b, "_storage", None)


shares_memory = may_share_memory


def partition(a: Any, kth: Any, axis: int = -1) -> Any:
    """A valid partition: the array sorted along ``axis`` (NumPy's result for any ``kth``)."""
    from autopar.arrays._searching import sort

    return sort(a, axis=axis)


def argpartition(a: Any, kth: Any, axis: int = -1) -> Any:
    from autopar.arrays._searching import argsort

    return argsort(a, axis=axis)


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    out = default
    for cond, choice in reversed(list(zip(condlist, choicelist))):
        out = cr_where(cond, choice, out)
    return out


def extract(condition: Any, arr: Any) -> Any:
    a = man.reshape(man._array_like(arr), (-1,))
    return a[man.reshape(man._array_like(condition), (-1,)) != 0]


def compress(condition: Any, a: Any, axis: Any = None) -> Any:
    a = man._array_like(a)
    cond = cr.asarray(condition, dtype="bool")
    if axis is None:
        return man.reshape(a, (-1,))[cond]
    return a[(slice(None),) * man.normalize_axis("compress", axis, a.ndim) + (cond,)]


def digitize(x: Any, bins: Any, right: bool = False) -> Any:
    from autopar.arrays._searching import searchsorted

    return searchsorted(bins, x, side="left" if right else "right")


def unravel_index(indices_: Any, shape_: Any) -> tuple[Any, ...]:
    idx = man._array_like(indices_)
    out = []
    for n in reversed(tuple(shape_)):
        out.append(call("remainder", idx, n))
        idx = call("floor_divide", idx, n)
    return tuple(reversed(out))


def ravel_multi_index(multi_index: Any, dims: Any) -> Any:
    total: Any = 0
    for i, n in zip(multi_index, dims):
        total = total * n + man._array_like(i)
    return total


def _set_op(fn: Any) -> Any:
    def op(ar1: Any, ar2: Any) -> Any:
        from autopar.arrays._searching import isin, unique_values

        a, b = unique_values(man.reshape(man._array_like(ar1), (-1,))), unique_values(
            man.reshape(man._array_like(ar2), (-1,)))  # fmt: skip
        return fn(a, b, isin, unique_values)

    return op


intersect1d = _set_op(lambda a, b, isin, uv: a[isin(a, b)])
union1d = _set_op(lambda a, b, isin, uv: uv(man.concat([a, b])))
setdiff1d = _set_op(lambda a, b, isin, uv: a[isin(a, b, invert=True)])
setxor1d = _set_op(lambda a, b, isin, uv: uv(man.concat([a[isin(a, b, invert=True)], b[isin(b, a, invert=True)]])))


def vdot(a: Any, b: Any) -> Any:
    from autopar.arrays._products import vecdot

    return vecdot(man.reshape(man._array_like(a), (-1,)), man.reshape(man._array_like(b), (-1,)))


def asanyarray(a: Any, dtype: Any = None) -> Any:
    return cr.asarray(a, dtype=dtype)


ascontiguousarray = asanyarray

define("bincount", lambda t, minlength: torch.bincount(t, minlength=minlength), same("integer"), data_dependent=True,
       differentiable=False)  # fmt: skip
define("frexp", lambda t: tuple(torch.frexp(t)), lambda op, d, s: ((d[0], _dtypes.int32), None), nout=2,
       differentiable=False)  # fmt: skip
define("nanquantile", lambda t, q, axis, keepdims: torch.nanquantile(t, torch.tensor(q, dtype=t.dtype, device=t.device),
       dim=axis, keepdim=keepdims), floating("real numeric"))  # fmt: skip
define("pad", lambda t, widths, value: torch.nn.functional.pad(t, widths, value=value), same(), compute=False)


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None) -> Any:
    """NumPy's ``trace``: along the first two axes by default (``linalg.trace`` takes the last two)."""
    from autopar.arrays._products import trace as _trace

    return _trace(a, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype)


def copy(a: Any) -> Any:
    return man._array_like(a).copy()


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    a = man._array_like(a)
    axis = man.normalize_axis("rollaxis", axis, a.ndim)
    start = start + a.ndim if start < 0 else start
    return man.moveaxis(a, axis, start - 1 if start > axis else start)


def matvec(x1: Any, x2: Any) -> Any:
    return man.squeeze(man._array_like(x1) @ man.expand_dims(man._array_like(x2), axis=-1), axis=-1)


def vecmat(x1: Any, x2: Any) -> Any:
    return man.squeeze(man.expand_dims(call("conj", x1), axis=-2) @ man._array_like(x2), axis=-2)


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    return tuple(cr.arange(n) for _ in range(ndim))


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    a = man._array_like(arr)
    return diag_indices(a.shape[0], a.ndim)


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    a = man._array_like(arr)
    return tril_indices(a.shape[-2], k, a.shape[-1])


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    a = man._array_like(arr)
    return triu_indices(a.shape[-2], k, a.shape[-1])


def iterable(y: Any) -> bool:
    return bool(np.iterable(y))


def put(a: Any, ind: Any, v: Any) -> None:
    """Write ``v`` at the flat indices ``ind`` of ``a`` (in place)."""
    flat = man.reshape(a, (-1,), copy=False)
    flat[np.asarray(ind) if not isinstance(ind, type(a)) else ind] = v


def delete(arr: Any, obj: Any, axis: Any = None) -> Any:
    a = man._array_like(arr)
    if axis is None:
        a, axis = man.reshape(a, (-1,)), 0
    axis = man.normalize_axis("delete", axis, a.ndim)
    keep = np.ones(a.shape[axis], dtype=bool)
    keep[np.asarray(obj)] = False
    return a[(slice(None),) * axis + (np.nonzero(keep)[0],)]


def bincount(x: Any, minlength: int = 0) -> Any:
    """Counts of each value of a non-negative integer array (its length depends on the data: waits)."""
    return bind(TABLE["bincount"], (man._array_like(x),), {"minlength": int(minlength)})


def frexp(x: Any) -> tuple[Any, Any]:
    return bind(TABLE["frexp"], (man._array_like(x).astype(_dtypes.to_float(man._array_like(x).dtype), copy=False),))


def nanquantile(a: Any, q: Any, axis: Any = None, keepdims: bool = False) -> Any:
    a = man._array_like(a)
    qs = tuple(float(v) for v in np.atleast_1d(np.asarray(q, dtype=float)).ravel())
    if axis is None:
        a, axis = man.reshape(a, (-1,)), 0
    out = bind(TABLE["nanquantile"], (a,), {"q": qs, "axis": man.normalize_axis("nanquantile", axis, a.ndim),
                                            "keepdims": bool(keepdims)})  # fmt: skip
    return out[0] if np.ndim(q) == 0 else out


def nanpercentile(a: Any, q: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return nanquantile(a, np.asarray(q, dtype=float) / 100.0, axis=axis, keepdims=keepdims)


def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    """NumPy's ``pad`` in ``constant`` mode (the other modes are not supported)."""
    if mode != "constant":
        raise ValueError(f"pad: mode={mode!r}; only 'constant' is supported")
    a = man._array_like(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (a.ndim, 2))
    flat: list[int] = []
    for before, after in reversed(widths.tolist()):
        flat += [before, after]
    return bind(TABLE["pad"], (a,), {"widths": tuple(flat), "value": constant_values})


__all__ = [
    'trace', 'copy', 'rollaxis', 'matvec', 'vecmat', 'diag_indices', 'diag_indices_from', 'tril_indices_from',
    'triu_indices_from', 'iterable', 'put', 'delete', 'bincount', 'frexp', 'nanquantile', 'nanpercentile', 'pad',
    'absolute', 'allclose', 'amax', 'amin', 'angle', 'append', 'arccos', 'arccosh', 'arcsin', 'arcsinh',
    'arctan', 'arctan2', 'arctanh', 'argpartition', 'around', 'array_equal', 'array_equiv', 'array_split',
    'asanyarray', 'ascontiguousarray', 'atleast_1d', 'atleast_2d', 'atleast_3d', 'average', 'bitwise_not',
    'broadcast_shapes', 'column_stack', 'compress', 'concatenate', 'conjugate', 'copyto', 'corrcoef', 'cov',
    'degrees', 'diag', 'diagflat', 'diff', 'digitize', 'dsplit', 'dstack', 'ediff1d', 'extract', 'fabs',
    'fill_diagonal', 'fix', 'fliplr', 'flipud', 'geomspace', 'hsplit', 'hstack', 'i0', 'indices', 'int_',
    'intersect1d', 'intp', 'invert', 'isclose', 'iscomplex', 'iscomplexobj', 'isneginf', 'isposinf', 'isreal',
    'isrealobj', 'isscalar', 'left_shift', 'logspace', 'may_share_memory', 'median', 'mod', 'modf',
    'nan_to_num', 'nanargmax', 'nanargmin', 'nancumprod', 'nancumsum', 'nanmax', 'nanmean', 'nanmedian',
    'nanmin', 'nanprod', 'nanstd', 'nanvar', 'ndim', 'partition', 'percentile', 'power', 'ptp', 'quantile',
    'radians', 'ravel_multi_index', 'right_shift', 'rint', 'rot90', 'row_stack', 'select', 'setdiff1d',
    'setxor1d', 'shape', 'shares_memory', 'size', 'split', 'trapezoid', 'tri', 'tril_indices', 'triu_indices',
    'true_divide', 'uint', 'union1d', 'unravel_index', 'vdot', 'vsplit', 'vstack'
]  # fmt: skip
