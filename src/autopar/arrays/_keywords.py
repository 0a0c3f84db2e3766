"""NumPy's keyword arguments shared by many functions: a ufunc's ``out=``, ``where=``, ``dtype=``, a
reduction's ``out=``, ``where=``, ``initial=``.

Each is a composition of table ops, done here once: ``dtype=`` casts the
array operands first (Python numbers stay weak), so the op computes in that
dtype; ``where=`` selects, elementwise, between the result and what ``out``
held (zeros without ``out``: NumPy leaves those elements uninitialised);
``out=`` writes the result through ``out``'s view by NumPy's same-kind rule
(``casting=``) and returns ``out``. A reduction's ``where=`` fills the
masked-out elements with the reduction's identity (``initial`` for ``max``
and ``min``, which have none) and ``mean``/``var``/``std`` count only the
elements it keeps. The functions call this module only when one of these
is given, so the plain call costs nothing more. It binds the table's
entries itself (``where``, ``sum``, ``maximum`` ...): the op modules call it,
so it imports none of them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from autopar.arrays import _dtypes
from autopar.arrays._array import NDArray
from autopar.arrays._creation import full, zeros_like
from autopar.arrays._dispatch import bind, bind_into
from autopar.arrays._manipulation import _array_like, broadcast_to, normalize_axes, squeeze
from autopar.arrays._table import TABLE

_NUMBERS = (bool, int, float, complex)


def refuse(op: str, name: str, value: Any, fix: str) -> None:
    raise TypeError(f"{op}: {name}={value!r} is not supported; {fix}")


def ufunc(name: str, fn: Callable[..., Any], args: tuple[Any, ...], out: Any, where: Any, dtype: Any,
          casting: str = "same_kind", order: str = "K", subok: bool = True, signature: Any = None) -> Any:  # fmt: skip
    """``fn(*args)`` with a ufunc's keywords (module note)."""
    if order not in ("K", "A", "C"):
        refuse(name, "order", order, "autopar stores results in C order; leave order out")
    if subok is not True:
        refuse(name, "subok", subok, "autopar has no array subclasses; leave subok out")
    if signature is not None:
        refuse(name, "signature", signature, "pass dtype= to choose the computation dtype")
    if dtype is not None:
        d = _dtypes.as_dtype(dtype, name)
        for a in args:
            if type(a) is NDArray and casting != "unsafe" and not _dtypes.can_cast_same_kind(a._dtype, d):
                raise TypeError(f"{name}: cannot compute a {a._dtype.name} operand in dtype={d.name} by the "
                                f"{casting!r} rule; cast it first (x.astype({d.name!r})) or pass casting='unsafe'")
        args = tuple(a if type(a) in _NUMBERS else _array_like(a).astype(d, copy=False) for a in args)
        result = fn(*args)
        if result._dtype is not d and result._dtype is not _dtypes.bool_:
            result = result.astype(d)
    else:
        result = fn(*args)
    return finish(name, result, out, where, casting)


def finish(name: str, result: Any, out: Any, where: Any = True, casting: str = "same_kind") -> Any:
    """``result`` kept where ``where`` holds (else ``out``'s elements, or zeros), written into ``out``."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"{name}: out= has {len(out)} arrays; {name} has one result")
        out = out[0]
    if out is not None and type(out) is not NDArray:
        raise TypeError(f"{name}: out= must be an autopar array (got {type(out).__name__}); make it with "
                        f"zeros_like or empty, or assign the result instead: y = {name}(...)")  # fmt: skip
    if where is not True:
        result = _select(where, result, out if out is not None else zeros_like(result))
    if out is None:
        return result
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(f"{name}: casting={casting!r}; expected 'no', 'equiv', 'safe', 'same_kind' or 'unsafe'")
    bind_into(TABLE["assign"], out, (result,), what=f"{name} (out=)",
              casting="unsafe" if casting == "unsafe" else "same_kind")  # fmt: skip
    return out


_IDENTITY = {"sum": 0, "nansum": 0, "prod": 1, "any": False, "all": True}


def reduction(name: str, fn: Callable[..., Any], x: Any, axis: Any, keepdims: bool, out: Any, where: Any,
              initial: Any = None, **kwargs: Any) -> Any:  # fmt: skip
    """A reduction ``fn(x, axis=, keepdims=, **kwargs)`` with NumPy's ``out``, ``where`` and ``initial``."""
    x = _array_like(x)
    if where is not True:
        mask = _array_like(where)
        if name in ("mean", "var", "std"):
            return finish(name, _masked_moment(name, x, mask, axis, keepdims, **kwargs), out)
        fill = _IDENTITY.get(name, initial)
        if fill is None:
            raise ValueError(f"{name}: where= needs initial= here ({name} has no identity to fill the "
                             f"masked-out elements with), as in NumPy: {name}(x, where=m, initial=...)")  # fmt: skip
        x = _select(mask, x, fill)
    result = fn(x, axis=axis, keepdims=keepdims, **kwargs)
    if initial is not None:
        if name in ("sum", "nansum"):
            result = result + initial
        elif name == "prod":
            result = result * initial
        elif name in ("max", "min"):
            result = bind(TABLE["maximum" if name == "max" else "minimum"], (result, initial))
        else:
            refuse(name, "initial", initial, "add it to the result instead")
    return finish(name, result, out)


def _select(mask: Any, x: NDArray, other: Any) -> Any:
    """``where(mask, x, other)`` in ``x``'s dtype (``other`` a number or an array)."""
    m = _array_like(mask)
    if m._dtype is not _dtypes.bool_:
        m = m != 0
    if type(other) is not NDArray:
        other = full((), other, dtype=x._dtype, device=x.device)
    return bind(TABLE["where"], (m, x, other))


def _total(x: Any, axis: Any) -> Any:
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes("sum", axis, x.ndim)
    return bind(TABLE["sum"], (x,), {"axes": axes, "keepdims": True, "dtype": None})


def _masked_moment(name: str, x: Any, mask: Any, axis: Any, keepdims: bool, dtype: Any = None,
                   correction: float = 0.0) -> Any:  # fmt: skip
    """mean/var/std of the elements ``mask`` keeps: sums over them, divided by their count."""
    if dtype is not None:
        x = x.astype(dtype)
    x = x.astype(_dtypes.to_float(x._dtype), copy=False)
    mask = broadcast_to(_array_like(mask), x.shape)
    count = _total(mask, axis).astype(x._dtype)
    mean = _total(_select(mask, x, 0), axis) / count
    if name == "mean":
        return mean if keepdims else _drop(mean, axis)
    d = x - mean
    squares = (d * d.conj()).real if d._dtype.kind == "c" else d * d
    var = _total(_select(mask, squares, 0), axis) / (count - correction)
    if name == "std":
        var = bind(TABLE["sqrt"], (var,))
    return var if keepdims else _drop(var, axis)


def _drop(x: Any, axis: Any) -> Any:
    return squeeze(x, tuple(range(x.ndim)) if axis is None else normalize_axes("reduce", axis, x.ndim))


from autopar.arrays import _elementwise  # noqa: E402

_elementwise.keywords = sys.modules[__name__]  # the elementwise functions' out=/where=/dtype= (registered from above)
