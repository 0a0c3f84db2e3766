"""The array operations: call-time shape/dtype rules, then a kernel pushed to the engine.

Every function here checks its operands and computes the result's shape and
dtype *before* pushing anything, so bad input raises at the call, naming the
operation, the values and what was expected. The kernels are PyTorch calls run
inside the engine on tensors that the engine has made safe to touch.
"""

from __future__ import annotations

import builtins  # this module defines sum, max and min: builtins.* are Python's
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from autopar.ndarray import _dtypes, _shapes
from autopar.ndarray._core import (
    TINY_NUMEL,
    NDArray,
    as_device,
    launch,
    launch_inplace,
    make,
    same_device,
    value_of,
)

Kernel = Callable[..., torch.Tensor]


# -- operands -------------------------------------------------------------------


def _scalar(op: str, x: Any) -> Any:
    """A Python number for ``x`` if it is a scalar operand, else raise TypeError."""
    if isinstance(x, (bool, int, float, complex)):
        return x
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, numbers.Complex):
        return complex(x)
    raise TypeError(
        f"{op}: unsupported operand {x!r} ({type(x).__name__}); expected an autopar array or a number "
        f"(convert other data with autopar.ndarray(...))"
    )


def _operand(op: str, x: Any, like: NDArray) -> Any:
    """Arrays pass through; NumPy arrays, lists and tensors become arrays on ``like``'s device."""
    if type(x) is NDArray:
        return x
    if isinstance(x, (np.ndarray, list, tuple, torch.Tensor)):
        from autopar.ndarray._creation import array

        return array(x, device=like.device)
    return _scalar(op, x)


def _as_array(x: Any) -> NDArray:
    if type(x) is NDArray:
        return x
    from autopar.ndarray._creation import array

    return array(x)


