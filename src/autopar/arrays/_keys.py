"""Sorting by several keys (``lexsort``) and open index grids (``ix_``), NumPy's.

``lexsort`` is one table entry: stable sorts from the least significant key
(the first) to the primary one (the last), each reordering the permutation
found so far -- the order of a radix sort, and NumPy's result, ties included.
``ix_`` only reshapes: the k-th of n index arrays gets shape ``(1, ..., -1, ..., 1)``
so that ``x[ix_(rows, cols)]`` broadcasts to the sub-grid; a boolean array is
first its ``nonzero()`` indices (that waits for the data, as a mask index does).
"""

from __future__ import annotations

from typing import Any

import torch

from autopar.arrays import _dtypes
from autopar.arrays import _manipulation as man
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._table import TABLE, define


def _lexsort(*keys: torch.Tensor, axis: int) -> torch.Tensor:
    def sortable(k: torch.Tensor) -> torch.Tensor:
        return k.to(torch.uint8) if k.dtype is torch.bool else k

    order = torch.sort(sortable(keys[0]), dim=axis, stable=True).indices
    for k in keys[1:]:
        moved = torch.take_along_dim(sortable(k), order, dim=axis)
        order = torch.take_along_dim(order, torch.sort(moved, dim=axis, stable=True).indices, dim=axis)
    return order


def _lexsort_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    for i, d in enumerate(dtypes):
        _dtypes.check_category(op, d, "real", f"keys[{i}]")
    return (_dtypes.int64,), None


define("lexsort", _lexsort, _lexsort_dtype, shape=lambda op, sh, s: (sh[0],), differentiable=False)


def lexsort(keys: Any, axis: int = -1) -> Any:
    """Indices that sort by ``keys[-1]``, then ``keys[-2]`` among equals, and so on (NumPy's order)."""
    from autopar.arrays import _array

    if type(keys) is _array.NDArray or not isinstance(keys, (list, tuple)):
        arr = man._array_like(keys)
        if arr.ndim == 0:
            raise TypeError("lexsort: keys is 0-d; give a sequence of arrays, or a 2-D array with one key per row")
        items = [arr[i] for i in range(arr.shape[0])]
    else:
        items = [man._array_like(k) for k in keys]
    if not items:
        raise TypeError("lexsort: need at least one key")
    shape = items[0].shape
    for i, k in enumerate(items):
        if k.shape != shape:
            raise ValueError(f"lexsort: all keys need the same shape; keys[0] has {shape}, keys[{i}] has {k.shape}")
    if len(shape) == 0:
        raise ValueError("lexsort: the keys are 0-d; give arrays of at least one dimension")
    ax = man.normalize_axis("lexsort", axis, len(shape))
    dev = items[0].device
    items = [k if k.device == dev else k.to(dev) for k in items]
    return bind(TABLE["lexsort"], tuple(items), {"axis": ax})


def ix_(*args: Any) -> tuple[Any, ...]:
    """Open mesh index arrays: ``x[ix_([0, 2], [1, 3])]`` is the 2x2 sub-grid of rows 0, 2 and columns 1, 3."""
    from autopar.arrays._creation import asarray

    out = []
    n = len(args)
    for k, seq in enumerate(args):
        arr = seq if hasattr(seq, "_dtype") else asarray(seq if len(seq) else [], dtype=None if len(seq) else "int64")
        if arr.ndim != 1:
            raise ValueError(f"ix_: argument {k} has shape {arr.shape}; each must be 1-D (a sequence of indices or a mask)")
        if arr.dtype.kind == "b":
            from autopar.arrays._searching import nonzero

            arr = nonzero(arr)[0]
        elif arr.dtype.kind not in "iu":
            raise ValueError(f"ix_: argument {k} holds {arr.dtype}; index arrays must be integer or boolean")
        out.append(man.reshape(arr, (1,) * k + (-1,) + (1,) * (n - k - 1)))
    return tuple(out)

