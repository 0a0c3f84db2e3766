"""NumPy's ufunc objects: ``add``, ``maximum``, ``logical_or`` ... callable, with ``.reduce``,
``.accumulate``, ``.reduceat``, ``.outer`` and ``.at``.

Design note
-----------
A :class:`ufunc` wraps the elementwise function of the same name
(``_elementwise.FUNCTIONS``): calling it *is* calling that function, with
every argument passed on (``out=``, ``where=``, ``dtype=`` ... are the
function's), so the ufunc adds no second path and no copy of an op. Its methods are compositions of table entries that already exist,
plus two entries of their own:

``reduce``
    ``add`` is ``sum``, ``multiply`` ``prod``, ``maximum``/``minimum``
    ``max``/``min``, ``fmax``/``fmin`` the NaN-ignoring ones,
    ``logical_and``/``logical_or`` ``all``/``any``, ``logical_xor`` the
    parity of the count. NumPy's default ``axis=0`` (not ``None``).
``accumulate``
    ``add``/``multiply`` are ``cumsum``/``cumprod`` (their dtype rules are
    NumPy's); the running maximum, minimum, ``and`` and ``or`` are the entry
    ``ufunc.accumulate`` (``torch.cummax``/``cummin``).
``outer``
    the function on ``a`` reshaped to ``a.shape + (1,) * b.ndim`` and ``b``:
    broadcasting does the rest.
``at``
    NumPy's *unbuffered* in-place update: ``add.at(a, [0, 0], 1)`` adds 2 to
    ``a[0]``, where ``a[[0, 0]] += 1`` adds 1. The entry ``ufunc.at`` turns
    the index into positions of the flat array (``arange(a.size)`` indexed
    with the same key, so ints, slices and index arrays mean what they mean
    in ``a[key]``) and scatters ``b`` there with accumulation
    (``index_add``, ``scatter_reduce`` with ``prod``/``amax``/``amin``); the
    dispatcher writes the result through ``a``'s view (``bind_into``), so
    the update is one engine op that writes ``a``.
``reduceat``
    each segment's first element, then ``at`` with the segment's other
    elements: one gather and one scatter, whatever the segments (NumPy's rule
    for indices that do not increase included).

Each ufunc is an instance of its own subclass of :class:`ufunc` whose
``__call__`` is the elementwise function itself, so ``add(x, y)`` costs no
extra Python frame over the plain function. ``autopar.numpy`` serves
``numpy_mode_variant(u)``: the same, with the call and the methods run in
NumPy mode (``_dtypes.in_mode``), still an ``autopar.ufunc``.

A method a ufunc does not support raises ``TypeError`` naming the method,
the ufunc, and what works instead -- never ``'function' object has no
attribute 'accumulate'``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import torch

from autopar.arrays import _dtypes
from autopar.arrays import _manipulation as man
from autopar.arrays import _reductions as red
from autopar.arrays._dispatch import bind, bind_into
from autopar.arrays._dtypes import DType
from autopar.arrays._elementwise import FUNCTIONS, _BINARY_NAMES
from autopar.arrays._table import TABLE, define

_NO_VALUE: Any = object()

# NumPy's name -> the elementwise function it is (where they differ)
ALIASES = {
    "absolute": "abs", "fabs": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
    "arctan": "atan", "arctan2": "atan2", "arctanh": "atanh", "bitwise_not": "bitwise_invert",
    "invert": "bitwise_invert", "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
    "conjugate": "conj", "degrees": "rad2deg", "radians": "deg2rad", "mod": "remainder", "power": "pow",
    "true_divide": "divide", "rint": "round",
}  # fmt: skip

# identities NumPy gives (ufunc.identity); None: no identity
_IDENTITY: dict[str, Any] = {
    "add": 0, "subtract": None, "multiply": 1, "logical_and": True, "logical_or": False, "logical_xor": False,
    "bitwise_and": -1, "bitwise_or": 0, "bitwise_xor": 0, "maximum": None, "minimum": None,
}  # fmt: skip

_REDUCIBLE = ("add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or", "logical_xor")
_ACCUMULABLE = ("add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or")
_AT = {"add": "sum", "subtract": "sum", "multiply": "prod", "maximum": "amax", "minimum": "amin"}


# -- the two entries -----------------------------------------------------------------------------


def _running(t: torch.Tensor, ufunc: str, axis: int) -> torch.Tensor:
    if ufunc in ("logical_and", "logical_or"):
        b = (t != 0).to(torch.uint8)
        return (torch.cummin(b, axis) if ufunc == "logical_and" else torch.cummax(b, axis)).values.bool()
    if ufunc in ("fmax", "fmin") and t.is_floating_point():
        nan = torch.isnan(t)
        fill = -math.inf if ufunc == "fmax" else math.inf
        filled = torch.where(nan, fill, t)
        out = (torch.cummax(filled, axis) if ufunc == "fmax" else torch.cummin(filled, axis)).values
        all_nan = torch.cummin(nan.to(torch.uint8), axis).values.bool()  # every value so far is NaN
        return torch.where(all_nan, math.nan, out)
    if ufunc in ("maximum", "fmax"):
        return torch.cummax(t, axis).values
    return torch.cummin(t, axis).values


def _running_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    d = dtypes[0]
    if s["ufunc"].startswith("logical"):
        return (_dtypes.bool_,), None
    _dtypes.check_category(f"{s['ufunc']}.accumulate", d, "real")
    return (d,), None


def _at(t: torch.Tensor, b: torch.Tensor, *idx: torch.Tensor, key: tuple[Any, ...], ufunc: str) -> torch.Tensor:
    from autopar.arrays._indexing import _torch_key

    boolean = t.dtype is torch.bool  # or/and as sums/products of 0 and 1, as NumPy's bool add/multiply
    out = t.clone(memory_format=torch.contiguous_format)
    if boolean:
        out, b = out.to(torch.uint8), b.to(torch.uint8)
    if t.dim() == 1 and key == (("a", 0),) and idx[0].dtype is not torch.bool:  # a[indices]: the positions themselves
        picked = torch.where(idx[0] < 0, idx[0] + t.shape[0], idx[0])
    else:  # any key: the flat positions it picks, by indexing arange(a.size) with it
        positions = torch.arange(t.numel(), device=t.device).reshape(t.shape)
        k, numpy_shape, torch_shape = _torch_key(key, idx, positions)
        picked = positions[k]
        if numpy_shape is not None and numpy_shape != torch_shape:
            picked = picked.reshape(numpy_shape)
    values = b.to(out.dtype)
    if values.device != out.device:  # a Python number, as a 0-d CPU tensor
        values = torch.full((), values.item(), dtype=out.dtype, device=out.device)
    where = picked.reshape(-1)
    if values.dim() == 0:  # a number: one value seen at every position, no copy
        values = values.expand(where.shape)
    else:
        values = torch.broadcast_to(values, picked.shape).reshape(-1)
    flat = out.view(-1)
    if ufunc == "subtract":
        values = -values
    if _AT[ufunc] == "sum":
        flat.index_add_(0, where, values)
    else:
        flat.scatter_reduce_(0, where, values, reduce=_AT[ufunc], include_self=True)
    return out != 0 if boolean else out


def _at_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    a, b = dtypes[0], dtypes[1]
    _dtypes.check_category(op, a, "any" if s["ufunc"] in ("add", "multiply") else "real")
    r = _dtypes.result_type(a, b)
    return (r,), (r, r) + (None,) * (len(dtypes) - 2)


define("ufunc.accumulate", _running, _running_dtype, shape=lambda op, sh, s: (sh[0],))
define("ufunc.at", _at, _at_dtype, shape=lambda op, sh, s: (sh[0],), differentiable=False)


# -- the ufunc type ----------------------------------------------------------------------------------


class ufunc:  # noqa: N801 - NumPy's name
    """A NumPy-style ufunc: call it as the function, or use ``.reduce``/``.accumulate``/``.outer``/``.at``."""

    def __init__(self, name: str, base: str, fn: Callable[..., Any]) -> None:
        self.__name__ = self.__qualname__ = name
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn  # inspect.signature(ufunc) is the function's
        self._fn = fn
        self._base = base
        self.nin = 2 if base in _BINARY_NAMES else 1
        self.nout = 1
        self.nargs = self.nin + 1
        self.identity = _IDENTITY.get(base)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"

    def __reduce__(self) -> Any:  # pickles by name, as NumPy's do
        return (_by_name, (self.__name__,))

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self._fn)

    # -- methods ------------------------------------------------------------------------------------

    def _refuse(self, method: str, works: tuple[str, ...], hint: str) -> TypeError:
        if self.nin != 2:
            return TypeError(f"{self.__name__}.{method}: {method} needs a binary ufunc; {self.__name__} takes one "
                             f"argument (binary ufuncs with {method}: {', '.join(works)})")  # fmt: skip
        return TypeError(f"{self.__name__}.{method} is not supported; {method} works for {', '.join(works)}"
                         f"{hint}")  # fmt: skip

    def reduce(self, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False,
               initial: Any = _NO_VALUE, where: Any = True) -> Any:  # fmt: skip
        """Reduce along ``axis`` (default 0; None: every axis) by applying the ufunc repeatedly."""
        if self._base not in _REDUCIBLE:
            raise self._refuse("reduce", _REDUCIBLE, " (or compose: e.g. a[0] - add.reduce(a[1:]))")
        if where is not True:
            raise TypeError(f"{self.__name__}.reduce: where= is not supported; select first "
                            f"(a[mask]) or fill the masked elements with the identity ({self.identity})")  # fmt: skip
        a = man._array_like(array)
        name = self.__name__ + ".reduce"
        axes = tuple(range(a.ndim)) if axis is None else man.normalize_axes(name, axis, a.ndim)
        base = self._base
        if dtype is not None and base not in ("add", "multiply"):
            a = a.astype(_dtypes.as_dtype(dtype, name))
        if base == "add":
            r = red.sum(a, axis=axes, dtype=dtype, keepdims=keepdims)
        elif base == "multiply":
            r = red.prod(a, axis=axes, dtype=dtype, keepdims=keepdims)
        elif base in ("maximum", "minimum"):
            if initial is not _NO_VALUE and any(a.shape[i] == 0 for i in axes):  # empty: the initial value
                r = _full_reduced(a, axes, keepdims, initial)
                initial = _NO_VALUE
            else:
                r = (red.max if base == "maximum" else red.min)(a, axis=axes, keepdims=keepdims)
        elif base in ("fmax", "fmin"):
            from autopar.arrays import _numpy

            r = (_numpy.nanmax if base == "fmax" else _numpy.nanmin)(a, axis=axes, keepdims=keepdims)
        elif base == "logical_and":
            r = red.all(a, axis=axes, keepdims=keepdims)
        elif base == "logical_or":
            r = red.any(a, axis=axes, keepdims=keepdims)
        else:  # logical_xor: an odd number of true values
            r = FUNCTIONS["equal"](FUNCTIONS["remainder"](red.count_nonzero(a, axis=axes, keepdims=keepdims), 2), 1)
        if initial is not _NO_VALUE and initial is not None:
            r = self._fn(r, initial)
        return _store(r, out, name)

    def accumulate(self, array: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
        """The running result along ``axis`` (``maximum.accumulate`` is the running maximum)."""
        if self._base not in _ACCUMULABLE:
            raise self._refuse("accumulate", _ACCUMULABLE, "")
        a = man._array_like(array)
        name = self.__name__ + ".accumulate"
        if a.ndim == 0:
            raise ValueError(f"{name}: the array is 0-d; accumulate needs at least one dimension")
        ax = man.normalize_axis(name, axis, a.ndim)
        if self._base == "add":
            r = red.cumsum(a, axis=ax, dtype=dtype)
        elif self._base == "multiply":
            r = red.cumprod(a, axis=ax, dtype=dtype)
        else:
            if dtype is not None:
                a = a.astype(_dtypes.as_dtype(dtype, name))
            r = bind(TABLE["ufunc.accumulate"], (a,), {"ufunc": self._base, "axis": ax})
        return _store(r, out, name)

    def reduceat(self, array: Any, /, indices: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
        """Reductions over ``array[indices[i]:indices[i + 1]]`` along ``axis`` (``array[indices[i]]`` where the
        next index is not larger; the last runs to the end), NumPy's rule. The segments are laid out on the host
        from ``indices`` (an autopar array of them is read: waits); the data is not read."""
        import numpy as np

        from autopar.arrays._creation import asarray
        from autopar.arrays._indexing import take

        name = self.__name__ + ".reduceat"
        if self._base not in _AT or self._base == "subtract":
            raise self._refuse("reduceat", ("add", "multiply", "maximum", "minimum"), "")
        a = man._array_like(array)
        if dtype is not None:
            a = a.astype(_dtypes.as_dtype(dtype, name))
        elif self._base in ("add", "multiply") and a.dtype.kind in "biu":  # sums of small ints: NumPy's 64 bits
            a = a.astype(_dtypes.uint64 if a.dtype.kind == "u" else _dtypes.int64)
        ax = man.normalize_axis(name, axis, a.ndim)
        n = a.shape[ax]
        idx = np.asarray(indices.numpy() if hasattr(indices, "numpy") else indices).astype(np.int64).ravel()
        if idx.size == 0 or ((idx < 0) | (idx >= n)).any():
            raise IndexError(f"{name}: indices must be within [0, {n}) and not empty; got {idx.tolist()}")
        stops = np.append(idx[1:], n)
        seg, pos = [], []
        for i, (start, stop) in enumerate(zip(idx, stops)):
            rest = np.arange(start + 1, stop) if stop > start else np.arange(0)
            seg.append(np.full(rest.size, i))
            pos.append(rest)
        result = take(a, asarray(idx, device=a.device), axis=ax)  # each segment's first element
        positions = np.concatenate(pos)
        if positions.size:
            key = (slice(None),) * ax + (np.concatenate(seg),)
            self.at(result, key, take(a, asarray(positions, device=a.device), axis=ax))
        return _store(result, out, name)

    def outer(self, A: Any, B: Any, /, **kwargs: Any) -> Any:  # noqa: N803 - NumPy's names
        """``r[i..., j...] = ufunc(A[i...], B[j...])``: every pair of elements."""
        if self.nin != 2:
            raise self._refuse("outer", ("add", "multiply", "subtract", "maximum", "..."), "")
        a, b = man._array_like(A), man._array_like(B)
        return self._fn(man.reshape(a, a.shape + (1,) * b.ndim), b, **kwargs)

    def at(self, a: Any, indices: Any, b: Any = None, /) -> None:
        """Unbuffered in place: ``a[indices] = ufunc(a[indices], b)``, repeated indices applied each time."""
        from autopar.arrays import _array
        from autopar.arrays._indexing import _advanced, _normalize

        name = self.__name__ + ".at"
        if self._base not in _AT:
            raise self._refuse("at", tuple(_AT), "; for others, index with unique indices: a[i] = f(a[i], b)")
        if type(a) is not _array.NDArray:
            raise TypeError(f"{name}: a must be an autopar array (it is updated in place); got {type(a).__name__}")
        if b is None:
            raise TypeError(f"{name}: {self.__name__} is binary; pass the values: {name}(a, indices, b)")
        key = _normalize(name, indices)
        # every index as an array, so the key is "advanced" and its template says what each index is
        target, template, arrays, masked = _advanced(name, a, key if any(_is_array(k) for k in key) else
                                                     (_as_index(key[0], a),) + key[1:])  # fmt: skip
        if type(b) is not _array.NDArray and type(b) not in (bool, int, float, complex):
            from autopar.arrays._creation import asarray

            b = asarray(b, device=a.device)
        bind_into(TABLE["ufunc.at"], target, (target, b, *arrays), {"key": template, "ufunc": self._base},
                  what=name)  # fmt: skip
        return None


def _is_array(k: Any) -> bool:
    return not (type(k) in (int, slice, bool) or k is None or k is Ellipsis)


def _as_index(k: Any, a: Any) -> Any:
    """A basic first index made an index array (so ``add.at(a, 2, 1)`` and ``add.at(a, slice(...), 1)`` work)."""
    import numpy as np

    if type(k) is int:
        return np.asarray(k)
    if type(k) is slice:
        return np.arange(a.shape[0])[k]
    return k


def _full_reduced(a: Any, axes: tuple[int, ...], keepdims: bool, value: Any) -> Any:
    from autopar.arrays._creation import full

    shape = tuple((1 if keepdims else None) if i in axes else n for i, n in enumerate(a.shape))
    return full(tuple(n for n in shape if n is not None), value, dtype=a.dtype, device=a.device)


def _store(r: Any, out: Any, name: str) -> Any:
    if out is None:
        return r
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"{name}: out= takes one array (or a 1-tuple); got {len(out)}")
        out = out[0]
    out[...] = r
    return out


def make(name: str) -> ufunc:
    """The ufunc ``name``: an instance of a subclass whose ``__call__`` *is* the function (no extra
    frame per call), named ``ufunc`` as NumPy's type is."""
    base = ALIASES.get(name, name)
    fn = FUNCTIONS[base]
    cls = type("ufunc", (ufunc,), {"__call__": staticmethod(fn), "__module__": "autopar"})
    return cls(name, base, fn)


