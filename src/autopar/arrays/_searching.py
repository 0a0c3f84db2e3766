"""Searching, sorting and sets: ``where``, ``sort``/``argsort``, ``searchsorted``,
``nonzero`` and the ``unique_*`` family.

``nonzero``, ``unique_*``, ``where(condition)`` with one argument and
``argwhere`` have result shapes that depend on the data: they are
``data_dependent`` entries, so the call waits for its inputs (the contract on arrays).
Every other op here returns at once. Sorting is stable, as the standard asks;
NaNs sort last, as in NumPy.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from autopar.arrays import _dtypes
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._elementwise import broadcast_shapes
from autopar.arrays._manipulation import _array_like, normalize_axis
from autopar.arrays._table import TABLE, define, fixed, same


def _where_rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    r = _dtypes.promote(dtypes[1], dtypes[2])
    return (r,), (_dtypes.bool_, r, r)


def _where(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(c, a, b)


def _sort(t: torch.Tensor, axis: int, descending: bool) -> torch.Tensor:
    return torch.sort(t, dim=axis, descending=descending, stable=True).values


def _argsort(t: torch.Tensor, axis: int, descending: bool) -> torch.Tensor:
    return torch.sort(t, dim=axis, descending=descending, stable=True).indices


def _searchsorted(a: torch.Tensor, v: torch.Tensor, side: str) -> torch.Tensor:
    return torch.searchsorted(a, v.contiguous(), right=side == "right")


def _nonzero(t: torch.Tensor) -> torch.Tensor:
    return torch.nonzero(t).T.contiguous()  # (ndim, count): row i indexes dimension i


def _unique(flat: torch.Tensor, inverse: bool, counts: bool) -> tuple[torch.Tensor, ...]:
    """``torch.unique`` (sorted) of a 1-D tensor; complex values, which it has no kernel for,
    by hand: sorted by real then imaginary part (as NumPy), equal neighbours grouped."""
    if not flat.is_complex():
        out = torch.unique(flat, sorted=True, return_inverse=inverse, return_counts=counts)
        return out if isinstance(out, tuple) else (out,)
    order = torch.sort(flat.imag, stable=True).indices
    order = order[torch.sort(flat.real[order], stable=True).indices]
    ordered = flat[order]
    new = torch.ones(flat.shape, dtype=torch.bool, device=flat.device)
    new[1:] = ordered[1:] != ordered[:-1]  # NaNs are never equal: each is its own value
    group = torch.cumsum(new, 0) - 1
    result = [ordered[new]]
    if inverse:
        result.append(torch.empty_like(group).scatter_(0, order, group))
    if counts:
        result.append(torch.bincount(group, minlength=len(result[0])))
    return tuple(result)


def _unique_all(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    flat = t.reshape(-1)
    values, inverse, counts = _unique(flat, inverse=True, counts=True)
    first = torch.full(values.shape, flat.numel(), dtype=torch.int64, device=t.device)
    first = first.scatter_reduce(0, inverse, torch.arange(flat.numel(), device=t.device), "amin")
    return values, first, inverse.reshape(t.shape), counts


def _unique_counts(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return _unique(t.reshape(-1), inverse=False, counts=True)


def _unique_inverse(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    values, inverse = _unique(t.reshape(-1), inverse=True, counts=False)
    return values, inverse.reshape(t.shape)


def _unique_values(t: torch.Tensor) -> torch.Tensor:
    return _unique(t.reshape(-1), inverse=False, counts=False)[0]


def _with_values(*rest: DType) -> Any:
    def outs(d: tuple[DType, ...], s: dict[str, Any]) -> tuple[DType, ...]:
        return (d[0], *rest)

    return outs


_I = _dtypes.int64
define("where", _where, _where_rule, shape=lambda op, sh, s: (broadcast_shapes(op, sh),))
define("sort", _sort, same("real"))
define("argsort", _argsort, fixed(_dtypes.int64, "real"), differentiable=False)
define("searchsorted", _searchsorted, fixed(_dtypes.int64, "real"), differentiable=False)
define("isin", lambda a, b, invert: torch.isin(a, b, invert=invert), fixed(_dtypes.bool_), differentiable=False)
define("unique_values", _unique_values, fixed(_with_values()), data_dependent=True, differentiable=False)
define("unique_counts", _unique_counts, fixed(_with_values(_I)), data_dependent=True, nout=2, differentiable=False)
define("unique_inverse", _unique_inverse, fixed(_with_values(_I)), data_dependent=True, nout=2,
       differentiable=False)  # fmt: skip
define("unique_all", _unique_all, fixed(_with_values(_I, _I, _I)), data_dependent=True, nout=4,
       differentiable=False)  # fmt: skip
define("nonzero", _nonzero, fixed(_dtypes.int64), data_dependent=True, differentiable=False)


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def where(condition: Any, x1: Any = None, x2: Any = None, /) -> Any:
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast); with one argument, NumPy's
    ``nonzero(condition)`` (which waits: its shape depends on the data)."""
    if x1 is None and x2 is None:
        return nonzero(condition)
    if x1 is None or x2 is None:
        raise TypeError("where: give both x1 and x2, or neither")
    c = _array_like(condition)
    if c._dtype is not _dtypes.bool_:
        c = c != 0
    like = x1 if type(x1) is _array.NDArray else x2 if type(x2) is _array.NDArray else None
    a = x1 if type(x1) in (bool, int, float, complex) or type(x1) is _array.NDArray else _array_like(x1)
    b = x2 if type(x2) in (bool, int, float, complex) or type(x2) is _array.NDArray else _array_like(x2)
    if type(a) is not _array.NDArray and type(b) is not _array.NDArray:
        from autopar.arrays._creation import asarray

        a = asarray(a, device=c.device)
    if like is None:
        like = a if type(a) is _array.NDArray else b
    if type(a) is not _array.NDArray:
        a = _scalar_like(a, b)
    if type(b) is not _array.NDArray:
        b = _scalar_like(b, a)
    return bind(TABLE["where"], (c, a, b))


