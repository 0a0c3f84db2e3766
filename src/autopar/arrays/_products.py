"""Products: ``matmul`` and its relatives, as table entries.

Inputs are promoted together before the kernel (``arange(3) @ ones(3)`` is
``int64 @ float32``: both reach torch as float64, NumPy's answer). Work
counts multiply-adds, so a (1, n) @ (n, 1) product is not "tiny" for its
one-element result. ``matmul``'s shape rule is by hand (it is hot, and its
message says which dimensions do not align); the rest come from meta
tensors.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from autopar.arrays import _dtypes
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._elementwise import broadcast_shapes
from autopar.arrays._manipulation import _array_like, normalize_axis
from autopar.arrays._table import TABLE, define, elements, promoting

Shape = tuple[int, ...]


def matmul_shape(op: str, shapes: tuple[Shape, ...], s: dict[str, Any]) -> tuple[Shape, ...]:
    a, b = shapes
    if not a or not b:
        raise ValueError(f"{op}: shapes {a} and {b}: operands must have at least one dimension (use * for scalars)")
    k1 = a[-1]
    k2 = b[0] if len(b) == 1 else b[-2]
    if k1 != k2:
        raise ValueError(
            f"{op}: shapes {a} and {b} do not align: {k1} (last dimension of the first) != {k2} "
            f"({'only' if len(b) == 1 else 'second-to-last'} dimension of the second)"
        )
    if len(a) == 1 and len(b) == 1:
        return ((),)
    if len(b) == 1:
        return (a[:-1],)
    if len(a) == 1:
        return (b[:-2] + b[-1:],)
    return (broadcast_shapes(op, (a[:-2], b[:-2])) + (a[-2], b[-1]),)


def _madds(in_shapes: tuple[Shape, ...], out_shapes: tuple[Shape, ...], s: dict[str, Any]) -> int:
    """Elements read and written, plus one multiply-add per element of the result per summed term."""
    k = in_shapes[0][-1] if in_shapes[0] else 1
    return elements(in_shapes, out_shapes, s) + math.prod(out_shapes[0]) * k


def _matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)


def _dot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if y.ndim <= 2 and x.ndim <= 2 or y.ndim == 1:
        return torch.matmul(x, y)
    return torch.tensordot(x, y, dims=([x.ndim - 1], [y.ndim - 2]))


def _vecdot(a: torch.Tensor, b: torch.Tensor, axis: int) -> torch.Tensor:
    a, b = torch.broadcast_tensors(a, b)
    if a.is_floating_point() or a.is_complex():
        return torch.linalg.vecdot(a, b, dim=axis)
    return (a * b).sum(dim=axis)  # torch.linalg.vecdot has no integer kernel


def _tensordot(a: torch.Tensor, b: torch.Tensor, axes: Any) -> torch.Tensor:
    return torch.tensordot(a, b, dims=axes if isinstance(axes, int) else [list(axes[0]), list(axes[1])])


def _trace(t: torch.Tensor, offset: int, axis1: int, axis2: int, dtype: Any = None) -> torch.Tensor:
    return torch.diagonal(t, offset, axis1, axis2).sum(-1)


def _diagonal(t: torch.Tensor, offset: int, axis1: int, axis2: int) -> torch.Tensor:
    return torch.diagonal(t, offset, axis1, axis2).clone()


def _sum_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    d = dtypes[0]
    _dtypes.check_category(op, d, "numeric")
    out = s.get("dtype") or (_dtypes.int64 if d.kind in "bi" else _dtypes.uint64 if d.kind == "u" else d)
    return (out,), (out,)


def _first(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    return (dtypes[0],), None


define("matmul", _matmul, promoting("numeric"), shape=matmul_shape, work=_madds)
define("mm", _matmul, promoting("numeric"), work=_madds)
define("dot", _dot, promoting("numeric"), work=_madds)
define("vecdot", _vecdot, promoting("numeric"), work=_madds)
define("tensordot", _tensordot, promoting("numeric"), work=_madds)
define("outer", lambda a, b: torch.outer(a.reshape(-1), b.reshape(-1)), promoting("numeric"))
define("inner", torch.inner, promoting("numeric"), work=_madds)
define("kron", torch.kron, promoting("numeric"))
define("cross", lambda a, b, axis: torch.linalg.cross(*torch.broadcast_tensors(a, b), dim=axis), promoting("numeric"))
define("einsum", lambda *ts, subscripts: torch.einsum(subscripts, *ts), promoting("numeric"))
define("trace", _trace, _sum_dtype)
define("diagonal", _diagonal, _first)


def _pair(op: str, x1: Any, x2: Any) -> tuple[Any, Any]:
    return _array_like(x1), _array_like(x2)


def matmul(x1: Any, x2: Any, /, out: Any = None, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Matrix product with the standard's (and NumPy's) rules: 1-D operands, batch broadcasting;
    NumPy's ``out=`` and ``dtype=`` as a ufunc's."""
    if out is not None or dtype is not None:
        from autopar.arrays._keywords import ufunc

        return ufunc("matmul", matmul, (x1, x2), out, True, dtype, casting)
    a, b = _pair("matmul", x1, x2)
    return bind(TABLE["matmul"], (a, b))


def mm(x1: Any, x2: Any, /) -> Any:
    """Product of two 2-D arrays (PyTorch's ``mm``)."""
    a, b = _pair("mm", x1, x2)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"mm: shapes {a.shape} and {b.shape}: both operands must be 2-D (use matmul for other ranks)")
    matmul_shape("mm", (a.shape, b.shape), {})
    return bind(TABLE["mm"], (a, b))


