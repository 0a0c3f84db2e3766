"""Indexing: basic indexes are views; integer and boolean arrays go through the op table.

A key made only of ints, slices (any step, negative too), ``None`` and
``...`` gives a view (``_views.index``), computed at the call. A key with
arrays in it (lists, NumPy arrays, autopar integer or bool arrays, a 0-d
integer array) is NumPy's advanced indexing, which torch implements with the
same rules; torch has no negative-step slices, so those dimensions are first
flipped *as a view* and the slice made ascending, and the rest of the key is
left as written -- so ``x[::-1, [0, 2]]`` and ``x[[0, 2], [1, 3]]`` mean what
they mean in NumPy. Index data given from the host (lists, NumPy) is
checked against the bounds at the call and uploaded like any array. A boolean
array index makes the result shape depend on data: that call waits.

Assignment writes through a view (``_dispatch.bind_into``): a basic key
writes the value into the view; an advanced key computes the updated
elements of the target (``index_put``) and writes them back. Values are cast
to the target's dtype as NumPy does (unsafe casting).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from autopar.arrays import _dtypes, _lean_assign, _views
from autopar.arrays._dispatch import bind, bind_into, shape_of
from autopar.arrays._table import TABLE, define, fixed, same

_PLAIN = (int, slice, type(None), type(Ellipsis))


def _normalize(op: str, key: Any) -> tuple[Any, ...]:
    key = key if type(key) is tuple else (key,)
    out = []
    for k in key:
        t = type(k)
        if t is int or t is slice or k is None or k is Ellipsis:
            if t is slice and not all(v is None or type(v) is int for v in (k.start, k.stop, k.step)):
                k = slice(*(_index_int(op, v) for v in (k.start, k.stop, k.step)))
            if t is slice and k.step == 0:
                raise ValueError(f"{op}: slice step cannot be zero")
            out.append(k)
        elif t is bool or isinstance(k, np.bool_):
            out.append(bool(k))
        elif isinstance(k, np.integer):
            out.append(int(k))
        elif t is _array.NDArray or isinstance(k, (list, np.ndarray)):
            out.append(k)
        elif isinstance(k, torch.Tensor):
            raise IndexError(f"{op}: index with autopar arrays (autopar.asarray(t)), not torch tensors")
        elif hasattr(k, "__index__"):
            out.append(k.__index__())
        else:
            raise IndexError(
                f"{op}: only integers, slices, None, ..., and integer or boolean arrays are valid indices; "
                f"got {k!r} ({t.__name__})"
            )
    return tuple(out)


def _index_int(op: str, v: Any) -> Any:
    if v is None or type(v) is int:
        return v
    try:
        return v.__index__()
    except (AttributeError, TypeError):
        raise IndexError(f"{op}: slice bounds must be integers or None, not {v!r}") from None


def _is_basic(key: tuple[Any, ...]) -> bool:
    for k in key:
        if type(k) not in _PLAIN or type(k) is bool:
            return False
    return True


def getitem(a: Any, key: Any) -> Any:
    key = _normalize("index", key)
    if _is_basic(key):
        return _array.derive(a, lambda v: _views.index("index", v, key))
    source, template, arrays, masked = _advanced("index", a, key)
    entry = TABLE["index_masked" if masked else "index"]
    return bind(entry, (source, *arrays), {"key": template})


def setitem(a: Any, key: Any, value: Any) -> None:
    if _lean_assign.assign(a, key, value):  # x[k] = 3, x[2:6] = y: the lean path (its note)
        return
    key = _normalize("index assignment", key)
    if type(value) is not _array.NDArray and type(value) not in (bool, int, float, complex):
        value = _value(value, a)
    if _is_basic(key):
        target = _array.derive(a, lambda v: _views.index("index assignment", v, key))
        bind_into(TABLE["assign"], target, (value,), what="index assignment", casting="unsafe")
        return
    target, template, arrays, masked = _advanced("index assignment", a, key)
    if not masked and type(value) is _array.NDArray:
        indexed = shape_of(TABLE["index"], (target, *arrays), {"key": template})
        if not _broadcasts(value.shape, indexed):
            raise ValueError(
                f"index assignment: a value of shape {value.shape} cannot be broadcast to the indexed shape {indexed}"
            )
    bind_into(TABLE["index_put"], target, (target, *arrays, value), {"key": template},
              what="index assignment", casting="unsafe")  # fmt: skip


def _value(value: Any, like: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    from autopar.arrays._creation import asarray

    return asarray(value, device=like.device)


def _broadcasts(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    while len(src) > len(dst) and src[0] == 1:
        src = src[1:]
    if len(src) > len(dst):
        return False
    return all(s == d or s == 1 for s, d in zip(src, dst[len(dst) - len(src) :]))


def _advanced(op: str, a: Any, key: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...], list[Any], bool]:
    """(source view with reversed slices flipped, key template, index arrays, has a bool mask)."""
    n_real = 0
    for k in key:
        if k is None or k is Ellipsis or type(k) is bool:
            continue
        if type(k) is _array.NDArray and k._dtype.kind == "b":
            n_real += k.ndim  # a 0-d mask indexes no dimension (it adds one of size 1 or 0)
        elif isinstance(k, (list, np.ndarray)) and np.asarray(k).dtype == np.bool_:
            n_real += np.asarray(k).ndim
        else:
            n_real += 1
    if n_real > a.ndim:
        raise IndexError(f"{op}: too many indices for an array of shape {a.shape}: {n_real} were given")
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError(f"{op}: an index can have only one ellipsis ('...')")
    template: list[Any] = []
    arrays: list[Any] = []
    flips: list[int] = []
    masked = False
    dim = 0
    for k in key:
        if k is None or type(k) is bool:
            template.append(k)
        elif k is Ellipsis:
            template.append("...")
            dim += a.ndim - n_real
        elif type(k) is int:
            size = a.shape[dim]
            if not -size <= k < size:
                raise IndexError(f"{op}: index {k} is out of bounds for axis {dim} with size {size}")
            template.append(k)
            dim += 1
        elif type(k) is slice:
            start, stop, step = k.indices(a.shape[dim])
            if step < 0:
                picked = range(start, stop, step)
                flips.append(dim)
                n = a.shape[dim]
                k = slice(n - 1 - picked[0], n - picked[-1], -step) if len(picked) else slice(0, 0)
                start, stop, step = k.indices(n)
            template.append(("s", start, stop, step))
            dim += 1
        else:
            arr = k if type(k) is _array.NDArray else _host_index(op, k, a, dim)
            if arr._dtype.kind == "b":
                masked = True
                indexed = a.shape[dim : dim + arr.ndim]
                # the standard: each mask dimension is the array's or 0 (which selects nothing)
                if len(indexed) != arr.ndim or any(m not in (n, 0) for m, n in zip(arr.shape, indexed)):
                    raise IndexError(
                        f"{op}: boolean index of shape {arr.shape} does not match the indexed dimensions "
                        f"{indexed} of the array of shape {a.shape}; each mask dimension must equal the "
                        "array's or be 0"
                    )
                dim += arr.ndim
            else:
                _dtypes.check_category(op, arr._dtype, "integer or boolean", "index")
                dim += 1
            if arr.device != a.device:
                arr = arr.to(a.device, non_blocking=True)
            template.append(("a", len(arrays)))
            arrays.append(arr)
    source = a
    if flips:
        source = _array.derive(a, lambda v: _views.flip(v, tuple(flips)))
    return source, tuple(template), arrays, masked


def _host_index(op: str, k: Any, a: Any, dim: int) -> Any:
    """Index data from the host: checked against the bounds now, then uploaded like any array."""
    arr = np.asarray(k)
    if arr.dtype == np.bool_:
        pass
    elif arr.size == 0:
        arr = arr.astype(np.int64)
    elif not np.issubdtype(arr.dtype, np.integer):
        raise IndexError(f"{op}: index arrays must hold integers or booleans, not {arr.dtype}")
    elif dim < a.ndim:
        size = a.shape[dim]
        hi, lo = int(arr.max()), int(arr.min())
        if hi >= size or lo < -size:
            bad = hi if hi >= size else lo
            raise IndexError(f"{op}: index {bad} is out of bounds for axis {dim} with size {size}")
    from autopar.arrays._creation import asarray

    return asarray(arr, device=a.device)


def _torch_key(template: tuple[Any, ...], idx: tuple[torch.Tensor, ...], t: torch.Tensor) -> tuple[Any, Any, Any]:
    """The key for torch, and the result shapes NumPy and torch give for it.

    NumPy treats an int next to index arrays as one more index array (of
    shape ()), and a boolean array as its ``nonzero()``; torch treats ints as
    basic indexes. So every int and 0-d index becomes a 1-element tensor (on
    the tensor's device: a fill, not a copy from the host), masks become
    their nonzero indices, and the result is reshaped to NumPy's shape, which
    differs from torch's at most by that 1-element dimension.
    """
    key: list[Any] = []
    adv: list[tuple[int, ...]] = []
    where: list[int] = []
    for k in template:
        if type(k) is tuple:
            if k[0] == "s":
                key.append(slice(k[1], k[2], k[3]))
                continue
            i = idx[k[1]]
            if i.dtype is torch.bool and not i.ndim:
                key.append(bool(i.item()))  # a 0-d mask is NumPy's x[True] / x[False]
                continue
            if i.dtype is torch.bool:
                for nz in torch.nonzero(i, as_tuple=True):
                    where.append(len(key))
                    key.append(nz)
                    adv.append(tuple(nz.shape))
                continue
            where.append(len(key))
            adv.append(tuple(i.shape))
            key.append(i.reshape(1) if i.ndim == 0 else i)
        elif type(k) is int:
            where.append(len(key))
            adv.append(())
            key.append(torch.full((1,), k, dtype=torch.int64, device=t.device))
        elif k == "...":
            key.append(Ellipsis)
        else:
            key.append(k)
    if not adv:
        return tuple(key), None, None
    numpy_b = torch.broadcast_shapes(*adv) if adv else ()
    torch_b = torch.broadcast_shapes(*[a if a else (1,) for a in adv])
    separated = where[-1] - where[0] + 1 != len(where)
    consumed = sum(1 for k in key if type(k) is slice) + len(adv)
    parts: list[Any] = []
    dim = 0
    for j, k in enumerate(key):
        if k is None:
            parts.append(1)
        elif type(k) is bool:
            parts.append(1 if k else 0)
        elif k is Ellipsis:
            span = t.ndim - consumed
            parts.extend(t.shape[dim : dim + span])
            dim += span
        elif type(k) is slice:
            parts.append(len(range(*k.indices(t.shape[dim]))))
            dim += 1
        else:
            if j == where[0]:
                parts.append("A")
            dim += 1
    parts.extend(t.shape[dim:])
    plain = [p for p in parts if p != "A"]

    def shape(b: Any) -> tuple[int, ...]:
        if separated:
            return (*b, *plain)
        out: list[int] = []
        for p in parts:
            out.extend(b if p == "A" else (p,))
        return tuple(out)

    return tuple(key), shape(numpy_b), shape(torch_b)


def _index(t: torch.Tensor, *idx: torch.Tensor, key: tuple[Any, ...]) -> torch.Tensor:
    k, numpy_shape, torch_shape = _torch_key(key, idx, t)
    out = t[k]
    return out if numpy_shape is None or numpy_shape == torch_shape else out.reshape(numpy_shape)


def _index_put(t: torch.Tensor, *rest: torch.Tensor, key: tuple[Any, ...]) -> torch.Tensor:
    out = t.clone()
    k, numpy_shape, torch_shape = _torch_key(key, rest[:-1], t)
    value = rest[-1].to(out.dtype)
    if value.device != out.device and value.dim() == 0:  # a Python number (a 0-d CPU tensor): filled
        value = torch.full((), value.item(), dtype=out.dtype, device=out.device)  # on the GPU, no copy, no sync
    if numpy_shape is not None and numpy_shape != torch_shape:
        value = torch.broadcast_to(value, numpy_shape).reshape(torch_shape)
    out[k] = value
    return out


def _assign(v: torch.Tensor) -> torch.Tensor:
    return v


def _take(t: torch.Tensor, i: torch.Tensor, axis: int | None) -> torch.Tensor:
    if axis is None:
        return t.reshape(-1)[i]
    # NumPy: indices of any shape, which replaces the axis in the result's shape
    out = torch.index_select(t, axis, i.reshape(-1))
    return out if i.ndim == 1 else out.reshape(t.shape[:axis] + i.shape + t.shape[axis + 1:])


def _take_along(t: torch.Tensor, i: torch.Tensor, axis: int | None) -> torch.Tensor:
    return torch.take_along_dim(t, i, dim=axis)


def _first(d: tuple[Any, ...], s: dict[str, Any]) -> tuple[Any, ...]:
    return (d[0],)


define("index", _index, fixed(_first))
define("index_masked", _index, fixed(_first), data_dependent=True)
# In place only (through bind_into), and in-place writes are never recorded for gradients (_autograd.py).
define("index_put", _index_put, fixed(_first), shape=lambda op, shapes, s: (shapes[0],), differentiable=False)
define("assign", _assign, same(), shape=lambda op, shapes, s: (shapes[0],), differentiable=False)
define("take", _take, fixed(_first))
define("take_along_axis", _take_along, fixed(_first))


def take(x: Any, indices: Any, /, axis: int | None = None, out: Any = None, mode: str = "raise") -> Any:
    """The elements at ``indices`` along ``axis`` (of the flattened array when ``axis`` is None, as NumPy);
    ``mode``: ``"raise"`` out-of-range indices, ``"wrap"`` them around or ``"clip"`` them to the ends."""
    from autopar.arrays._manipulation import _array_like, normalize_axis

    x = _array_like(x)
    if axis is None and x.ndim != 1:  # NumPy: the flattened array
        from autopar.arrays._manipulation import reshape

        x = reshape(x, (-1,))
    if out is not None:
        from autopar.arrays._keywords import finish

        return finish("take", take(x, indices, axis=axis, mode=mode), out)
    if mode != "raise":
        if mode not in ("wrap", "clip"):
            raise ValueError(f"take: mode={mode!r}; expected 'raise', 'wrap' or 'clip'")
        n = x.shape[0 if axis is None else normalize_axis("take", axis, x.ndim)]
        if n == 0:
            raise IndexError("take: cannot take from an empty axis with mode='wrap' or 'clip'")
        i = _array_like(indices)
        indices = i % n if mode == "wrap" else i.clip(0, n - 1)
    if type(indices) is not _array.NDArray:
        indices = _host_index("take", indices, x, 0 if axis is None else normalize_axis("take", axis, x.ndim))
    _dtypes.check_category("take", indices._dtype, "integer", "indices")
    axis = normalize_axis("take", 0 if axis is None else axis, x.ndim)
    return bind(TABLE["take"], (x, indices), {"axis": axis})


def take_along_axis(x: Any, indices: Any, axis: int | None) -> Any:
    from autopar.arrays._manipulation import _array_like, normalize_axis

    x, indices = _array_like(x), _array_like(indices)
    if axis is not None:
        axis = normalize_axis("take_along_axis", axis, x.ndim)
    return bind(TABLE["take_along_axis"], (x, indices), {"axis": axis})


from autopar.arrays import _array  # noqa: E402
