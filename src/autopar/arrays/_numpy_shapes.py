"""NumPy's shape, stacking, splitting and index helpers beyond the standard.

Compositions of the standard's ops (``hstack`` is ``concat`` after
``atleast_1d``; ``diag`` is a scatter of indices into ``zeros``); a few are
table entries of their own (``rot90``, ``pad``). Functions that answer with
a Python value (``ndim``, ``shape``, ``may_share_memory``) need no wait:
shapes are known at the call. See docs/arrays.md for what is left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from autopar.arrays import _creation as cr
from autopar.arrays import _dtypes
from autopar.arrays import _manipulation as man
from autopar.arrays._array import NDArray
from autopar.arrays._dispatch import bind
from autopar.arrays._elementwise import call
from autopar.arrays._searching import where as _where
from autopar.arrays._table import TABLE, define, same


define("rot90", lambda t, k, axes: torch.rot90(t, k, list(axes)), same(), kernel_dtype="bits")


def rot90(m: Any, k: int = 1, axes: Any = (0, 1)) -> Any:
    m = man._array_like(m)
    return bind(TABLE["rot90"], (m,), {"k": int(k), "axes": tuple(man.normalize_axis("rot90", a, m.ndim) for a in axes)})


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
    return cr.tril(cr.ones((N, N if M is None else M), dtype=dtype or _dtypes.default_float()), k=k)


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
        out = _where(cond, choice, out)
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
    """NumPy's ``digitize``; decreasing ``bins`` are searched reversed, as NumPy does. Host bins are
    checked here; for an autopar array of bins (which is not read) both searches are made and
    ``bins[0] > bins[-1]`` picks one -- for monotonic bins, the same test as NumPy's."""
    from autopar.arrays._searching import searchsorted, where

    side = "left" if right else "right"
    if type(bins) is not NDArray:
        edges = np.asarray(bins)
        steps = np.diff(edges)
        if edges.ndim != 1 or not ((steps >= 0).all() or (steps <= 0).all()):
            raise ValueError(f"digitize: bins must be 1-D and monotonically increasing or decreasing; got {bins!r}")
        if edges.size > 1 and (steps <= 0).all() and (steps < 0).any():
            return len(edges) - searchsorted(edges[::-1].copy(), x, side=side)
    elif bins.ndim != 1:
        raise ValueError(f"digitize: bins must be 1-D and monotonically increasing or decreasing; got shape "
                         f"{tuple(bins.shape)}")
    elif bins.shape[0] > 1:
        up = searchsorted(bins, x, side=side)
        down = bins.shape[0] - searchsorted(bins[::-1], x, side=side)
        return where(bins[0] > bins[-1], down, up)
    return searchsorted(bins, x, side=side)


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


from autopar.arrays._padding import pad  # noqa: E402,F401


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


__all__ = [
    'append', 'argpartition', 'array_split', 'asanyarray', 'ascontiguousarray', 'atleast_1d', 'atleast_2d',
    'atleast_3d', 'broadcast_shapes', 'column_stack', 'compress', 'copy', 'copyto', 'delete', 'diag',
    'diag_indices', 'diag_indices_from', 'diagflat', 'digitize', 'dsplit', 'dstack', 'extract',
    'fill_diagonal', 'fliplr', 'flipud', 'hsplit', 'hstack', 'indices', 'intersect1d', 'isscalar', 'iterable',
    'matvec', 'may_share_memory', 'ndim', 'pad', 'partition', 'put', 'ravel_multi_index', 'rollaxis', 'rot90',
    'row_stack', 'select', 'setdiff1d', 'setxor1d', 'shape', 'shares_memory', 'size', 'split', 'trace', 'tri',
    'tril_indices', 'tril_indices_from', 'triu_indices', 'triu_indices_from', 'union1d', 'unravel_index',
    'vdot', 'vecmat', 'vsplit', 'vstack'
]  # fmt: skip
