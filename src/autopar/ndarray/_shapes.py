"""Shape rules, applied when an operation is called (not by running the kernel).

Each function returns the result shape or raises ``ValueError`` naming the
operation, the shapes and what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

Shape = tuple[int, ...]


def normalize_shape(shape: Any, what: str = "shape") -> Shape:
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        out = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{what}={shape!r}: expected an int or a sequence of ints") from None
    if any(s < 0 for s in out):
        raise ValueError(f"{what}={shape!r}: dimensions must be >= 0")
    return out


def broadcast(op: str, a: Shape, b: Shape) -> Shape:
    if a == b:
        return a
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + a
    pb = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError(f"{op}: shapes {a} and {b} do not broadcast: {x} != {y} and neither is 1")
    return tuple(out)


def broadcasts_to(src: Shape, dst: Shape) -> bool:
    """True when an array of shape ``src`` can be broadcast to ``dst`` (for assignment)."""
    if len(src) > len(dst):
        return all(s == 1 for s in src[: len(src) - len(dst)]) and broadcasts_to(src[len(src) - len(dst) :], dst)
    return all(s == d or s == 1 for s, d in zip(src, dst[len(dst) - len(src) :]))


def matmul(op: str, a: Shape, b: Shape) -> Shape:
    if not a or not b:
        raise ValueError(f"{op}: shapes {a} and {b}: operands must have at least one dimension (use * for scalars)")
    k1 = a[-1]
    k2 = b[0] if len(b) == 1 else b[-2]
    if k1 != k2:
        raise ValueError(f"{op}: shapes {a} and {b} do not align: {k1} != {k2}")
    if len(a) == 1 and len(b) == 1:
        return ()
    if len(b) == 1:
        return a[:-1]
    if len(a) == 1:
        return b[:-2] + b[-1:]
    batch = broadcast(op, a[:-2], b[:-2])
    return batch + (a[-2], b[-1])


def mm(a: Shape, b: Shape) -> Shape:
    if len(a) != 2 or len(b) != 2:
        raise ValueError(f"mm: shapes {a} and {b}: both operands must be 2-D (use matmul for other ranks)")
    return matmul("mm", a, b)


def dot(a: Shape, b: Shape) -> Shape:
    """NumPy's dot: scalars multiply; else sum over a's last and b's second-to-last axis."""
    if not a or not b:
        return broadcast("dot", a, b)
    k1 = a[-1]
    k2 = b[0] if len(b) == 1 else b[-2]
    if k1 != k2:
        raise ValueError(f"dot: shapes {a} and {b} do not align: {k1} (dim {len(a) - 1}) != {k2}")
    if len(b) == 1:
        return a[:-1]
    return a[:-1] + b[:-2] + b[-1:]


def axes(op: str, axis: Any, ndim: int) -> tuple[int, ...] | None:
    if axis is None:
        return None
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for ax in items:
        if not isinstance(ax, int) or isinstance(ax, bool):
            raise TypeError(f"{op}: axis={axis!r}: expected an int or a tuple of ints")
        if not -ndim <= ax < max(ndim, 1):
            raise ValueError(f"{op}: axis {ax} is out of range for an array of {ndim} dimension(s)")
        out.append(ax % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axis={axis!r} repeats an axis")
    return tuple(sorted(out))


def reduce(shape: Shape, axes_: tuple[int, ...] | None, keepdims: bool) -> Shape:
    if axes_ is None:
        return (1,) * len(shape) if keepdims else ()
    if keepdims:
        return tuple(1 if i in axes_ else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes_)


def reshape(shape: Shape, new: Any) -> Shape:
    if isinstance(new, int) and not isinstance(new, bool):
        new = (new,)
    new = tuple(int(s) for s in new)
    size = math.prod(shape)
    unknown = [i for i, s in enumerate(new) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in new):
        raise ValueError(f"reshape: new shape {new}: at most one dimension may be -1, the others >= 0")
    if unknown:
        known = math.prod(s for s in new if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"reshape: cannot reshape an array of shape {shape} (size {size}) into {new}")
        new = tuple(size // known if s == -1 else s for s in new)
    if math.prod(new) != size:
        raise ValueError(
            f"reshape: cannot reshape an array of shape {shape} (size {size}) into {new} (size {math.prod(new)})"
        )
    return new


def transpose(shape: Shape, order: Sequence[int] | None) -> tuple[Shape, tuple[int, ...]]:
    n = len(shape)
    if order is None or len(order) == 0:
        perm = tuple(reversed(range(n)))
    else:
        perm = tuple(int(a) % n if n else 0 for a in order)
        if sorted(perm) != list(range(n)):
            raise ValueError(f"transpose: axes {tuple(order)} are not a permutation of the {n} axes of {shape}")
    return tuple(shape[i] for i in perm), perm


def basic_index(shape: Shape, key: tuple[Any, ...]) -> Shape:
    """Result shape of indexing with ints, slices, None and Ellipsis."""
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("index: an index can only have a single ellipsis ('...')")
    if n_real > len(shape):
        raise IndexError(f"index: too many indices for an array of shape {shape}: {n_real} were given")
    out: list[int] = []
    dim = 0
    for k in key:
        if k is None:
            out.append(1)
        elif k is Ellipsis:
            span = len(shape) - n_real
            out.extend(shape[dim : dim + span])
            dim += span
        elif isinstance(k, slice):
            out.append(len(range(*k.indices(shape[dim]))))
            dim += 1
        else:
            size = shape[dim]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for axis {dim} with size {size}")
            dim += 1
    out.extend(shape[dim:])
    return tuple(out)
