"""Reductions and scans: the standard's statistical and utility functions, and NumPy's extras.

Shapes by hand (they are hot and their messages name the axis); dtypes by
the standard: ``sum``/``prod``/``cumulative_sum`` of a bool or a smaller
integer give the default integer (``uint64`` for unsigned), floats keep
their dtype, ``dtype=`` overrides; ``mean``/``std``/``var`` of integers give
the default float; ``argmax``/``argmin`` give ``int64``; ``all``/``any``
give bool. ``max``/``min`` of an empty selection raise at the call (NumPy
raises too). Work counts every element read, so ``x.sum()`` of a big array
never runs on the caller.
"""

from __future__ import annotations

import builtins  # this module defines sum, max, min, all and any: builtins.* are Python's
from typing import Any

import torch

from autopar.arrays import _dtypes
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._manipulation import _array_like, normalize_axes, normalize_axis
from autopar.arrays._table import TABLE, define

Shape = tuple[int, ...]


def _reduced(op: str, shapes: tuple[Shape, ...], s: dict[str, Any]) -> tuple[Shape, ...]:
    shape = shapes[0]
    axes = s["axes"]
    if s.get("keepdims"):
        return (tuple(1 if i in axes else n for i, n in enumerate(shape)),)
    return (tuple(n for i, n in enumerate(shape) if i not in axes),)


def _scan_shape(op: str, shapes: tuple[Shape, ...], s: dict[str, Any]) -> tuple[Shape, ...]:
    shape = shapes[0]
    axis = s["axis"]
    if axis is None:
        return ((_size(shape) + (1 if s.get("include_initial") else 0),),)
    if s.get("include_initial"):
        return (shape[:axis] + (shape[axis] + 1,) + shape[axis + 1 :],)
    return (shape,)