def _scalar_like(value: Any, like: Any) -> Any:
    from autopar.arrays._creation import full

    d = _dtypes.scalar_dtype("where", like._dtype, value)
    return full((), value, dtype=d, device=like.device)


_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _kind(op: str, kind: Any, order: Any) -> None:
    """NumPy's ``kind=``: every kind is accepted and the sort is stable (a valid answer for each);
    ``order=`` names fields of structured arrays, which autopar does not have."""
    if kind not in _KINDS:
        raise ValueError(f"{op}: kind={kind!r}; expected one of 'quicksort', 'mergesort', 'heapsort', 'stable'")
    if order is not None:
        raise TypeError(f"{op}: order={order!r} is not supported (autopar has no structured arrays); "
                        f"sort by several keys with lexsort, or argsort one key at a time, least significant first")


def sort(x: Any, /, axis: int = -1, kind: Any = None, order: Any = None, *, descending: bool = False,
         stable: bool = True) -> Any:  # fmt: skip
    _kind("sort", kind, order)
    if axis is None:  # NumPy: the flattened array
        from autopar.arrays._manipulation import reshape

        x, axis = reshape(_array_like(x), (-1,)), -1
    x = _array_like(x)
    if x.ndim == 0:
        raise ValueError("sort: a 0-d array cannot be sorted along an axis")
    return bind(TABLE["sort"], (x,), {"axis": normalize_axis("sort", axis, x.ndim), "descending": bool(descending)})


