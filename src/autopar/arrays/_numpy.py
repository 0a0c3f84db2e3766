"""NumPy's math and statistics beyond the standard: aliases, and functions composed from table entries.

(Shapes, stacking, splitting and index helpers: ``_numpy_shapes.py``.)

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


def _q_tensor(q: tuple[float, ...], t: torch.Tensor) -> torch.Tensor:
    """``q`` on ``t``'s device, made there: ``torch.tensor(q, device="cuda")`` copies from pageable
    host memory and synchronizes the host with the GPU inside the op. One fill kernel per value."""
    if t.device.type == "cpu":
        return torch.tensor(q, dtype=t.dtype)
    return torch.stack([torch.full((), v, dtype=t.dtype, device=t.device) for v in q])


define("quantile", lambda t, q, axis, keepdims, method: torch.quantile(t, _q_tensor(q, t),
       dim=axis, keepdim=keepdims, interpolation=method), floating("real numeric"))  # fmt: skip


define("nan_to_num", lambda t, nan, posinf, neginf: torch.nan_to_num(t, nan=nan, posinf=posinf, neginf=neginf), same())


def _cov(t: torch.Tensor, *w: torch.Tensor, ddof: int, fweights: bool) -> torch.Tensor:
    fw = w[0] if fweights else None
    aw = w[-1] if len(w) > int(fweights) else None
    return torch.cov(t, correction=ddof, fweights=fw, aweights=aw)


def _cov_dtype(op: str, dtypes: tuple[Any, ...], s: dict[str, Any]) -> Any:
    """``m`` made floating; ``fweights`` integers (as NumPy requires), ``aweights`` in ``m``'s dtype."""
    _dtypes.check_category(op, dtypes[0], "numeric")
    f = _dtypes.to_float(dtypes[0])
    casts: list[Any] = [f]
    for i, d in enumerate(dtypes[1:]):
        if i == 0 and s["fweights"]:
            _dtypes.check_category(op, d, "integer", "fweights")
            casts.append(_dtypes.int64)
        else:
            _dtypes.check_category(op, d, "real numeric", "aweights")
            casts.append(_dtypes.REAL_OF.get(f, f))
    return (f,), tuple(casts)


def _cov_shape(op: str, shapes: tuple[Any, ...], s: dict[str, Any]) -> Any:
    rows = 1 if len(shapes[0]) < 2 else shapes[0][0]
    return (() if rows == 1 else (rows, rows),)  # torch's meta cov checks the weights' values: by hand


define("cov", _cov, _cov_dtype, shape=_cov_shape)


define("corrcoef", lambda t: torch.corrcoef(t), floating("numeric"))


def _angle_dtypes(op: str, dtypes: tuple[Any, ...], static: dict[str, Any]) -> Any:
    """The angle of a complex array is real, in its precision (NumPy); of a real array, the default float."""
    _dtypes.check_category(op, dtypes[0], "numeric")
    f = _dtypes.to_float(dtypes[0])
    return (_dtypes.REAL_OF.get(f, f),), (f,)


define("angle", lambda t: torch.angle(t), _angle_dtypes)


define("i0", lambda t: torch.special.i0(t), floating("real numeric"))


define("trapezoid", lambda y, dx, axis: torch.trapezoid(y, dx=dx, dim=axis), floating("real numeric"))
define("trapezoid_x", lambda y, x, axis: torch.trapezoid(y, x, dim=axis), floating("real numeric"))


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