def _scalar_tensor(value: Any, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return torch.tensor(value, dtype=dtype, device=like.device)


# -- elementwise binary -----------------------------------------------------------

_COMPARE = frozenset({"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"})
_TORCH_BINARY: dict[str, Kernel] = {
    "add": torch.add,
    "subtract": torch.sub,
    "multiply": torch.mul,
    "divide": torch.true_divide,
    "floor_divide": torch.floor_divide,
    "mod": torch.remainder,
    "power": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "equal": torch.eq,
    "not_equal": torch.ne,
    "less": torch.lt,
    "less_equal": torch.le,
    "greater": torch.gt,
    "greater_equal": torch.ge,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
}
_IN_PLACE: dict[str, str] = {
    "add": "add_",
    "subtract": "sub_",
    "multiply": "mul_",
    "divide": "div_",
    "floor_divide": "floor_divide_",
    "mod": "remainder_",
    "power": "pow_",
    "bitwise_and": "bitwise_and_",
    "bitwise_or": "bitwise_or_",
    "bitwise_xor": "bitwise_xor_",
}


_result_cache: dict[tuple[str, torch.dtype, torch.dtype], torch.dtype] = {}


def _result_dtype(op: str, a: torch.dtype, b: torch.dtype) -> torch.dtype:
    key = (op, a, b)
    found = _result_cache.get(key)
    if found is None:
        found = _result_cache[key] = _compute_result_dtype(op, a, b)
    return found


def _compute_result_dtype(op: str, a: torch.dtype, b: torch.dtype) -> torch.dtype:
    if op in _COMPARE:
        return torch.bool
    dtype = _dtypes.promote(a, b)
    if op == "divide" and not (dtype.is_floating_point or dtype.is_complex):
        return _dtypes.DEFAULT_FLOAT
    if op.startswith("bitwise") and (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(f"{op}: operands of dtype {a} and {b}: bitwise operations need integer or bool arrays")
    return dtype


def binary(op: str, a: Any, b: Any, reflected: bool = False) -> NDArray:
    """``a <op> b`` with NumPy broadcasting; ``reflected`` computes ``b <op> a``."""
    fn = _TORCH_BINARY[op]
    if type(a) is not NDArray:
        if type(b) is NDArray:
            a, b, reflected = b, a, not reflected
        else:
            a = _as_array(a)
    if type(b) is not NDArray and type(b) is not float and type(b) is not int:
        b = _operand(op, b, a)
    if type(b) is NDArray:
        device = same_device(op, (a, b))
        shape = _shapes.broadcast(op, a.shape, b.shape)
        dtype = _result_dtype(op, a._tdtype, b._tdtype)
        out = make(shape, dtype, device)
        return launch(op, (lambda x, y: fn(y, x)) if reflected else fn, out, (a, b))
    scalar = b
    scalar_dtype = _dtypes.with_scalar(a._tdtype, scalar)
    dtype = _result_dtype(op, a._tdtype, scalar_dtype)
    out = make(a.shape, dtype, a.device)
    if reflected:
        return launch(op, lambda x: fn(_scalar_tensor(scalar, x, scalar_dtype), x), out, (a,))
    return launch(op, lambda x: fn(x, scalar), out, (a,))


def binary_inplace(op: str, target: NDArray, other: Any) -> NDArray:
    """``target <op>= other``: a write of ``target``; NumPy's same-kind casting rule."""
    method = _IN_PLACE[op]
    other = _operand(op, other, target)
    if type(other) is NDArray:
        same_device(op, (target, other))
        shape = _shapes.broadcast(op, target.shape, other.shape)
        result = _result_dtype(op, target._tdtype, other._tdtype)
    else:
        shape = target.shape
        result = _result_dtype(op, target._tdtype, _dtypes.with_scalar(target._tdtype, other))
    if shape != target.shape:
        raise ValueError(
            f"{op} (in place): the result would have shape {shape}, but the target has shape {target.shape}"
        )
    if not _dtypes.can_cast_in_place(result, target._tdtype):
        raise TypeError(
            f"{op} (in place): cannot store a {_dtypes.numpy_dtype(result)} result in a "
            f"{target.dtype} array (NumPy's same_kind rule); write x = x {op} y instead, or cast with astype"
        )
    if type(other) is NDArray:
        return launch_inplace(op, lambda t, o: getattr(t, method)(o), target, (other,))
    scalar = other
    return launch_inplace(op, lambda t: getattr(t, method)(scalar), target, ())


def maximum(a: Any, b: Any) -> NDArray:
    return binary("maximum", a, b)


def minimum(a: Any, b: Any) -> NDArray:
    return binary("minimum", a, b)


# -- elementwise unary --------------------------------------------------------------

_FLOAT_UNARY: dict[str, Kernel] = {
    "exp": torch.exp,
    "log": torch.log,
    "tanh": torch.tanh,
    "sqrt": torch.sqrt,
    "sin": torch.sin,
    "cos": torch.cos,
    "sigmoid": torch.sigmoid,
}
_SAME_UNARY: dict[str, Kernel] = {
    "negative": torch.neg,
    "abs": torch.abs,
    "relu": torch.relu,
}


def unary(op: str, a: Any) -> NDArray:
    a = _as_array(a)
    if op in _FLOAT_UNARY:
        fn = _FLOAT_UNARY[op]
        dtype = a._tdtype if (a._tdtype.is_floating_point or a._tdtype.is_complex) else _dtypes.DEFAULT_FLOAT
        kernel: Kernel = fn if dtype is a._tdtype else (lambda t: fn(t.to(dtype)))
    elif op == "invert":
        if a._tdtype.is_floating_point:
            raise TypeError(f"invert: ~ needs an integer or bool array, not {a.dtype}")
        dtype, kernel = a._tdtype, torch.bitwise_not
    else:
        if op == "negative" and a._tdtype is torch.bool:
            raise TypeError("negative: unary - is not defined for bool arrays; use ~ (invert)")
        dtype, kernel = a._tdtype, _SAME_UNARY[op]
    return launch(op, kernel, make(a.shape, dtype, a.device), (a,))


def exp(a: Any) -> NDArray:
    return unary("exp", a)


def log(a: Any) -> NDArray:
    return unary("log", a)


def tanh(a: Any) -> NDArray:
    return unary("tanh", a)


def sqrt(a: Any) -> NDArray:
    return unary("sqrt", a)


# -- products ---------------------------------------------------------------------------


def _product_operands(op: str, a: Any, b: Any) -> tuple[NDArray, NDArray, torch.dtype]:
    a, b = _as_array(a), _as_array(b)
    same_device(op, (a, b))
    dtype = _dtypes.promote(a._tdtype, b._tdtype)
    if dtype is torch.bool:
        raise TypeError(f"{op}: bool arrays have no matrix product here; cast with .astype('int64') or 'float32'")
    return a, b, dtype


def _tiny_product(out: NDArray, a: NDArray) -> bool:
    """A product is tiny by its multiply-adds, not its output: (1, n) @ (n, 1) is not."""
    k = a.shape[-1] if a.shape else 1
    return out.size * k <= TINY_NUMEL * 16


def matmul(a: Any, b: Any) -> NDArray:
    """Matrix product with NumPy's ``matmul`` rules (1-D operands, batch broadcasting)."""
    a, b, dtype = _product_operands("matmul", a, b)
    out = make(_shapes.matmul("matmul", a.shape, b.shape), dtype, a.device)
    return launch("matmul", torch.matmul, out, (a, b), tiny=_tiny_product(out, a))


def mm(a: Any, b: Any) -> NDArray:
    """Product of two 2-D arrays (PyTorch's ``mm``)."""
    a, b, dtype = _product_operands("mm", a, b)
    out = make(_shapes.mm(a.shape, b.shape), dtype, a.device)
    return launch("mm", torch.mm, out, (a, b), tiny=_tiny_product(out, a))


def _dot_kernel(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if y.ndim <= 2 and x.ndim <= 2:
        return torch.matmul(x, y)
    if y.ndim == 1:
        return torch.matmul(x, y)
    return torch.tensordot(x, y, dims=([x.ndim - 1], [y.ndim - 2]))


def dot(a: Any, b: Any) -> NDArray:
    """NumPy's ``dot``: scalars multiply; 2-D is the matrix product; N-D sums
    over the last axis of ``a`` and the second-to-last of ``b``."""
    a, b, dtype = _product_operands("dot", a, b)
    out = make(_shapes.dot(a.shape, b.shape), dtype, a.device)
    return launch("dot", _dot_kernel, out, (a, b), tiny=_tiny_product(out, a))


# -- reductions ------------------------------------------------------------------------------


def _reduce(op: str, a: Any, axis: Any, keepdims: bool) -> tuple[NDArray, tuple[int, ...] | None, tuple[int, ...]]:
    a = _as_array(a)
    axes = _shapes.axes(op, axis, a.ndim)
    shape = _shapes.reduce(a.shape, axes, bool(keepdims))
    return a, axes, shape


def _reducer(torch_fn: Callable[..., torch.Tensor], axes: tuple[int, ...] | None, keepdims: bool, shape: tuple[int, ...]) -> Kernel:
    if axes is None:
        if keepdims:
            return lambda t: torch_fn(t).reshape(shape)
        return lambda t: torch_fn(t)
    dims = list(axes)
    return lambda t: torch_fn(t, dim=dims, keepdim=keepdims)


def sum(a: Any, axis: Any = None, keepdims: bool = False) -> NDArray:  # noqa: A001 - NumPy's name
    a, axes, shape = _reduce("sum", a, axis, keepdims)
    dtype = a._tdtype if (a._tdtype.is_floating_point or a._tdtype.is_complex) else torch.int64
    return launch("sum", _reducer(torch.sum, axes, keepdims, shape), make(shape, dtype, a.device), (a,))


def mean(a: Any, axis: Any = None, keepdims: bool = False) -> NDArray:
    a, axes, shape = _reduce("mean", a, axis, keepdims)
    dtype = a._tdtype if (a._tdtype.is_floating_point or a._tdtype.is_complex) else _dtypes.DEFAULT_FLOAT
    inner = _reducer(torch.mean, axes, keepdims, shape)
    kernel = inner if dtype is a._tdtype else (lambda t: inner(t.to(dtype)))
    return launch("mean", kernel, make(shape, dtype, a.device), (a,))


def _extreme(op: str, torch_fn: Callable[..., torch.Tensor], a: Any, axis: Any, keepdims: bool) -> NDArray:
    a, axes, shape = _reduce(op, a, axis, keepdims)
    reduced = a.shape if axes is None else tuple(a.shape[i] for i in axes)
    if math.prod(reduced) == 0:
        raise ValueError(f"{op}: zero-size array (shape {a.shape}) has no {op}imum along axis={axis}")
    return launch(op, _reducer(torch_fn, axes, keepdims, shape), make(shape, a._tdtype, a.device), (a,))


def max(a: Any, axis: Any = None, keepdims: bool = False) -> NDArray:  # noqa: A001
    return _extreme("max", torch.amax, a, axis, keepdims)


def min(a: Any, axis: Any = None, keepdims: bool = False) -> NDArray:  # noqa: A001
    return _extreme("min", torch.amin, a, axis, keepdims)


# -- shapes and views ---------------------------------------------------------------------------


def _compose(view: Callable[[torch.Tensor], torch.Tensor] | None, step: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    if view is None:
        return step
    return lambda t: step(view(t))


def reshape(a: Any, *shape: Any) -> NDArray:
    """A view when ``a`` is a whole (contiguous) array, else a copy, as in NumPy."""
    a = _as_array(a)
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    new = _shapes.reshape(a.shape, shape)
    if a._view is None and a._storage.contiguous:
        return make(new, a._tdtype, a.device, a._storage, lambda t: t.view(new))
    return launch("reshape", lambda t: t.reshape(new).clone(), make(new, a._tdtype, a.device), (a,))


def transpose(a: Any, axes: Any = None) -> NDArray:
    """Permute the axes (reverse them by default); a view sharing ``a``'s data."""
    a = _as_array(a)
    shape, perm = _shapes.transpose(a.shape, axes)
    if perm == tuple(range(a.ndim)):
        return make(shape, a._tdtype, a.device, a._storage, a._view)
    return make(shape, a._tdtype, a.device, a._storage, _compose(a._view, lambda t: t.permute(perm)))


def _is_basic(key: tuple[Any, ...]) -> bool:
    for k in key:
        if k is None or k is Ellipsis:
            continue
        if isinstance(k, slice):
            if k.step is not None and (not isinstance(k.step, int) or k.step <= 0):
                return False
            continue
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            continue
        return False
    return True


def _normalize_key(key: Any) -> tuple[Any, ...]:
    key = key if isinstance(key, tuple) else (key,)
    out = []
    for k in key:
        if isinstance(k, np.integer):
            k = int(k)
        elif isinstance(k, slice):
            k = slice(*(int(v) if isinstance(v, np.integer) else v for v in (k.start, k.stop, k.step)))
        out.append(k)
    return tuple(out)


class _Index:
    """An analysed index: the key for torch (arrays replaced by placeholders) and its arrays."""

    def __init__(self, target: NDArray, key: Any, op: str) -> None:
        key = _normalize_key(key)
        self.arrays: list[NDArray] = []
        self.flip: list[int] = []  # result dims to reverse (slices with a negative step)
        if _is_basic(key):
            self.basic = True
            self.key = key
            self.shape = _shapes.basic_index(target.shape, key)
            return
        reversed_slices = [k for k in key if isinstance(k, slice) and k.step is not None and k.step < 0]
        if reversed_slices and _is_basic(tuple(k for k in key if k not in reversed_slices)):
            # Torch slices need step > 0: take the same elements in ascending order, then flip.
            self.basic = True
            self.key = self._ascending(target.shape, key)
            self.shape = _shapes.basic_index(target.shape, self.key)
            return
        if len(reversed_slices) + builtins.sum(1 for k in key if not (k is None or k is Ellipsis or isinstance(k, (int, slice)))) > 1:
            raise IndexError(
                f"{op}: a slice with a negative step together with other array indexes is not supported; "
                f"index in two steps"
            )
        self.basic = False
        parts: list[Any] = []
        meta_parts: list[Any] = []
        dim = 0
        for k in key:
            if isinstance(k, slice) and k.step is not None and k.step < 0:
                size = target.shape[dim]
                idx = np.arange(size)[k]
                k = idx  # a negative step becomes an integer index (torch slices need step > 0)
            if type(k) is NDArray:
                if k._tdtype is torch.bool:
                    k = k.numpy()  # a mask's result shape depends on its values: read it now
                else:
                    same_device(op, (target, k))
                    self.arrays.append(k)
                    parts.append(("array", len(self.arrays) - 1))
                    meta_parts.append(torch.empty(k.shape, dtype=torch.int64, device="meta"))
                    dim += 1
                    continue
            if isinstance(k, (list, np.ndarray)) or isinstance(k, (bool, np.bool_)):
                arr = np.asarray(k)
                if arr.dtype == np.bool_:
                    if arr.ndim == 0:
                        parts.append(bool(arr))
                        meta_parts.append(bool(arr))
                        continue
                    for nz in np.nonzero(arr):
                        t = torch.as_tensor(np.array(nz, dtype=np.int64))
                        parts.append(("const", t))
                        meta_parts.append(torch.empty(t.shape, dtype=torch.int64, device="meta"))
                    dim += arr.ndim
                    continue
                if not np.issubdtype(arr.dtype, np.integer):
                    raise IndexError(f"{op}: index arrays must hold integers or bools, not {arr.dtype}")
                t = torch.as_tensor(np.array(arr, dtype=np.int64))  # a fresh copy: no negative strides
                if arr.size:
                    size = target.shape[dim] if dim < target.ndim else 0
                    if arr.max() >= size or arr.min() < -size:
                        raise IndexError(f"{op}: index {arr.max() if arr.max() >= size else arr.min()} is out of bounds for axis {dim} with size {size}")
                parts.append(("const", t))
                meta_parts.append(torch.empty(t.shape, dtype=torch.int64, device="meta"))
                dim += 1
                continue
            if isinstance(k, torch.Tensor):
                raise IndexError(f"{op}: index with autopar arrays (autopar.asarray(t)), not torch tensors")
            if not (k is None or k is Ellipsis or isinstance(k, (int, slice))):
                raise IndexError(
                    f"{op}: only integers, slices, None, ..., and integer or bool arrays are valid indices; got {k!r}"
                )
            parts.append(k)
            meta_parts.append(k)
            if k is not None and k is not Ellipsis:
                dim += 1
        try:
            meta = torch.empty(target.shape, device="meta")[tuple(meta_parts)]
        except IndexError as error:
            raise IndexError(f"{op}: {error} (array of shape {target.shape})") from None
        self.shape = tuple(meta.shape)
        self.parts = parts

    def _ascending(self, shape: tuple[int, ...], key: tuple[Any, ...]) -> tuple[Any, ...]:
        """``key`` with every negative-step slice made ascending; records the result dims to flip."""
        n_real = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
        out: list[Any] = []
        dim = 0
        result_dim = 0
        for k in key:
            if k is None:
                result_dim += 1
            elif k is Ellipsis:
                span = len(shape) - n_real
                dim += span
                result_dim += span
            elif isinstance(k, slice):
                if dim >= len(shape):
                    raise IndexError(f"index: too many indices for an array of shape {shape}")
                if k.step is not None and k.step < 0:
                    picked = range(*k.indices(shape[dim]))
                    if len(picked):
                        k = slice(picked[-1], picked[0] + 1, -k.step)
                    else:
                        k = slice(0, 0)
                    self.flip.append(result_dim)
                dim += 1
                result_dim += 1
            else:
                dim += 1
            out.append(k)
        return tuple(out)

    def resolve(self, tensors: list[torch.Tensor], device: torch.device) -> tuple[Any, ...]:
        if self.basic:
            return self.key
        out = []
        for p in self.parts:
            if isinstance(p, tuple):
                kind, value = p
                out.append(tensors[value] if kind == "array" else value.to(device))
            else:
                out.append(p)
        return tuple(out)


def getitem(a: NDArray, key: Any) -> NDArray:
    index = _Index(a, key, "index")
    if index.basic and index.flip:
        k, dims = index.key, index.flip
        return launch("index", lambda t: t[k].flip(dims), make(index.shape, a._tdtype, a.device), (a,))
    if index.basic:
        k = index.key
        return make(index.shape, a._tdtype, a.device, a._storage, _compose(a._view, lambda t: t[k]))
    inputs = (a, *index.arrays)

    def kernel(t: torch.Tensor, *idx: torch.Tensor) -> torch.Tensor:
        return t[index.resolve(list(idx), t.device)].clone()

    return launch("index", kernel, make(index.shape, a._tdtype, a.device), inputs)


def setitem(a: NDArray, key: Any, value: Any) -> None:
    index = _Index(a, key, "index assignment")
    value = _operand("index assignment", value, a)
    dtype = a._tdtype
    if type(value) is NDArray:
        same_device("index assignment", (a, value))
        if not _shapes.broadcasts_to(value.shape, index.shape):
            raise ValueError(
                f"index assignment: a value of shape {value.shape} cannot be broadcast to the indexed shape {index.shape}"
            )
        n = len(index.arrays)
        shape, flip = index.shape, index.flip

        def assign(t: torch.Tensor, *rest: torch.Tensor) -> None:
            value = rest[n].to(dtype)
            if flip:
                value = torch.broadcast_to(value, shape).flip(flip)
            t[index.resolve(list(rest[:n]), t.device)] = value

        launch_inplace("setitem", assign, a, (*index.arrays, value))
        return
    scalar = value

    def assign_scalar(t: torch.Tensor, *idx: torch.Tensor) -> None:
        t[index.resolve(list(idx), t.device)] = scalar

    launch_inplace("setitem", assign_scalar, a, tuple(index.arrays))


def astype(a: NDArray, dtype: Any, copy: bool = True) -> NDArray:
    target = _dtypes.to_torch_dtype(dtype)
    if target is a._tdtype and not copy:
        return a
    return launch("astype", lambda t: t.to(target, copy=True), make(a.shape, target, a.device), (a,))


def copy(a: NDArray) -> NDArray:
    return launch("copy", lambda t: t.clone(), make(a.shape, a._tdtype, a.device), (a,))


# -- custom work ------------------------------------------------------------------------------------


def call(
    fn: Callable[..., Any],
    *arrays: NDArray,
    shape: Any,
    dtype: Any = None,
    device: Any = None,
    ctx: Any = None,
    name: str | None = None,
) -> NDArray:
    """Run ``fn(*tensors)`` asynchronously on the arrays' values; return its result as an array.

    The result has ``shape`` and ``dtype`` (default: the first input's) and
    lives on the inputs' device. If ``fn`` raises, or returns another shape,
    the error is stored on the result (SPEC §4).
    """
    if not callable(fn):
        raise TypeError(f"call: fn must be callable; got {fn!r}")
    for i, arr in enumerate(arrays):
        if type(arr) is not NDArray:
            raise TypeError(f"call: argument {i + 1} is {type(arr).__name__}; pass autopar arrays (autopar.asarray(...))")
    out_shape = _shapes.normalize_shape(shape)
    asked = None if device is None and ctx is None else as_device(device, ctx, "call")
    if arrays:
        dev = same_device("call", arrays)
        if asked is not None and asked != dev:
            raise ValueError(f"call: device={asked} but the arrays are on {dev}; move them with .to({asked})")
    else:
        dev = asked if asked is not None else as_device(None)
    if dtype is not None:
        out_dtype = _dtypes.to_torch_dtype(dtype)
    elif arrays:
        out_dtype = arrays[0]._tdtype
    else:
        out_dtype = _dtypes.DEFAULT_FLOAT
    label = name or getattr(fn, "__name__", "call")

    def kernel(*tensors: torch.Tensor) -> torch.Tensor:
        result = fn(*tensors)
        if not isinstance(result, torch.Tensor):
            result = torch.as_tensor(np.asarray(result), device=dev.torch_device)
        if tuple(result.shape) != out_shape:
            raise ValueError(f"call: {label} returned shape {tuple(result.shape)}, but shape={out_shape} was declared")
        for t in tensors:  # never alias an input: the result is a new array
            if result.untyped_storage().data_ptr() == t.untyped_storage().data_ptr():
                return result.clone()
        return result

    # a user function is never run inline: it stays asynchronous, whatever its size
    return launch(str(label), kernel, make(out_shape, out_dtype, dev), arrays, tiny=False)