def argsort(x: Any, /, axis: int = -1, kind: Any = None, order: Any = None, *, descending: bool = False,
            stable: bool = True) -> Any:  # fmt: skip
    _kind("argsort", kind, order)
    if axis is None:
        from autopar.arrays._manipulation import reshape

        x, axis = reshape(_array_like(x), (-1,)), -1
    x = _array_like(x)
    if x.ndim == 0:
        raise ValueError("argsort: a 0-d array cannot be sorted along an axis")
    return bind(TABLE["argsort"], (x,), {"axis": normalize_axis("argsort", axis, x.ndim),
                                         "descending": bool(descending)})  # fmt: skip


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    a, v = _array_like(x1), _array_like(x2)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D; got shape {a.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side={side!r}; expected 'left' or 'right'")
    if sorter is not None:
        from autopar.arrays._indexing import take

        a = take(a, sorter)
    r = _dtypes.promote(a._dtype, v._dtype)
    return bind(TABLE["searchsorted"], (a.astype(r, copy=False), v.astype(r, copy=False)), {"side": side})


def nonzero(x: Any, /) -> tuple[Any, ...]:
    """Indices of the non-zero elements, one array per dimension. Waits for ``x``."""
    x = _array_like(x)
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d array has no dimensions to index; use x.reshape(1) (the standard forbids it)")
    rows = bind(TABLE["nonzero"], (x,))
    return tuple(rows[i] for i in range(x.ndim))


def argwhere(x: Any, /) -> Any:
    from autopar.arrays._manipulation import stack

    idx = nonzero(x)
    return stack(list(idx), axis=1)


def flatnonzero(x: Any, /) -> Any:
    return nonzero(_array_like(x).reshape(-1))[0]


def isin(element: Any, test_elements: Any, /, *, invert: bool = False) -> Any:
    a, b = _array_like(element), _array_like(test_elements)
    r = _dtypes.promote(a._dtype, b._dtype)
    return bind(TABLE["isin"], (a.astype(r, copy=False), b.astype(r, copy=False)), {"invert": bool(invert)})


def unique_values(x: Any, /) -> Any:
    return bind(TABLE["unique_values"], (_array_like(x),))


def unique_counts(x: Any, /) -> UniqueCountsResult:
    return UniqueCountsResult(*bind(TABLE["unique_counts"], (_array_like(x),)))


def unique_inverse(x: Any, /) -> UniqueInverseResult:
    return UniqueInverseResult(*bind(TABLE["unique_inverse"], (_array_like(x),)))


def unique_all(x: Any, /) -> UniqueAllResult:
    return UniqueAllResult(*bind(TABLE["unique_all"], (_array_like(x),)))


def unique(x: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: Any = None, *, equal_nan: bool = True) -> Any:  # fmt: skip
    """NumPy's ``unique`` (flattened; ``axis`` is not supported). Waits for ``x``. ``equal_nan``: all NaNs
    are one value, NumPy 2's default (the standard's ``unique_*`` keep each)."""
    if axis is not None:
        raise ValueError("unique: axis= is not supported; unique works on the flattened array")
    x = _array_like(x)
    collapse = equal_nan and x._dtype.kind == "f"
    if not (return_index or return_inverse or return_counts):
        values = unique_values(x)
        nans = _nans(values) if collapse else 0
        return values[: values.shape[0] - nans + 1] if nans > 1 else values
    res = unique_all(x)
    values, indices, inverse, counts = res.values, res.indices, res.inverse_indices.reshape(-1), res.counts
    if collapse:
        values, indices, inverse, counts = _one_nan(values, indices, inverse, counts)
    out = [values]
    if return_index:
        out.append(indices)
    if return_inverse:
        out.append(inverse)
    if return_counts:
        out.append(counts)
    return values if len(out) == 1 else tuple(out)


def _one_nan(values: Any, indices: Any, inverse: Any, counts: Any) -> tuple[Any, Any, Any, Any]:
    """The NaNs (sorted last, one entry each) as one entry: its first index, their total count."""
    from autopar.arrays._elementwise import call
    from autopar.arrays._manipulation import concat
    from autopar.arrays._reductions import min as min_
    from autopar.arrays._reductions import sum as sum_

    nans = _nans(values)
    if nans <= 1:
        return values, indices, inverse, counts
    keep = values.shape[0] - nans + 1
    last = keep - 1
    indices = concat([indices[:last], min_(indices[last:], keepdims=True)])
    counts = concat([counts[:last], sum_(counts[last:], keepdims=True)])
    return values[:keep], indices, call("minimum", inverse, last), counts


def _nans(values: Any) -> int:
    """How many NaNs unique's sorted values end with (read: unique has waited for its shape already)."""
    from autopar.arrays._elementwise import call
    from autopar.arrays._reductions import sum as sum_

    return int(sum_(call("isnan", values)).item())


from autopar.arrays import _array  # noqa: E402
