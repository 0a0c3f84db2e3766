"""NumPy's functions that arrange or place elements: ``resize``, ``block``, ``trim_zeros``, ``choose``,
``put_along_axis``, ``putmask``, ``place``, ``mask_indices``.

Compositions of table entries. ``putmask`` and ``place`` need no read: the
value for each masked position is picked on the device (its flat position,
or its rank among the masked ones, modulo the number of values).
``trim_zeros`` and ``mask_indices`` have shapes that depend on the data, so
they read it (wait).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from autopar.arrays import _manipulation as man
from autopar.arrays._array import NDArray
from autopar.arrays._elementwise import call


def resize(a: Any, new_shape: Any) -> Any:
    """``a``'s elements repeated (in C order) to fill ``new_shape``."""
    from autopar.arrays._creation import zeros

    x = man.reshape(man._array_like(a), (-1,))
    shape = (int(new_shape),) if isinstance(new_shape, (int, np.integer)) else tuple(int(n) for n in new_shape)
    if any(n < 0 for n in shape):
        raise ValueError(f"resize: new_shape={new_shape!r}; all sizes must be non-negative")
    size = math.prod(shape)
    if x.shape[0] == 0 or size == 0:
        return zeros(shape, dtype=x.dtype, device=x.device)
    repeats = -(-size // x.shape[0])
    return man.reshape(man.concat([x] * repeats)[:size], shape)


def _depth(obj: Any) -> int:
    return 1 + _depth(obj[0]) if isinstance(obj, list) and obj else (1 if isinstance(obj, list) else 0)


def block(arrays: Any) -> Any:
    """Assemble an array from nested lists of blocks: the innermost lists join along the last axis."""
    if isinstance(arrays, tuple):
        raise TypeError("block: arrays is a tuple; only lists nest blocks (NumPy's rule)")
    depth = _depth(arrays)
    leaves: list[Any] = []

    def collect(obj: Any) -> None:
        if isinstance(obj, list):
            if not obj:
                raise ValueError("block: lists cannot be empty")
            for o in obj:
                collect(o)
        else:
            leaves.append(man._array_like(obj))

    collect(arrays)
    ndim = max([depth] + [x.ndim for x in leaves])

    def build(obj: Any, level: int) -> Any:
        if not isinstance(obj, list):
            x = man._array_like(obj)
            return man.reshape(x, (1,) * (ndim - x.ndim) + x.shape)
        if _depth(obj) != depth - level:
            raise ValueError(f"block: the lists are nested to different depths; each must be {depth} deep")
        return man.concat([build(o, level + 1) for o in obj], axis=level - depth)

    return build(arrays, 0) if isinstance(arrays, list) else man._array_like(arrays)


def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """``filt`` without its leading (``'f'``) and/or trailing (``'b'``) zeros (reads it: waits)."""
    x = man._array_like(filt)
    if axis is not None or x.ndim != 1:
        if x.ndim != 1:
            raise ValueError(f"trim_zeros: filt has shape {x.shape}; only 1-D input is supported")
    trim = trim.lower()
    if not set(trim) <= {"f", "b"}:
        raise ValueError(f"trim_zeros: trim={trim!r}; expected 'f', 'b' or 'fb'")
    nz = np.nonzero(x.numpy())[0]
    if len(nz) == 0:
        return x[:0]
    start = int(nz[0]) if "f" in trim else 0
    stop = int(nz[-1]) + 1 if "b" in trim else x.shape[0]
    return x[start:stop]


def choose(a: Any, choices: Any, out: Any = None, mode: str = "raise") -> Any:
    """``choices[a[i]][i]`` for every index ``i`` (all broadcast together)."""
    from autopar.arrays._indexing import take_along_axis
    from autopar.arrays._manipulation import broadcast_arrays, stack

    idx = man._array_like(a)
    opts = [man._array_like(c) for c in choices] if not isinstance(choices, NDArray) else [choices[i] for i in range(choices.shape[0])]
    n = len(opts)
    if mode == "wrap":
        idx = call("remainder", idx, n)
    elif mode == "clip":
        idx = call("minimum", call("maximum", idx, 0), n - 1)
    elif mode != "raise":
        raise ValueError(f"choose: mode={mode!r}; expected 'raise', 'wrap' or 'clip'")
    else:
        from autopar.arrays._reductions import any as any_

        if bool(any_(call("logical_or", call("less", idx, 0), call("greater_equal", idx, n))).item()):
            raise ValueError(f"choose: an index is outside [0, {n}); use mode='wrap' or mode='clip'")
    *opts, idx = broadcast_arrays(*opts, idx)
    picked = take_along_axis(stack(opts), man.expand_dims(idx, axis=0), 0)[0]
    if out is None:
        return picked
    out[...] = picked
    return out


def put_along_axis(arr: Any, indices: Any, values: Any, axis: Any) -> None:
    """``arr[..., indices, ...] = values`` matched along ``axis`` (in place)."""
    from autopar.arrays._creation import arange

    if type(arr) is not NDArray:
        raise TypeError(f"put_along_axis: arr must be an autopar array (it is written in place); got {type(arr).__name__}")
    idx = man._array_like(indices)
    if axis is None:
        arr_flat = man.reshape(arr, (-1,))
        arr_flat[idx] = values
        return None
    ax = man.normalize_axis("put_along_axis", axis, arr.ndim)
    if idx.ndim != arr.ndim:
        raise ValueError(f"put_along_axis: indices have {idx.ndim} dimensions; they need arr's {arr.ndim}")
    key = []
    for d in range(arr.ndim):
        if d == ax:
            key.append(idx)
        else:
            shape = [1] * arr.ndim
            shape[d] = arr.shape[d]
            key.append(man.reshape(arange(arr.shape[d], device=arr.device), tuple(shape)))
    arr[tuple(key)] = values
    return None


def putmask(a: Any, mask: Any, values: Any) -> None:
    """``a.flat[n] = values.flat[n % len(values)]`` wherever ``mask.flat[n]`` (in place)."""
    from autopar.arrays._searching import where

    if type(a) is not NDArray:
        raise TypeError(f"putmask: a must be an autopar array (it is written in place); got {type(a).__name__}")
    m = man.broadcast_to(man._array_like(mask), a.shape)
    a[...] = where(m, resize(man._array_like(values), a.shape).astype(a.dtype), a)
    return None


def place(arr: Any, mask: Any, vals: Any) -> None:
    """The masked positions of ``arr`` take ``vals`` in order, repeated as needed (in place)."""
    from autopar.arrays._indexing import take
    from autopar.arrays._reductions import cumsum
    from autopar.arrays._searching import where

    if type(arr) is not NDArray:
        raise TypeError(f"place: arr must be an autopar array (it is written in place); got {type(arr).__name__}")
    m = man.reshape(man._array_like(mask), (-1,))
    if m.shape[0] != arr.size:
        raise ValueError(f"place: mask has {m.shape[0]} elements; it needs arr's {arr.size}")
    v = man.reshape(man._array_like(vals), (-1,)).astype(arr.dtype)
    if v.shape[0] == 0:
        raise ValueError("place: vals is empty; give at least one value")
    rank = call("remainder", cumsum(m.astype("int64")) - 1, v.shape[0])
    rank = call("maximum", rank, 0)
    flat = man.reshape(arr, (-1,))
    arr[...] = man.reshape(where(m, take(v, rank), flat), arr.shape)
    return None


def mask_indices(n: int, mask_func: Any, k: Any = 0) -> tuple[Any, ...]:
    """The indices where ``mask_func(ones((n, n)), k)`` is non-zero (``triu``, ``tril``...; reads: waits)."""
    from autopar.arrays._creation import ones
    from autopar.arrays._searching import nonzero

    return nonzero(call("not_equal", mask_func(ones((n, n), dtype="int64"), k), 0))
