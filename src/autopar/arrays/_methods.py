"""The array's methods beyond the operators: NumPy's, PyTorch's and MXNet's spellings.

Each method is one line calling the namespace function it names, so a method
and its function can never disagree. PyTorch spellings take ``dim=`` and
``keepdim=`` as well as ``axis=``/``keepdims=``; ``x.view(2, 3)``,
``x.permute(1, 0)``, ``x.unsqueeze(0)``, ``x.t()``, ``x.float()``, ``x.long()``,
``x.clone()``, ``add_``/``mul_``/``zero_`` ... are here. The in-place ones
(``add_``) are the in-place operators (``+=``).

This module attaches them, the operators (``_operators.py``) and the gradient
methods (``_grad_methods.py``) to ``NDArray`` when it is imported
(:func:`attach`). It sits above both the array type (``_array.py``) and the op
modules, which import the type: so neither imports the other (JAX's
``array_methods.py``). Every way into the array layer from above (the public
namespace, ``nn``, ``parallel``) imports this module first.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from autopar import _gc
from autopar.arrays import _copy, _dtypes, _keywords  # noqa: F401  (_keywords registers the ufunc keywords)
from autopar.arrays import _creation as _cr
from autopar.arrays import _elementwise as _ew
from autopar.arrays import _indexing as _idx
from autopar.arrays import _manipulation as _man
from autopar.arrays import _products as _prod
from autopar.arrays import _reductions as _red
from autopar.arrays import _searching as _search
from autopar.arrays._array import NDArray
from autopar.arrays._grad_methods import GradMethods
from autopar.arrays._numpy_methods import NumpyMethods
from autopar.arrays._operators import Operators


def _axis(axis: Any, dim: Any) -> Any:
    return dim if dim is not None else axis


def _shape_args(shape: tuple[Any, ...]) -> Any:
    if len(shape) == 1 and not isinstance(shape[0], int):
        return tuple(shape[0])
    return shape


class Methods:
    """Mixed into NDArray: the methods that are namespace functions."""

    __slots__: tuple[str, ...] = ()

    # -- reductions (NumPy and PyTorch spellings) --------------------------------------------
    # NumPy's out=, where=, initial= are keyword-only here (NumPy's third positional is out, autopar's keepdims)
    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None,
            out: Any = None, initial: Any = None, where: Any = True) -> Any:  # fmt: skip
        return _red.sum(self, axis=_axis(axis, dim), dtype=dtype, keepdims=bool(keepdim or keepdims), out=out,
                        initial=initial, where=where)  # fmt: skip

    def prod(self, axis: Any = None, dtype: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None,
             out: Any = None, initial: Any = None, where: Any = True) -> Any:  # fmt: skip
        return _red.prod(self, axis=_axis(axis, dim), dtype=dtype, keepdims=bool(keepdim or keepdims), out=out,
                         initial=initial, where=where)  # fmt: skip

    def mean(self, axis: Any = None, dtype: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None,
             out: Any = None, where: Any = True) -> Any:  # fmt: skip
        return _red.mean(self, axis=_axis(axis, dim), dtype=dtype, keepdims=bool(keepdim or keepdims), out=out,
                         where=where)  # fmt: skip

    def std(self, axis: Any = None, ddof: float = 0, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None,
            correction: Any = None) -> Any:  # fmt: skip
        return _red.std(self, axis=_axis(axis, dim), correction=ddof if correction is None else correction,
                        keepdims=bool(keepdim or keepdims))  # fmt: skip

    def var(self, axis: Any = None, ddof: float = 0, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None,
            correction: Any = None) -> Any:  # fmt: skip
        return _red.var(self, axis=_axis(axis, dim), correction=ddof if correction is None else correction,
                        keepdims=bool(keepdim or keepdims))  # fmt: skip

    def max(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None, out: Any = None,
            initial: Any = None, where: Any = True) -> Any:  # fmt: skip
        return _red.max(self, axis=_axis(axis, dim), keepdims=bool(keepdim or keepdims), out=out, initial=initial,
                        where=where)  # fmt: skip

    def min(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None, out: Any = None,
            initial: Any = None, where: Any = True) -> Any:  # fmt: skip
        return _red.min(self, axis=_axis(axis, dim), keepdims=bool(keepdim or keepdims), out=out, initial=initial,
                        where=where)  # fmt: skip

    def argmax(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None) -> Any:
        return _red.argmax(self, axis=_axis(axis, dim), keepdims=bool(keepdim or keepdims))

    def argmin(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None) -> Any:
        return _red.argmin(self, axis=_axis(axis, dim), keepdims=bool(keepdim or keepdims))

    def all(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None) -> Any:
        return _red.all(self, axis=_axis(axis, dim), keepdims=bool(keepdim or keepdims))

    def any(self, axis: Any = None, keepdims: bool = False, *, dim: Any = None, keepdim: Any = None) -> Any:
        return _red.any(self, axis=_axis(axis, dim), keepdims=bool(keepdim or keepdims))

    def cumsum(self, axis: Any = None, dtype: Any = None, *, dim: Any = None) -> Any:
        return _red.cumsum(self, axis=_axis(axis, dim), dtype=dtype)

    def cumprod(self, axis: Any = None, dtype: Any = None, *, dim: Any = None) -> Any:
        return _red.cumprod(self, axis=_axis(axis, dim), dtype=dtype)

    def ptp(self, axis: Any = None, keepdims: bool = False) -> Any:
        return _red.max(self, axis=axis, keepdims=keepdims) - _red.min(self, axis=axis, keepdims=keepdims)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        return _prod.trace(self, offset=offset, axis1=axis1, axis2=axis2)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        return _prod.diagonal_np(self, offset=offset, axis1=axis1, axis2=axis2)

    def nonzero(self) -> Any:
        return _search.nonzero(self)

    def argsort(self, axis: int = -1, kind: Any = None, order: Any = None, *, dim: Any = None,
                descending: bool = False, stable: bool = True) -> Any:  # fmt: skip
        return _search.argsort(self, axis=_axis(axis, dim), kind=kind, order=order, descending=descending,
                               stable=stable)  # fmt: skip

    def sort(self, axis: int = -1, kind: Any = None, order: Any = None, *, dim: Any = None,
             descending: bool = False) -> Any:  # fmt: skip
        """The sorted array; on an array made in NumPy mode (``autopar.numpy``), NumPy's in-place sort,
        which returns None."""
        result = _search.sort(self, axis=_axis(axis, dim), kind=kind, order=order, descending=descending)
        if not self._storage.npmode:  # type: ignore[attr-defined]
            return result
        self[...] = result  # type: ignore[index]
        return None

    # -- elementwise methods --------------------------------------------------------------
    def clip(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002
        return _ew.clip(self, min, max)

    clamp = clip

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        from autopar.arrays._numpy import around

        return around(self, decimals, out)

    def conj(self) -> Any:
        return _ew.call("conj", self)

    conjugate = conj

    @property
    def real(self) -> Any:
        """The real part: of a real array, a view of it (writes reach it, as NumPy's); of a complex one, a
        new array -- autopar's views keep their dtype, so set the part with ``z.real = v``."""
        if self._dtype.kind != "c":  # type: ignore[attr-defined]
            return self[...]  # type: ignore[index]
        return _ew.call("real", self)

    @real.setter
    def real(self, value: Any) -> None:
        if self._dtype.kind != "c":  # type: ignore[attr-defined]
            self[...] = value  # type: ignore[index]
        else:
            self[...] = _ew.call("add", value, _ew.call("multiply", self.imag, 1j))  # type: ignore[index]

    @property
    def imag(self) -> Any:
        return _ew.call("imag", self)

    @imag.setter
    def imag(self, value: Any) -> None:
        if self._dtype.kind != "c":  # type: ignore[attr-defined]
            raise TypeError(f"imag: an array of dtype {self._dtype.name} has no imaginary part to set; "  # type: ignore[attr-defined]
                            "make it complex first: x = x.astype('complex128')")  # fmt: skip
        self[...] = _ew.call("add", self.real, _ew.call("multiply", value, 1j))  # type: ignore[index]

    def maximum(self, other: Any) -> Any:
        return _ew.call("maximum", self, other)

    def minimum(self, other: Any) -> Any:
        return _ew.call("minimum", self, other)

    def exp(self) -> Any:
        return _ew.call("exp", self)

    def log(self) -> Any:
        return _ew.call("log", self)

    def tanh(self) -> Any:
        return _ew.call("tanh", self)

    def sqrt(self) -> Any:
        return _ew.call("sqrt", self)

    def sin(self) -> Any:
        return _ew.call("sin", self)

    def cos(self) -> Any:
        return _ew.call("cos", self)

    def sigmoid(self) -> Any:
        return _ew.call("sigmoid", self)

    def relu(self) -> Any:
        return _ew.call("relu", self)

    def abs(self) -> Any:
        return _ew.call("abs", self)

    def square(self) -> Any:
        return _ew.call("square", self)

    def pow(self, other: Any) -> Any:
        return _ew.call("pow", self, other)

    # -- PyTorch's in-place spellings ------------------------------------------------------
    def add_(self, other: Any) -> Any:
        return _ew.inplace("add", self, other)

    def sub_(self, other: Any) -> Any:
        return _ew.inplace("subtract", self, other)

    def mul_(self, other: Any) -> Any:
        return _ew.inplace("multiply", self, other)

    def div_(self, other: Any) -> Any:
        return _ew.inplace("divide", self, other)

    def zero_(self) -> Any:
        self[...] = 0  # type: ignore[index]
        return self

    def fill_(self, value: Any) -> Any:
        self[...] = value  # type: ignore[index]
        return self

    def fill(self, value: Any) -> None:
        self[...] = value  # type: ignore[index]

    def clamp_(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002
        self[...] = _ew.clip(self, min, max)  # type: ignore[index]
        return self

    # -- products -------------------------------------------------------------------------
    def dot(self, other: Any) -> Any:
        return _prod.dot(self, other)

    def mm(self, other: Any) -> Any:
        return _prod.mm(self, other)

    def matmul(self, other: Any) -> Any:
        return _prod.matmul(self, other)

    # -- shapes and views -----------------------------------------------------------------
    def reshape(self, *shape: Any, order: str = "C", copy: Any = None) -> Any:
        """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``; ``-1`` infers one dimension; ``order="F"`` as NumPy."""
        return _man.reshape(self, _shape_args(shape), order, copy=copy)

    def view(self, *shape: Any) -> Any:
        """PyTorch's ``view``: a reshape that must not copy."""
        return _man.reshape(self, _shape_args(shape), copy=False)

    def flatten(self, order: str = "C") -> Any:
        return _man.ravel(self, order).copy() if order == "F" else _man.reshape(self, (-1,), order, copy=True)

    def ravel(self, order: str = "C") -> Any:
        return _man.ravel(self, order)

    def transpose(self, *axes: Any) -> Any:
        """Reverse the axes, or permute them: ``x.transpose(1, 0, 2)`` / ``x.transpose((1, 0, 2))``."""
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = () if axes[0] is None else tuple(axes[0])
        return _man.transpose(self, axes or None)

    def permute(self, *dims: Any) -> Any:
        return _man.permute_dims(self, _shape_args(dims))

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        return _man.swapaxes(self, axis1, axis2)

    def t(self) -> Any:
        if self.ndim > 2:  # type: ignore[attr-defined]
            raise ValueError(f"t: expects an array of at most 2 dimensions; this one has {self.ndim}")  # type: ignore[attr-defined]
        return _man.transpose(self)

    def unsqueeze(self, dim: int) -> Any:
        return _man.expand_dims(self, dim)

    def squeeze(self, axis: Any = None, *, dim: Any = None) -> Any:
        return _man.squeeze(self, _axis(axis, dim))

    def expand_dims(self, axis: Any) -> Any:
        return _man.expand_dims(self, axis)

    def flip(self, axis: Any = None, *, dims: Any = None) -> Any:
        return _man.flip(self, _axis(axis, dims))

    def repeat(self, repeats: Any, axis: Any = None) -> Any:
        return _man.repeat(self, repeats, axis=axis)

    def take(self, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Any:
        return _idx.take(self, indices, axis, out, mode)

    def broadcast_to(self, shape: Any) -> Any:
        return _man.broadcast_to(self, shape)

    def dim(self) -> int:
        return self.ndim  # type: ignore[attr-defined]

    def numel(self) -> int:
        return self.size  # type: ignore[attr-defined]

    def contiguous(self) -> Any:
        return self

    # -- dtypes and copies ------------------------------------------------------------------
    def astype(self, dtype: Any, copy: bool = True) -> Any:
        return _cr.astype(self, dtype, copy=copy)

    def copy(self) -> Any:
        return _cr.astype(self, self.dtype, copy=True)  # type: ignore[attr-defined]

    clone = copy

    def type(self, dtype: Any) -> Any:
        return _cr.astype(self, dtype, copy=False)

    # -- devices (MXNet and PyTorch) ----------------------------------------------------------
    def copyto(self, target: Any) -> Any:
        """Copy to ``target``: a device (a new array there) or an array (written
        into). Always asynchronous, on a copy lane."""
        return _copy.copyto(self, target)  # type: ignore[arg-type]

    def to(self, device: Any = None, dtype: Any = None, non_blocking: bool = False) -> Any:
        """This array on ``device`` (itself if already there). With
        ``non_blocking=False`` it returns after the copy has finished (raising its
        failure); with ``True`` at once. ``x.to(dtype)`` casts, as in PyTorch."""
        if dtype is None and device is not None and _dtypes.find(device) is not None:
            device, dtype = None, device
        out = self if dtype is None else _cr.astype(self, dtype, copy=False)
        if device is None:
            return out
        return _copy.to(out, device, non_blocking)  # type: ignore[arg-type]

    def as_in_ctx(self, ctx: Any) -> Any:
        """MXNet's spelling of ``to(ctx, non_blocking=True)``."""
        return _copy.to(self, ctx, non_blocking=True)  # type: ignore[arg-type]

    as_in_context = as_in_ctx

    def cpu(self) -> Any:
        return _copy.to(self, "cpu:0", non_blocking=True)  # type: ignore[arg-type]

    def cuda(self, device: Any = 0) -> Any:
        return _copy.to(self, f"cuda:{device}" if isinstance(device, int) else device, non_blocking=True)  # type: ignore[arg-type]


    # -- PyTorch's dtype shortcuts (last: their names shadow builtins in the class body) --
    def float(self) -> Any:
        return _cr.astype(self, "float32", copy=False)

    def double(self) -> Any:
        return _cr.astype(self, "float64", copy=False)

    def half(self) -> Any:
        return _cr.astype(self, "float16", copy=False)

    def long(self) -> Any:
        return _cr.astype(self, "int64", copy=False)

    def int(self) -> Any:
        return _cr.astype(self, "int32", copy=False)

    def bool(self) -> Any:
        return _cr.astype(self, "bool", copy=False)

    # -- pickling: rebuilt by this module, so the process that unpickles has the methods attached --
    def __reduce__(self) -> Any:
        return (_rebuild, (self.numpy(), str(self.device), self._dtype.name))  # type: ignore[attr-defined]


def _rebuild(values: np.ndarray, device: str, dtype: str = "") -> Any:
    return _cr.asarray(values, device=device, dtype=dtype or None)



def attach(cls: type, *mixins: type) -> None:
    """Give ``cls`` every attribute the ``mixins`` define (methods, properties, operators)."""
    for mixin in mixins:
        for name, value in vars(mixin).items():
            if name in ("__module__", "__qualname__", "__doc__", "__slots__", "__dict__", "__weakref__",
                        "__annotations__", "__firstlineno__", "__static_attributes__") or name in vars(cls):
                continue  # fmt: skip
            setattr(cls, name, value)


attach(NDArray, Operators, GradMethods, Methods, NumpyMethods)


def _set_shape(self: Any, value: Any) -> None:
    """``x.shape = (3, 1)``, as NumPy: the same data seen in a new shape, never a copy."""
    if self._ag is not None:
        raise AttributeError(f"shape: this array has a gradient record; assigning shape {value!r} would lose it. "
                             f"Use x = x.reshape({value!r})")
    new = _man.reshape(self, value)
    if new._storage is not self._storage:
        raise AttributeError(f"shape: an array of shape {self._shape} cannot take shape {value!r} without a copy "
                             f"(its elements are not laid out in that order); use x = x.reshape({value!r}), "
                             "which copies")
    self._view, self._shape = new._view, new._shape


NDArray.shape = property(operator.attrgetter("_shape"), _set_shape,  # type: ignore[assignment]
                         doc="The array's shape, a tuple of ints; assigning one reshapes in place, as NumPy.")
# The array layer is loaded, torch with it: its objects leave Python's collections (autopar/_gc.py's note).
_gc.freeze_once()
