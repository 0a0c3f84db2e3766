"""Manipulation: views computed at the call, and the ops that copy.

Views (NumPy's: they share the storage, push nothing, and writes through
them reach the base): ``permute_dims``/``transpose``/``T``/``mT``,
``swapaxes``, ``moveaxis``, ``expand_dims``, ``squeeze``, ``flip`` (negative
strides, see ``_views.py``) and ``reshape`` of C-contiguous elements.
Everything else here is a table entry whose shape comes from torch's meta
tensors: ``concat``, ``stack``, ``broadcast_to``, ``roll``, ``repeat``,
``tile``, ``unstack``; ``meshgrid`` is ``reshape`` plus ``broadcast_to``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from autopar.arrays import _dtypes, _views
from autopar.arrays._dispatch import bind
from autopar.arrays._table import TABLE, define, promoting, same
from autopar.errors import AxisError

Shape = tuple[int, ...]


def normalize_axis(op: str, axis: Any, ndim: int, what: str = "axis") -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        try:
            axis = axis.__index__()
        except (AttributeError, TypeError):
            raise TypeError(f"{op}: {what}={axis!r} must be an integer") from None
    if not -ndim <= axis < ndim:
        raise AxisError(
            f"{op}: {what}={axis} is out of range for an array of {ndim} dimension(s); "
            f"valid values are {-ndim}..{ndim - 1}" if ndim else f"{op}: {what}={axis}: a 0-d array has no axes"
        )
    return axis % ndim


def normalize_axes(op: str, axis: Any, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """``axis`` (an int or a sequence of ints) as sorted non-negative axes; no repeats."""
    items = (axis,) if isinstance(axis, int) or not isinstance(axis, (tuple, list)) else tuple(axis)
    out = tuple(normalize_axis(op, a, ndim, what) for a in items)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: {what}={axis!r} repeats an axis")
    return tuple(sorted(out))


def _array_like(x: Any) -> Any:
    if type(x) is _array.NDArray:
        return x
    from autopar.arrays._creation import asarray

    return asarray(x)


def _view(x: Any, view: Callable[[_views.View], _views.View]) -> Any:
    return _array.derive(x, view)


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    x = _array_like(x)
    perm = tuple(normalize_axis("permute_dims", a, x.ndim, "axes") for a in axes)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: axes {tuple(axes)} are not a permutation of the {x.ndim} axes of {x.shape}")
    return _view(x, lambda v: _views.permute(v, perm))


def transpose(x: Any, axes: Any = None) -> Any:
    """NumPy's ``transpose``: reverse the axes, or permute them as ``axes`` says (a view)."""
    x = _array_like(x)
    return permute_dims(x, tuple(reversed(range(x.ndim))) if axes is None else tuple(axes))