def around(a: Any, decimals: int = 0, out: Any = None) -> Any:
    """NumPy's ``round``: to ``decimals`` places (``rint(a * 10**decimals) / 10**decimals``, as NumPy
    computes it; negative ``decimals`` round to tens, hundreds ...); integers stay integers."""
    a = man._array_like(a)
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise TypeError(f"round: decimals={decimals!r} must be an int")
    if decimals == 0 or a.dtype.kind in "biu" and decimals > 0:
        result = call("round", a) if a.dtype.kind not in "biu" else call("positive", a)
    elif a.dtype.kind in "iu":  # NumPy rounds integers to tens, hundreds ... in integers
        scale = 10 ** (-decimals)
        result = (call("round", a / scale) * scale).astype(a.dtype)
    else:
        scale = 10.0 ** abs(decimals)
        result = call("round", a * scale) / scale if decimals > 0 else call("round", a / scale) * scale
    if out is None:
        return result
    from autopar.arrays._keywords import finish

    return finish("round", result, out)


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


def _nan_extreme(reduce: Any, a: Any, fill: float, axis: Any, keepdims: bool) -> Any:
    """max/min ignoring NaNs; nan where every value is NaN, as NumPy's (not the fill)."""
    a = man._array_like(a)
    r = reduce(_nan_fill(a, fill), axis=axis, keepdims=keepdims)
    if a.dtype.kind not in "fc":
        return r
    return cr_where(red.all(call("isnan", a), axis=axis, keepdims=keepdims), math.nan, r)