def dot(x1: Any, x2: Any, /, out: Any = None) -> Any:
    """NumPy's ``dot``: scalars multiply; 2-D is the matrix product; N-D sums
    over the last axis of ``a`` and the second-to-last of ``b``."""
    if out is not None:
        from autopar.arrays._keywords import finish

        return finish("dot", dot(x1, x2), out)
    a, b = _pair("dot", x1, x2)
    if a.ndim and b.ndim:
        k2 = b.shape[0] if b.ndim == 1 else b.shape[-2]
        if a.shape[-1] != k2:
            raise ValueError(f"dot: shapes {a.shape} and {b.shape} do not align: {a.shape[-1]} (dim {a.ndim - 1}) != {k2}")
    return bind(TABLE["dot"], (a, b))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    a, b = _pair("vecdot", x1, x2)
    shape = broadcast_shapes("vecdot", (a.shape, b.shape))
    ax = normalize_axis("vecdot", axis, len(shape))
    if a.shape[ax - len(shape)] != b.shape[ax - len(shape)] if a.ndim and b.ndim else False:
        raise ValueError(f"vecdot: shapes {a.shape} and {b.shape} differ along axis {axis}")
    return bind(TABLE["vecdot"], (a, b), {"axis": ax - len(shape)})


def tensordot(x1: Any, x2: Any, /, axes: Any = 2) -> Any:
    a, b = _pair("tensordot", x1, x2)
    if not isinstance(axes, int):
        axes = (tuple(int(i) for i in axes[0]), tuple(int(i) for i in axes[1]))
    return bind(TABLE["tensordot"], (a, b), {"axes": axes})


def outer(x1: Any, x2: Any, /) -> Any:
    a, b = _pair("outer", x1, x2)
    return bind(TABLE["outer"], (a, b))


def inner(x1: Any, x2: Any, /) -> Any:
    a, b = _pair("inner", x1, x2)
    return bind(TABLE["inner"], (a, b))


def kron(x1: Any, x2: Any, /) -> Any:
    a, b = _pair("kron", x1, x2)
    return bind(TABLE["kron"], (a, b))


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    a, b = _pair("cross", x1, x2)
    shape = broadcast_shapes("cross", (a.shape, b.shape))
    ax = normalize_axis("cross", axis, len(shape)) - len(shape)
    if a.shape[ax] != 3 or b.shape[ax] != 3:
        raise ValueError(f"cross: shapes {a.shape} and {b.shape}: axis {axis} must have size 3 in both")
    return bind(TABLE["cross"], (a, b), {"axis": ax})


def einsum(subscripts: str, *operands: Any, out: Any = None, optimize: Any = False, dtype: Any = None,
           order: str = "K", casting: str = "safe") -> Any:  # fmt: skip
    """NumPy's ``einsum``; ``optimize`` is accepted and left to torch, which picks the contraction order
    itself; ``dtype=`` casts the operands first; ``out=`` is written as a ufunc's."""
    if not isinstance(subscripts, str):
        raise TypeError("einsum: the first argument must be the subscripts string, e.g. 'ij,jk->ik' "
                        "(the interleaved form einsum(a, [0, 1], b, [1, 2]) is not supported)")  # fmt: skip
    if optimize not in (False, True, "greedy", "optimal") and not isinstance(optimize, list):
        raise ValueError(f"einsum: optimize={optimize!r}; expected False, True, 'greedy', 'optimal' or a path")
    xs = [_array_like(x) for x in operands]
    if dtype is not None:
        xs = [x.astype(dtype, copy=False) for x in xs]
    result = bind(TABLE["einsum"], xs, {"subscripts": subscripts})
    if out is None:
        return result
    from autopar.arrays._keywords import finish

    return finish("einsum", result, out, casting=casting)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None, axis1: int = -2, axis2: int = -1) -> Any:
    """The sum along a diagonal: the standard's ``linalg.trace`` (last two axes); NumPy's
    ``trace`` is the same with ``axis1=0, axis2=1``."""
    x = _array_like(x)
    if x.ndim < 2:
        raise ValueError(f"trace: the array has shape {x.shape}; it needs at least 2 dimensions")
    a1, a2 = normalize_axis("trace", axis1, x.ndim), normalize_axis("trace", axis2, x.ndim)
    d = None if dtype is None else _dtypes.as_dtype(dtype, "trace")
    return bind(TABLE["trace"], (x,), {"offset": int(offset), "axis1": a1, "axis2": a2, "dtype": d})


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The standard's ``linalg.diagonal``: diagonals of the last two axes."""
    return diagonal_np(x, offset=offset, axis1=-2, axis2=-1)


def diagonal_np(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """NumPy's ``diagonal`` (a copy; NumPy returns a read-only view)."""
    x = _array_like(x)
    if x.ndim < 2:
        raise ValueError(f"diagonal: the array has shape {x.shape}; it needs at least 2 dimensions")
    a1, a2 = normalize_axis("diagonal", axis1, x.ndim), normalize_axis("diagonal", axis2, x.ndim)
    if a1 == a2:
        raise ValueError("diagonal: axis1 and axis2 must differ")
    return bind(TABLE["diagonal"], (x,), {"offset": int(offset), "axis1": a1, "axis2": a2})