def matrix_transpose(x: Any, /) -> Any:
    x = _array_like(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: the array has shape {x.shape}; it needs at least 2 dimensions")
    perm = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    return permute_dims(x, perm)


def swapaxes(x: Any, axis1: int, axis2: int) -> Any:
    x = _array_like(x)
    a, b = normalize_axis("swapaxes", axis1, x.ndim), normalize_axis("swapaxes", axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return permute_dims(x, perm)


def moveaxis(x: Any, source: Any, destination: Any, /) -> Any:
    x = _array_like(x)
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} differ in length")
    src = tuple(normalize_axis("moveaxis", a, x.ndim, "source") for a in src)
    dst = tuple(normalize_axis("moveaxis", a, x.ndim, "destination") for a in dst)
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError("moveaxis: source and destination must not repeat an axis")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


def expand_dims(x: Any, /, axis: Any = 0) -> Any:
    x = _array_like(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    n = x.ndim + len(axes)
    where = normalize_axes("expand_dims", axes, n)

    def expanded(v: _views.View) -> _views.View:
        shape, strides = list(v.shape), list(v.strides)
        for a in where:
            shape.insert(a, 1)
            strides.insert(a, 0)
        return _views.View(v.offset, tuple(shape), tuple(strides))

    return _view(x, expanded)


def squeeze(x: Any, /, axis: Any = None) -> Any:
    x = _array_like(x)
    if axis is None:
        axes = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        axes = normalize_axes("squeeze", axis, x.ndim)
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}; only axes of size 1 can be removed")
    keep = [i for i in range(x.ndim) if i not in axes]
    return _view(x, lambda v: _views.View(v.offset, tuple(v.shape[i] for i in keep), tuple(v.strides[i] for i in keep)))


def flip(x: Any, /, axis: Any = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes by default): a view, as in NumPy."""
    x = _array_like(x)
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes("flip", axis, x.ndim)
    return _view(x, lambda v: _views.flip(v, axes))


def reshape_shape(op: str, shape: Shape, new: Any) -> Shape:
    if isinstance(new, int) and not isinstance(new, bool):
        new = (new,)
    if type(new) is tuple and all(type(s) is int for s in new):  # the common spelling: as is
        if -1 not in new and math.prod(new) == math.prod(shape) and min(new, default=0) >= 0:
            return new
    try:
        new = tuple(int(s.__index__()) for s in new)
    except (AttributeError, TypeError):
        raise TypeError(f"{op}: shape={new!r} must be an int or a tuple of ints") from None
    size = math.prod(shape)
    unknown = [i for i, s in enumerate(new) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in new):
        raise ValueError(f"{op}: new shape {new}: at most one dimension may be -1, the others >= 0")
    if unknown:
        known = math.prod(s for s in new if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"{op}: cannot reshape an array of shape {shape} (size {size}) into {new}")
        new = tuple(size // known if s == -1 else s for s in new)
    if math.prod(new) != size:
        raise ValueError(
            f"{op}: cannot reshape an array of shape {shape} (size {size}) into {new} (size {math.prod(new)})"
        )
    return new


def reshape(x: Any, /, shape: Any, order: str = "C", *, copy: bool | None = None) -> Any:
    """A view when the elements are C-contiguous (and ``copy`` is not True), else a copy, as in NumPy.
    ``order="F"`` reads and places the elements first index fastest: the reshape of the transpose,
    transposed."""
    x = _array_like(x)
    if order == "F":
        new = reshape_shape("reshape", x.shape, shape)
        return permute_dims(reshape(permute_dims(x, _reversed(x.ndim)), new[::-1], copy=copy), _reversed(len(new)))
    _order("reshape", order)
    new = reshape_shape("reshape", x.shape, shape)
    if copy is not True and x._view is None and x._ag is None and x._storage.contiguous:
        # a whole C-contiguous storage, nothing to record: the view at once (what derive would give)
        storage = x._storage
        view = None if new == storage.shape else _views.View(0, new, _views.c_strides(new))
        return _array.make(new, x._dtype, x.device, storage, view)
    if copy is not True:
        if _views.reshape(_views.layout(x._storage, x._view), new) is not None:
            return _view(x, lambda v: _views.reshape(v, new))  # type: ignore[arg-type,return-value]
        if copy is False:
            raise ValueError("reshape: copy=False, but these elements cannot be reshaped without a copy")
    return bind(TABLE["reshape"], (x,), {"shape": new})


def _reshape_kernel(t: torch.Tensor, shape: Shape) -> torch.Tensor:
    return t.reshape(shape).clone()


define("reshape", _reshape_kernel, same(), shape=lambda op, shapes, s: (s["shape"],))


def ravel(x: Any, order: str = "C") -> Any:
    """The elements in one dimension: C order (``"K"`` and ``"A"`` too: autopar stores C order), or
    ``"F"``, first index fastest."""
    if order == "F":
        x = _array_like(x)
        return reshape(permute_dims(x, _reversed(x.ndim)), (-1,))
    _order("ravel", order)
    return reshape(x, (-1,))


def _reversed(n: int) -> tuple[int, ...]:
    return tuple(range(n - 1, -1, -1))


def _order(op: str, order: Any) -> None:
    if order not in ("C", "A", "K", None):
        raise ValueError(f"{op}: order={order!r}; expected 'C' or 'F' ('A' and 'K' are 'C': autopar stores C order)")


# -- copying manipulations (shapes from meta tensors) --------------------------------------------


def _concat(*ts: torch.Tensor, axis: int | None) -> torch.Tensor:
    if axis is None:
        return torch.cat([t.reshape(-1) for t in ts])
    return torch.cat(ts, dim=axis)


def _stack(*ts: torch.Tensor, axis: int) -> torch.Tensor:
    return torch.stack(ts, dim=axis)


def _broadcast_to(t: torch.Tensor, shape: Shape) -> torch.Tensor:
    return torch.broadcast_to(t, shape).clone()


def _roll(t: torch.Tensor, shift: Any, axis: Any) -> torch.Tensor:
    if axis is None:
        return torch.roll(t.reshape(-1), shift).reshape(t.shape)
    return torch.roll(t, shift, axis)


def _repeat(t: torch.Tensor, *rest: torch.Tensor, repeats: Any = None, axis: int | None) -> torch.Tensor:
    r = rest[0] if rest else repeats
    if isinstance(r, torch.Tensor) and r.dtype is not torch.int64:
        r = r.to(torch.int64)  # torch repeats by int64 counts only (uint8 has no kernel)
    if axis is None:
        return torch.repeat_interleave(t.reshape(-1), r)
    return torch.repeat_interleave(t, r, dim=axis)


def _tile(t: torch.Tensor, reps: Shape) -> torch.Tensor:
    return torch.tile(t, reps)


def _unstack(t: torch.Tensor, axis: int) -> tuple[torch.Tensor, ...]:
    return tuple(u.clone() for u in torch.unbind(t, dim=axis))


define("concat", _concat, promoting("any"))
define("stack", _stack, promoting("any"))
define("broadcast_to", _broadcast_to, same())
define("roll", _roll, same())
define("repeat", _repeat, same(), data_dependent=False)
define("repeat_by_array", _repeat, same(), data_dependent=True)
define("tile", _tile, same())


def _sequence(op: str, arrays: Any) -> list[Any]:
    if type(arrays) is _array.NDArray or not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{op}: expected a list or tuple of arrays, got {type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{op}: needs at least one array")
    return [_array_like(a) for a in arrays]


def concat(arrays: Any, /, *, axis: int | None = 0) -> Any:
    xs = _sequence("concat", arrays)
    if axis is not None:
        ndim = xs[0].ndim
        if ndim == 0:
            raise ValueError("concat: zero-dimensional arrays cannot be concatenated; use stack")
        axis = normalize_axis("concat", axis, ndim)
        for x in xs[1:]:
            if x.ndim != ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != axis):
                raise ValueError(
                    f"concat: shapes {xs[0].shape} and {x.shape} differ outside axis {axis}; "
                    f"all arrays need the same shape except along the axis they are joined on"
                )
    return bind(TABLE["concat"], xs, {"axis": axis})


def stack(arrays: Any, /, *, axis: int = 0) -> Any:
    xs = _sequence("stack", arrays)
    for x in xs[1:]:
        if x.shape != xs[0].shape:
            raise ValueError(f"stack: shapes {xs[0].shape} and {x.shape} differ; stacked arrays need one shape")
    axis = normalize_axis("stack", axis, xs[0].ndim + 1)
    return bind(TABLE["stack"], xs, {"axis": axis})


def broadcast_to(x: Any, /, shape: Any) -> Any:
    """``x`` broadcast to ``shape`` (a copy: NumPy returns a read-only view)."""
    x = _array_like(x)
    shape = tuple(int(s) for s in shape)
    n = len(shape)
    if x.ndim > n or any(a != 1 and a != b for a, b in zip(x.shape, shape[n - x.ndim :])):
        raise ValueError(f"broadcast_to: an array of shape {x.shape} cannot be broadcast to {shape}")
    return bind(TABLE["broadcast_to"], (x,), {"shape": shape})


def broadcast_arrays(*arrays: Any) -> list[Any]:
    from autopar.arrays._elementwise import broadcast_shapes

    xs = [_array_like(a) for a in arrays]
    shape = broadcast_shapes("broadcast_arrays", tuple(x.shape for x in xs)) if xs else ()
    return [x if x.shape == shape else broadcast_to(x, shape) for x in xs]


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing={indexing!r}; expected 'xy' or 'ij'")
    xs = [_array_like(a) for a in arrays]
    for x in xs:
        if x.ndim != 1:
            raise ValueError(f"meshgrid: every array must be 1-D; got shape {x.shape}")
    sizes = [x.shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(xs):
        axis = i
        if indexing == "xy" and len(xs) >= 2 and i < 2:
            axis = 1 - i
        shape = [1] * len(xs)
        shape[axis] = x.shape[0]
        out.append(broadcast_to(reshape(x, tuple(shape)), tuple(sizes)))
    return out


def roll(x: Any, /, shift: Any, axis: Any = None) -> Any:  # axis positional too: NumPy's roll(a, shift, axis)
    x = _array_like(x)
    if axis is None:
        if not isinstance(shift, int):
            raise TypeError("roll: with axis=None, shift must be an int")
        return bind(TABLE["roll"], (x,), {"shift": shift, "axis": None})
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, int) else tuple(shift)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} differ in length")
    axes = tuple(normalize_axis("roll", a, x.ndim) for a in axes)
    return bind(TABLE["roll"], (x,), {"shift": shifts, "axis": axes})


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    x = _array_like(x)
    if axis is not None:
        axis = normalize_axis("repeat", axis, x.ndim)
    if type(repeats) is _array.NDArray:
        _dtypes.check_category("repeat", repeats._dtype, "integer", "repeats")
        return bind(TABLE["repeat_by_array"], (x, repeats), {"axis": axis})
    if isinstance(repeats, (list, tuple)):
        from autopar.arrays._creation import asarray

        return repeat(x, asarray(repeats, dtype=_dtypes.int64, device=x.device), axis=axis)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 0:
        raise ValueError(f"repeat: repeats={repeats!r} must be an int >= 0 or an integer array")
    return bind(TABLE["repeat"], (x,), {"repeats": repeats, "axis": axis})


def tile(x: Any, repetitions: Any, /) -> Any:
    x = _array_like(x)
    reps = (repetitions,) if isinstance(repetitions, int) else tuple(int(r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions {repetitions!r} must be >= 0")
    return bind(TABLE["tile"], (x,), {"reps": reps})


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    x = _array_like(x)
    axis = normalize_axis("unstack", axis, x.ndim)
    n = x.shape[axis]
    def part(i: int) -> Callable[[_views.View], _views.View]:
        return lambda v: _views.index("unstack", v, (slice(None),) * axis + (i,))

    return tuple(_view(x, part(i)) for i in range(n))


from autopar.arrays import _array  # noqa: E402
