"""NumPy's functions that take a Python function: ``fromfunction``, ``apply_along_axis``,
``apply_over_axes``, ``piecewise`` -- and ``fromiter``, ``ndindex``, ``ndenumerate``.

None of them calls the function per element: ``fromfunction`` calls it once
with the index arrays (as NumPy does); ``apply_along_axis`` once per 1-D
slice, with autopar arrays, so the work stays asynchronous (a Python loop
over the slices: fine for the sizes it is used on); ``apply_over_axes`` once
per axis; ``piecewise`` once per condition, on the whole array, keeping each
result where its condition holds (NumPy calls it on ``x[cond]``: the same
values where it matters, without waiting for the mask). ``vectorize`` and
``frompyfunc``, which call Python per element, are not here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from autopar.arrays import _manipulation as man


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float, like: Any = None, **kwargs: Any) -> Any:
    """``function(*indices(shape, dtype))``: called once, with one index array per dimension."""
    from autopar.arrays._numpy_shapes import indices

    grids = indices(tuple(shape), dtype=dtype)
    return function(*(grids[i] for i in range(len(tuple(shape)))), **kwargs)


def fromiter(iter: Any, dtype: Any, count: int = -1, *, like: Any = None) -> Any:  # noqa: A002 - NumPy's name
    """An array of the iterable's values (the first ``count`` if given)."""
    from autopar.arrays._creation import asarray

    values = list(iter if count < 0 else itertools.islice(iter, count))
    if 0 <= count != len(values):
        raise ValueError(f"fromiter: iterator too short: {len(values)} values, count={count}")
    return asarray(values, dtype=dtype)


def apply_along_axis(func1d: Callable[..., Any], axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """``func1d`` on every 1-D slice along ``axis``; its results (all of one shape) take the axis' place."""
    from autopar.arrays._creation import asarray

    a = man._array_like(arr)
    ax = man.normalize_axis("apply_along_axis", axis, a.ndim)
    moved = man.moveaxis(a, ax, -1)
    outer = moved.shape[:-1]
    if math.prod(outer) == 0:
        raise ValueError("apply_along_axis: cannot apply to an array with no slices (a zero-size dimension)")
    results = []
    for idx in itertools.product(*(range(n) for n in outer)):
        r = func1d(moved[idx], *args, **kwargs)
        results.append(r if hasattr(r, "_dtype") else asarray(r))
    shape = results[0].shape
    if any(r.shape != shape for r in results):
        raise ValueError("apply_along_axis: func1d returned results of different shapes")
    stacked = man.reshape(man.stack(results), outer + shape)
    n_res = len(shape)
    dims = list(range(stacked.ndim))
    order = dims[:ax] + dims[stacked.ndim - n_res :] + dims[ax : stacked.ndim - n_res]
    return man.permute_dims(stacked, tuple(order))


def apply_over_axes(func: Callable[..., Any], a: Any, axes: Any) -> Any:
    """``func(a, axis)`` for each axis in turn, each result keeping ``a``'s number of dimensions."""
    val = man._array_like(a)
    n = val.ndim
    for axis in [axes] if isinstance(axes, int) else axes:
        axis = axis + n if axis < 0 else axis
        res = func(val, axis)
        if res.ndim != val.ndim:
            res = man.expand_dims(res, axis=axis)
            if res.ndim != val.ndim:
                raise ValueError("apply_over_axes: function is not returning an array of the correct shape")
        val = res
    return val


def piecewise(x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """Where ``condlist[i]`` holds, ``funclist[i](x)`` (or the value ``funclist[i]``); one more function than
    conditions is the "otherwise" case; elsewhere 0. Later conditions win, as NumPy's assignments do."""
    from autopar.arrays._creation import asarray, zeros_like
    from autopar.arrays._elementwise import call
    from autopar.arrays._reductions import any as any_
    from autopar.arrays._searching import where

    x = man._array_like(x)
    single = not isinstance(condlist, (list, tuple)) or (  # NumPy's test for one condition given bare
        not isinstance(condlist[0], (list, tuple, np.ndarray)) and not hasattr(condlist[0], "_dtype") and x.ndim != 0)  # fmt: skip
    conds = [condlist] if single else list(condlist)
    conds = [c if hasattr(c, "_dtype") else asarray(c, dtype="bool", device=x.device) for c in conds]
    conds = [c.astype("bool") if c.dtype.kind != "b" else c for c in conds]
    funcs = list(funclist)
    if len(conds) == len(funcs) - 1:
        conds.append(call("logical_not", any_(man.stack([man.broadcast_to(c, x.shape) for c in conds]), axis=0)))
    elif len(conds) != len(funcs):
        raise ValueError(f"piecewise: {len(conds)} conditions and {len(funcs)} functions; give one function per "
                         "condition, or one more for the otherwise case")  # fmt: skip
    y = zeros_like(x)
    for cond, func in zip(conds, funcs):
        value = func(x, *args, **kw) if callable(func) else func
        y = where(cond, value, y).astype(x.dtype)
    return y


def ndindex(*shape: Any) -> Any:
    """Every index of an array of ``shape``, in C order (no array involved)."""
    dims = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) else shape
    return itertools.product(*(range(int(n)) for n in dims))


def ndenumerate(arr: Any) -> Any:
    """``(index, value)`` for every element (reads the array once: waits)."""
    return np.ndenumerate(man._array_like(arr).numpy())