class _NumpyModeUfunc(ufunc):
    """A ufunc as ``autopar.numpy`` serves it: its call and its methods run in NumPy mode."""

    def reduce(self, *args: Any, **kwargs: Any) -> Any:
        return _dtypes.in_mode(True, ufunc.reduce, self, *args, **kwargs)

    def accumulate(self, *args: Any, **kwargs: Any) -> Any:
        return _dtypes.in_mode(True, ufunc.accumulate, self, *args, **kwargs)

    def outer(self, *args: Any, **kwargs: Any) -> Any:
        return _dtypes.in_mode(True, ufunc.outer, self, *args, **kwargs)

    def at(self, *args: Any, **kwargs: Any) -> Any:
        return _dtypes.in_mode(True, ufunc.at, self, *args, **kwargs)

    def reduceat(self, *args: Any, **kwargs: Any) -> Any:
        return _dtypes.in_mode(True, ufunc.reduceat, self, *args, **kwargs)

    def __reduce__(self) -> Any:
        return (_numpy_by_name, (self.__name__,))


def numpy_mode_variant(u: ufunc) -> ufunc:
    """``u`` in NumPy mode (what ``autopar.numpy.<name>`` is): still an ``autopar.ufunc``."""
    fn = u._fn

    def call(*args: Any, **kwargs: Any) -> Any:
        return _dtypes.in_mode(True, fn, *args, **kwargs)

    cls = type("ufunc", (_NumpyModeUfunc,), {"__call__": staticmethod(call), "__module__": "autopar.numpy"})
    return cls(u.__name__, u._base, fn)


def _numpy_by_name(name: str) -> Any:
    import autopar.numpy

    return getattr(autopar.numpy, name)


def _by_name(name: str) -> Any:
    import autopar

    return getattr(autopar, name)


def _numpy_ufunc(name: str) -> bool:
    import numpy as np

    return isinstance(getattr(np, name, None), np.ufunc)


# the names NumPy has as ufuncs (``round``, ``relu`` stay plain functions)
UFUNCS: dict[str, ufunc] = {n: make(n) for n in [*FUNCTIONS, *ALIASES] if _numpy_ufunc(n)}
