"""NumPy's ``insert``: values placed before given indices along an axis.

The positions are worked out on the host from ``obj`` (NumPy's rules: one
index inserts all of ``values`` there; several indices insert one slice each,
before the original elements, ties in the order given), then the result is
one gather from ``concat([arr, values])`` with that permutation -- no data is
read. An ``obj`` that is an autopar array is read (it decides the shape).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autopar.arrays import _manipulation as man


def insert(arr: Any, obj: Any, values: Any, axis: Any = None) -> Any:
    """NumPy's ``insert``: ``arr`` with ``values`` inserted before the indices ``obj`` along ``axis``
    (the flattened array when None)."""
    from autopar.arrays._creation import asarray
    from autopar.arrays._indexing import take

    a = man._array_like(arr)
    if axis is None:
        a, axis = man.reshape(a, (-1,)), 0
    ax = man.normalize_axis("insert", axis, a.ndim)
    n = a.shape[ax]
    if isinstance(obj, slice):
        obj = np.arange(*obj.indices(n))
    host = np.asarray(obj.numpy() if hasattr(obj, "numpy") else obj)
    if host.dtype == np.bool_ or (host.size and not np.issubdtype(host.dtype, np.integer)):
        raise IndexError(f"insert: obj={obj!r}; give integer indices (or a slice)")
    if host.ndim > 1:
        raise ValueError(f"insert: obj must be an int or a 1-D sequence of indices; got shape {host.shape}")
    idx = host.astype(np.int64)
    if ((idx < -n) | (idx > n)).any():
        raise IndexError(f"insert: index {int(idx[(idx < -n) | (idx > n)][0])} is out of bounds for axis {ax} with size {n}")
    idx = np.where(idx < 0, idx + n, idx)
    v = values if hasattr(values, "_dtype") else asarray(values, dtype=a.dtype, device=a.device)
    v = v.astype(a.dtype, copy=False)
    if host.ndim == 0:  # one index: every value goes there (NumPy's values, ndmin=arr.ndim, axis 0 moved to axis)
        while v.ndim < a.ndim:
            v = man.expand_dims(v, axis=0)
        v = man.moveaxis(v, 0, ax) if a.ndim > 1 else v
        count = v.shape[ax]
        shape = list(a.shape)
        shape[ax] = count
        v = man.broadcast_to(v, tuple(shape))
        where = int(idx)
        before = a[(slice(None),) * ax + (slice(0, where),)]
        after = a[(slice(None),) * ax + (slice(where, n),)]
        return man.concat([before, v, after], axis=ax)
    count = idx.shape[0]
    shape = list(a.shape)
    shape[ax] = count
    if v.ndim == a.ndim or v.ndim == 0 or a.ndim == 1:
        v = man.broadcast_to(v, tuple(shape))
    else:
        v = man.broadcast_to(man.expand_dims(v, axis=ax) if v.ndim == a.ndim - 1 else v, tuple(shape))
    order = np.argsort(idx, kind="stable")
    placed = idx.copy()
    placed[order] += np.arange(count)
    perm = np.empty(n + count, dtype=np.int64)
    old = np.ones(n + count, dtype=bool)
    old[placed] = False
    perm[old] = np.arange(n)
    perm[placed] = n + np.arange(count)
    return take(man.concat([a, v], axis=ax), asarray(perm, device=a.device), axis=ax)