def _size(shape: Shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _accumulating(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    d = dtypes[0]
    _dtypes.check_category(op, d, "any")
    out = s.get("dtype")
    if out is None:
        if d.kind == "b" or d.kind == "i":
            out = _dtypes.int64
        elif d.kind == "u":
            out = _dtypes.uint64
        else:
            out = d
    return (out,), (out,)


def _floating(category: str) -> Any:
    def rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
        _dtypes.check_category(op, dtypes[0], category)
        out = _dtypes.to_float(dtypes[0])
        return (out,), (out,)

    return rule


def _keep(category: str) -> Any:
    def rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
        _dtypes.check_category(op, dtypes[0], category)
        return (dtypes[0],), None

    return rule


def _fixed(out: DType, category: str) -> Any:
    def rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
        _dtypes.check_category(op, dtypes[0], category)
        return (out,), None

    return rule


def _sum(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool, dtype: Any = None) -> torch.Tensor:
    if not axes:
        return t.clone()
    return torch.sum(t, dim=axes, keepdim=keepdims)


def _prod(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool, dtype: Any = None) -> torch.Tensor:
    for ax in sorted(axes, reverse=True):
        t = torch.prod(t, dim=ax, keepdim=keepdims)
    return t


def _mean(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool) -> torch.Tensor:
    if not axes:
        return t.clone()
    return torch.mean(t, dim=axes, keepdim=keepdims)


def _var(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool, correction: float) -> torch.Tensor:
    if not axes:
        return (t - t) / (1 - correction) if correction != 1 else (t - t) / 0.0
    return torch.var(t, dim=axes, keepdim=keepdims, correction=correction)


def _std(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool, correction: float) -> torch.Tensor:
    if not axes:
        return torch.sqrt(_var(t, axes, keepdims, correction))
    return torch.std(t, dim=axes, keepdim=keepdims, correction=correction)  # its gradient is 0 where std is 0


def _amax(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool) -> torch.Tensor:
    if not axes:
        return t.clone()
    if t.dtype is torch.bool:
        return torch.any(t, dim=axes, keepdim=keepdims)
    return torch.amax(t, dim=axes, keepdim=keepdims)


def _amin(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool) -> torch.Tensor:
    if not axes:
        return t.clone()
    if t.dtype is torch.bool:
        return torch.all(t, dim=axes, keepdim=keepdims)
    return torch.amin(t, dim=axes, keepdim=keepdims)


def _all(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool) -> torch.Tensor:
    if not axes:
        return t != 0
    return torch.all(t, dim=axes, keepdim=keepdims)


def _any(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool) -> torch.Tensor:
    if not axes:
        return t != 0
    return torch.any(t, dim=axes, keepdim=keepdims)


def _count_nonzero(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool) -> torch.Tensor:
    return _sum(t != 0, axes, keepdims).to(torch.int64)


def _logsumexp(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool) -> torch.Tensor:
    return torch.logsumexp(t, dim=axes, keepdim=keepdims) if axes else t.clone()


def _nansum(t: torch.Tensor, axes: tuple[int, ...], keepdims: bool, dtype: Any = None) -> torch.Tensor:
    return _sum(torch.nan_to_num(t, nan=0.0) if t.is_floating_point() else t, axes, keepdims)


def _arg(fn: Any) -> Any:
    def kernel(t: torch.Tensor, axis: int | None, keepdims: bool) -> torch.Tensor:
        if t.dtype is torch.bool:
            t = t.to(torch.uint8)
        if axis is None:
            out = fn(t.reshape(-1))
            return out.reshape((1,) * t.ndim) if keepdims else out
        return fn(t, dim=axis, keepdim=keepdims)

    return kernel


def _cumulative(fn: Any) -> Any:
    def kernel(t: torch.Tensor, axis: int | None, include_initial: bool, dtype: Any = None) -> torch.Tensor:
        if axis is None:
            t, axis = t.reshape(-1), 0
        out = fn(t, dim=axis)
        if include_initial:
            shape = list(out.shape)
            shape[axis] = 1
            first = torch.zeros(shape, dtype=out.dtype, device=out.device) if fn is torch.cumsum else torch.ones(
                shape, dtype=out.dtype, device=out.device)  # fmt: skip
            out = torch.cat([first, out], dim=axis)
        return out

    return kernel


_REDUCTIONS: dict[str, tuple[Any, Any]] = {
    "sum": (_sum, _accumulating),
    "prod": (_prod, _accumulating),
    "nansum": (_nansum, _accumulating),
    "mean": (_mean, _floating("any")),  # booleans too, as NumPy: (pred == y).mean() is the accuracy
    "var": (_var, _floating("any")),
    "std": (_std, _floating("any")),
    "max": (_amax, _keep("real")),
    "min": (_amin, _keep("real")),
    "all": (_all, _fixed(_dtypes.bool_, "any")),
    "any": (_any, _fixed(_dtypes.bool_, "any")),
    "count_nonzero": (_count_nonzero, _fixed(_dtypes.int64, "any")),
    "logsumexp": (_logsumexp, _floating("real numeric")),
}
for _name, (_kernel, _rule) in _REDUCTIONS.items():
    define(_name, _kernel, _rule, shape=_reduced, differentiable=_name not in ("all", "any", "count_nonzero"))


def _arg_shape(op: str, shapes: tuple[Shape, ...], s: dict[str, Any]) -> tuple[Shape, ...]:
    axes = tuple(range(len(shapes[0]))) if s["axis"] is None else (s["axis"],)
    return _reduced(op, shapes, {"axes": axes, "keepdims": s["keepdims"]})


define("argmax", _arg(torch.argmax), _fixed(_dtypes.int64, "real"), shape=_arg_shape, differentiable=False)
define("argmin", _arg(torch.argmin), _fixed(_dtypes.int64, "real"), shape=_arg_shape, differentiable=False)
define("cumulative_sum", _cumulative(torch.cumsum), _accumulating, shape=_scan_shape)
define("cumulative_prod", _cumulative(torch.cumprod), _accumulating, shape=_scan_shape)


def _reduce(name: str, x: Any, axis: Any, keepdims: bool, **static: Any) -> Any:
    x = _array_like(x)
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(name, axis, x.ndim)
    return bind(TABLE[name], (x,), {"axes": axes, "keepdims": bool(keepdims), **static})


def _dtype_arg(name: str, dtype: Any) -> DType | None:
    return None if dtype is None else _dtypes.as_dtype(dtype, name)


def _numpy_keywords(name: str, x: Any, axis: Any, keepdims: bool, out: Any, where: Any, initial: Any,
                    **kwargs: Any) -> Any:  # fmt: skip
    """A reduction given NumPy's ``out``/``where``/``initial`` (``_keywords``)."""
    from autopar.arrays import _keywords

    # the public function without those keywords does the rest
    return _keywords.reduction(name, globals()[name], x, axis, keepdims, out, where, initial, **kwargs)


def sum(x: Any, /, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: Any = True) -> Any:  # fmt: skip
    if out is not None or where is not True or initial is not None:
        return _numpy_keywords("sum", x, axis, keepdims, out, where, initial, dtype=dtype)
    return _reduce("sum", x, axis, keepdims, dtype=_dtype_arg("sum", dtype))


def prod(x: Any, /, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
         initial: Any = None, where: Any = True) -> Any:  # fmt: skip
    if out is not None or where is not True or initial is not None:
        return _numpy_keywords("prod", x, axis, keepdims, out, where, initial, dtype=dtype)
    return _reduce("prod", x, axis, keepdims, dtype=_dtype_arg("prod", dtype))


def nansum(x: Any, /, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
           initial: Any = None, where: Any = True) -> Any:  # fmt: skip
    if out is not None or where is not True or initial is not None:
        return _numpy_keywords("nansum", x, axis, keepdims, out, where, initial, dtype=dtype)
    return _reduce("nansum", x, axis, keepdims, dtype=_dtype_arg("nansum", dtype))


def _in_dtype(name: str, x: Any, dtype: Any) -> Any:
    """``dtype=`` of mean/var/std: compute in it (NumPy's accumulator dtype)."""
    return x if dtype is None else _array_like(x).astype(_dtypes.as_dtype(dtype, name), copy=False)


def mean(x: Any, /, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,
         where: Any = True) -> Any:  # fmt: skip
    if out is not None or where is not True:
        return _numpy_keywords("mean", x, axis, keepdims, out, where, None, dtype=dtype)
    return _reduce("mean", _in_dtype("mean", x, dtype), axis, keepdims)


def _moment(name: str, x: Any, axis: Any, dtype: Any, out: Any, ddof: Any, keepdims: bool, where: Any,
            correction: float) -> Any:  # fmt: skip
    c = float(correction if ddof is None else ddof)
    if out is not None or where is not True:
        return _numpy_keywords(name, x, axis, keepdims, out, where, None, dtype=dtype, correction=c)
    return _reduce(name, _in_dtype(name, x, dtype), axis, keepdims, correction=c)


def var(x: Any, /, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = None, keepdims: bool = False,
        *, where: Any = True, correction: float = 0.0) -> Any:  # fmt: skip
    return _moment("var", x, axis, dtype, out, ddof, keepdims, where, correction)


def std(x: Any, /, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = None, keepdims: bool = False,
        *, where: Any = True, correction: float = 0.0) -> Any:  # fmt: skip
    return _moment("std", x, axis, dtype, out, ddof, keepdims, where, correction)


def _extreme(name: str, x: Any, axis: Any, keepdims: bool) -> Any:
    x = _array_like(x)
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(name, axis, x.ndim)
    if builtins.any(x.shape[a] == 0 for a in axes) or (not axes and x.size == 0):
        raise ValueError(f"{name}: zero-size array (shape {x.shape}) has no {name}imum along axis={axis}; "
                         f"pass an array with elements, or initial= (the value of an empty reduction)")  # fmt: skip
    return bind(TABLE[name], (x,), {"axes": axes, "keepdims": bool(keepdims)})


def max(x: Any, /, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = None,  # noqa: A001
        where: Any = True) -> Any:  # fmt: skip
    if out is not None or where is not True or initial is not None:
        return _numpy_keywords("max", x, axis, keepdims, out, where, initial)
    return _extreme("max", x, axis, keepdims)


def min(x: Any, /, axis: Any = None, out: Any = None, keepdims: bool = False, initial: Any = None,  # noqa: A001
        where: Any = True) -> Any:  # fmt: skip
    if out is not None or where is not True or initial is not None:
        return _numpy_keywords("min", x, axis, keepdims, out, where, initial)
    return _extreme("min", x, axis, keepdims)


def all(x: Any, /, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True) -> Any:  # noqa: A001
    if out is not None or where is not True:
        return _numpy_keywords("all", x, axis, keepdims, out, where, None)
    return _reduce("all", x, axis, keepdims)


def any(x: Any, /, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True) -> Any:  # noqa: A001
    if out is not None or where is not True:
        return _numpy_keywords("any", x, axis, keepdims, out, where, None)
    return _reduce("any", x, axis, keepdims)


def count_nonzero(x: Any, /, axis: Any = None, *, keepdims: bool = False) -> Any:
    return _reduce("count_nonzero", x, axis, keepdims)


def logsumexp(x: Any, /, axis: Any = None, *, keepdims: bool = False) -> Any:
    return _reduce("logsumexp", x, axis, keepdims)


def _argext(name: str, x: Any, axis: Any, keepdims: bool) -> Any:
    x = _array_like(x)
    if axis is not None:
        axis = normalize_axis(name, axis, x.ndim)
    if (x.size == 0) if axis is None else x.shape[axis] == 0:
        raise ValueError(f"{name}: attempt to get {name} of an empty sequence (shape {x.shape}, axis={axis})")
    return bind(TABLE[name], (x,), {"axis": axis, "keepdims": bool(keepdims)})


def argmax(x: Any, /, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Any:
    result = _argext("argmax", x, axis, keepdims)
    return result if out is None else _finish("argmax", result, out)


def argmin(x: Any, /, axis: int | None = None, out: Any = None, *, keepdims: bool = False) -> Any:
    result = _argext("argmin", x, axis, keepdims)
    return result if out is None else _finish("argmin", result, out)


def _finish(name: str, result: Any, out: Any) -> Any:
    from autopar.arrays import _keywords

    return _keywords.finish(name, result, out)


def _scan(name: str, x: Any, axis: Any, dtype: Any, include_initial: bool) -> Any:
    x = _array_like(x)
    if axis is None and x.ndim > 1 and name.startswith("cumulative"):
        raise ValueError(f"{name}: axis is required for arrays of {x.ndim} dimensions")
    if axis is not None:
        axis = normalize_axis(name, axis, x.ndim)
    elif x.ndim == 1:
        axis = 0
    static = {"axis": axis, "include_initial": bool(include_initial), "dtype": _dtype_arg(name, dtype)}
    return bind(TABLE["cumulative_sum" if "sum" in name else "cumulative_prod"], (x,), static)


def cumulative_sum(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    return _scan("cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
    return _scan("cumulative_prod", x, axis, dtype, include_initial)


def cumsum(x: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    """NumPy's ``cumsum``: over the flattened array when ``axis`` is None."""
    result = _scan("cumsum", x, axis, dtype, False)
    return result if out is None else _finish("cumsum", result, out)


def cumprod(x: Any, axis: int | None = None, dtype: Any = None, out: Any = None) -> Any:
    result = _scan("cumprod", x, axis, dtype, False)
    return result if out is None else _finish("cumprod", result, out)