def nanmax(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _nan_extreme(red.max, a, -math.inf, axis, keepdims)


def nanmin(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _nan_extreme(red.min, a, math.inf, axis, keepdims)


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


def _variables(op: str, m: Any, y: Any, rowvar: bool, dtype: Any) -> Any:
    """NumPy's layout for ``cov``/``corrcoef``: one variable per row (``rowvar``), ``y``'s rows appended."""
    m = man._array_like(m)
    if m.ndim > 2:
        raise ValueError(f"{op}: m has shape {m.shape}; it must be 1-D or 2-D")
    if not rowvar and m.ndim == 2:
        m = man.transpose(m)
    if y is not None:
        y = man._array_like(y)
        if y.ndim > 2:
            raise ValueError(f"{op}: y has shape {y.shape}; it must be 1-D or 2-D")
        if not rowvar and y.ndim == 2:
            y = man.transpose(y)
        m = man.concat([man.reshape(m, (-1, m.shape[-1])), man.reshape(y, (-1, y.shape[-1]))], axis=0)
    if dtype is not None:
        m = m.astype(dtype)
    return m


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: Any = None, fweights: Any = None,
        aweights: Any = None, *, dtype: Any = None) -> Any:  # fmt: skip
    """NumPy's covariance matrix (a 0-d array for one variable)."""
    m = _variables("cov", m, y, rowvar, dtype)
    if ddof is not None and (isinstance(ddof, bool) or int(ddof) != ddof):
        raise ValueError(f"cov: ddof={ddof!r} must be an integer")
    weights = [man._array_like(w) for w in (fweights, aweights) if w is not None]
    for name, w in zip([n for n, w in (("fweights", fweights), ("aweights", aweights)) if w is not None], weights):
        if w.ndim != 1 or w.shape[0] != m.shape[-1]:
            raise ValueError(f"cov: {name} of shape {w.shape} must be 1-D with one weight per observation ({m.shape[-1]})")
    static = {"ddof": int(ddof if ddof is not None else (0 if bias else 1)), "fweights": fweights is not None}
    return bind(TABLE["cov"], (m, *weights), static)


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Any:
    """NumPy's Pearson correlation coefficients (clipped to [-1, 1])."""
    return bind(TABLE["corrcoef"], (_variables("corrcoef", x, y, rowvar, dtype),))


def angle(z: Any, deg: bool = False) -> Any:
    out = bind(TABLE["angle"], (man._array_like(z),))
    return out * (180.0 / math.pi) if deg else out


def i0(x: Any) -> Any:
    return bind(TABLE["i0"], (man._array_like(x),))


def trapezoid(y: Any, x: Any = None, dx: float = 1.0, axis: int = -1) -> Any:
    """The trapezoidal rule along ``axis``: sample points ``x`` (1-D along the axis, or broadcasting to
    ``y``), else evenly spaced by ``dx``."""
    y = man._array_like(y)
    ax = man.normalize_axis("trapezoid", axis, y.ndim)
    if x is None:
        return bind(TABLE["trapezoid"], (y,), {"dx": float(dx), "axis": ax})
    return bind(TABLE["trapezoid_x"], (y, man._array_like(x)), {"axis": ax})


def logspace(start: float, stop: float, num: int = 50, endpoint: bool = True, base: float = 10.0, dtype: Any = None) -> Any:
    out = call("pow", float(base), cr.linspace(start, stop, num, endpoint=endpoint, dtype="float64"))
    return out.astype(dtype or _dtypes.default_float())


def geomspace(start: float, stop: float, num: int = 50, endpoint: bool = True, dtype: Any = None) -> Any:
    if start == 0 or stop == 0 or (start < 0) != (stop < 0):
        raise ValueError("geomspace: start and stop must be non-zero and of the same sign")
    sign = -1.0 if start < 0 else 1.0
    out = logspace(math.log10(abs(start)), math.log10(abs(stop)), num, endpoint, dtype="float64") * sign
    return out.astype(dtype or _dtypes.default_float())


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


define("bincount", lambda t, minlength: torch.bincount(t, minlength=minlength), same("integer"), data_dependent=True,
       differentiable=False)  # fmt: skip
define("bincount_weighted", lambda t, w, minlength: torch.bincount(t, weights=w, minlength=minlength),
       lambda op, d, s: ((_dtypes.float64,), (None, _dtypes.float64)), data_dependent=True,
       differentiable=False)  # fmt: skip


define("frexp", lambda t: tuple(torch.frexp(t)), lambda op, d, s: ((d[0], _dtypes.int32), None), nout=2,
       differentiable=False)  # fmt: skip


define("nanquantile", lambda t, q, axis, keepdims: torch.nanquantile(t, _q_tensor(q, t),
       dim=axis, keepdim=keepdims), floating("real numeric"))  # fmt: skip


def bincount(x: Any, /, weights: Any = None, minlength: int = 0) -> Any:
    """Counts of each value of a non-negative integer array, or sums of ``weights`` (float64, as NumPy)
    per value; its length depends on the data: waits."""
    x = man._array_like(x)
    if x.dtype.kind == "b":  # NumPy counts a mask as 0s and 1s
        x = x.astype(_dtypes.int64)
    _dtypes.check_category("bincount", x.dtype, "integer")
    if weights is None:
        return bind(TABLE["bincount"], (x,), {"minlength": int(minlength)})
    w = man._array_like(weights)
    if w.shape != x.shape:
        raise ValueError(f"bincount: weights of shape {w.shape} do not match x of shape {x.shape}; give one weight per value")
    _dtypes.check_category("bincount", w.dtype, "real", "weights")
    return bind(TABLE["bincount_weighted"], (x, w), {"minlength": int(minlength)})


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


__all__ = [
    'invert', 'intp',
    'absolute', 'allclose', 'amax', 'amin', 'angle', 'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan',
    'arctan2', 'arctanh', 'around', 'array_equal', 'array_equiv', 'average', 'bincount', 'bitwise_not',
    'concatenate', 'conjugate', 'corrcoef', 'cov', 'degrees', 'diff', 'ediff1d', 'fabs', 'fix', 'frexp',
    'geomspace', 'i0', 'int_', 'isclose', 'iscomplex', 'iscomplexobj', 'isneginf', 'isposinf', 'isreal',
    'isrealobj', 'left_shift', 'logspace', 'median', 'mod', 'modf', 'nan_to_num', 'nanargmax', 'nanargmin',
    'nancumprod', 'nancumsum', 'nanmax', 'nanmean', 'nanmedian', 'nanmin', 'nanpercentile', 'nanprod',
    'nanquantile', 'nanstd', 'nanvar', 'percentile', 'power', 'ptp', 'quantile', 'radians', 'right_shift',
    'rint', 'trapezoid', 'true_divide', 'uint'
]  # fmt: skip
