"""Step 2 of the dispatcher: what a call's signature gives, cached.

A :class:`Plan` holds what the entry's rules say about one signature --
result dtypes and shapes, the dtype each input reaches the kernel in, where
the arrays are among the operands, whether the op is small enough to run
inline -- and :func:`plan` caches it per (op, input dtypes and shapes, kinds
of Python numbers, static parameters). A repeated call costs one dict
lookup; the only thing checked per call is that an int operand fits the
dtype it takes (``OverflowError``).

A plan of ``x + 1`` also remembers the last Python number it saw, and once
the same number object comes again, a 0-d tensor of it in the kernel dtype
(``number``): torch takes a 0-d tensor in about half the time it takes to
wrap a Python number (2.1 vs 4.6 us for ``torch.add`` on 16 elements), and a
loop's constant is one object. Only for torch's own kernels, where the
number's dtype is the tensor's and that dtype computes in itself (not
float16/bfloat16, whose kernels keep a Python number in float32): there
torch computes with the number cast to that dtype either way, so the result
is the same. Identity, not equality, picks the tensor: ``-0.0 == 0.0``
and ``1 == 1.0 == True``, but one object has one value and type.

NumPy mode (``_dtypes``' note) changes what a signature gives (``int / int``
is float64 there), so it is part of the key: a call is in NumPy mode when
its thread is (one thread-local read, ``_dtypes.numpy_mode.on``) or when an
array operand was made in it (``Storage.npmode``, a class attribute:
``NumpyStorage``'s is True); such a key ends with ``True``, and its plan has
``npmode`` set and makes its results' storages with ``storage``
(``NumpyStorage``).
"""

from __future__ import annotations

import threading
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from autopar.arrays import _dtypes, _infer
from autopar.arrays._array import NDArray
from autopar.arrays._dtypes import DType
from autopar.arrays._table import OpDef
from autopar.arrays._views import NumpyStorage, Storage

# Work (elements read + written + multiply-adds) up to which a ready op may run on the
# calling thread: about 20 us of kernel on one core, the cost of handing it to a worker.
TINY_WORK = 1 << 15
# Work above which torch may split a kernel across its intra-op threads (its smallest grain is 2,048
# elements): a small op above it runs on one thread (engine/_bulk.py), below it there is nothing to split.
THREADED_WORK = 1 << 12
_SCALARS = (bool, int, float, complex)
NONE, ARRAYS, ARRAY_NUMBER, NUMBER_ARRAY, UNARY = 0, 1, 2, 3, 4  # Plan.lean: the dispatcher's lean path that applies
_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_WIDENED = (torch.float16, torch.bfloat16)  # torch computes with a Python number next to these in float32
Shape = tuple[int, ...]


class Plan:
    """What step 2 found for one signature of one op (cached)."""

    __slots__ = ("in_dtypes", "kernel_dtypes", "out_dtypes", "out_shapes", "in_shapes", "small", "one_thread",
                 "int_scalars", "arrays",
                 "lean", "exact", "inplace", "numbers_as_tensors", "number", "npmode", "storage")  # fmt: skip

    def __init__(self, entry: OpDef, args: Sequence[Any], static: dict[str, Any], like: DType | None,
                 npmode: bool = False) -> None:
        self.npmode = npmode
        self.storage = NumpyStorage.fresh if npmode else Storage.fresh  # the results' storages (marked in NumPy mode)
        if npmode and not _dtypes.numpy_mode.on:  # an array made in NumPy mode: its rules, for this plan
            _dtypes.in_mode(True, self._plan, entry, args, static, like)
        else:
            self._plan(entry, args, static, like)

    def _plan(self, entry: OpDef, args: Sequence[Any], static: dict[str, Any], like: DType | None) -> None:
        op = entry.name
        dtypes: list[DType] = []
        shapes: list[Shape] = []
        arrays = [a for a in args if type(a) is NDArray]
        self.arrays = tuple(i for i, a in enumerate(args) if type(a) is NDArray)
        if like is None and arrays:
            like = _dtypes.result_type(*(a._dtype for a in arrays))
        weak = None
        self.int_scalars: tuple[int, ...] = ()
        for i, a in enumerate(args):
            if type(a) is NDArray:
                dtypes.append(a._dtype)
                shapes.append(a._shape)
                continue
            if like is None:
                d = _dtypes.infer_python(a)
            else:
                d = _dtypes.scalar_dtype(op, like, a)
                if type(a) is int and d.kind in "iu":
                    self.int_scalars += (i,)
                if d.kind != like.kind and _KIND_ORDER[d.kind] > _KIND_ORDER[like.kind]:
                    weak = d if weak is None else _dtypes.promote(weak, d)
            dtypes.append(d)
            shapes.append(())
        if weak is not None:
            # A Python number of a higher kind (a float next to an int array) sets the result's
            # dtype by itself: arrays of a lower kind are seen in its dtype (weak scalars).
            order = _KIND_ORDER[weak.kind]
            dtypes = [weak if _KIND_ORDER[d.kind] < order else d for d in dtypes]
        outs, casts = entry.dtype(op, tuple(dtypes), static)
        field = {"compute": "compute", "bits": "moves", "exact": "torch"}[entry.kernel_dtype]
        if casts is None:
            kernel = tuple(getattr(d, field) for d in dtypes)
        else:
            kernel = tuple(getattr(c if c is not None else d, field) for c, d in zip(casts, dtypes))
        self.in_dtypes = tuple(dtypes)
        self.kernel_dtypes = kernel
        self.out_dtypes = outs
        self.in_shapes = tuple(shapes)
        if entry.data_dependent:
            self.out_shapes: tuple[Shape, ...] = ((0,),) * entry.nout
        else:  # the entry's rule where it answers (not None), else torch's meta kernels
            found = entry.shape(op, self.in_shapes, static) if entry.shape is not None else None
            self.out_shapes = found if found is not None else _infer.shapes(entry, self.in_shapes, kernel, static)
        work = entry.work(self.in_shapes, self.out_shapes, static)
        self.small = work <= TINY_WORK
        self.one_thread = self.small and work > THREADED_WORK
        # The dispatcher's lean paths (its module note): an elementwise kernel that takes a Python number
        # in place of a tensor, on two operands -- x + y (ARRAYS), x + 1 (ARRAY_NUMBER), 1 - x (NUMBER_ARRAY:
        # only for torch's own kernels, which take the number as a 0-d tensor of their dtype) -- and torch's
        # own elementwise kernels of two arrays that answer a new tensor (maximum(x, y): ARRAYS too).
        builtin = isinstance(entry.kernel, types.BuiltinFunctionType)
        exact_number = builtin and len(kernel) == 2 and kernel[1] is kernel[0] and kernel[0] not in _WIDENED
        self.lean = NONE
        if (len(args) == 2 and self.arrays == (0, 1) and entry.elementwise and not entry.scalars and builtin
                and entry.nout == 1 and not static and not entry.data_dependent and _fresh_result(entry, kernel)):
            self.lean = ARRAYS
        elif len(args) == 2 and entry.scalars and entry.nout == 1 and not static:
            if self.arrays == (0, 1):
                self.lean = ARRAYS
            elif self.arrays == (0,):
                self.lean = ARRAY_NUMBER
            elif self.arrays == (1,) and exact_number:
                self.lean = NUMBER_ARRAY
        elif (len(args) == 1 and self.arrays == (0,) and builtin and entry.nout == 1 and not static
              and not entry.data_dependent and self.out_shapes[0] == self.in_shapes[0] and _fresh_result(entry, kernel)):
            self.lean = UNARY  # exp(x), -x: torch's own elementwise kernel, which answers a new tensor
        if any(type(a) is bool and k is not torch.bool for a, k in zip(args, kernel)):
            self.lean = NONE  # x - True with x int8: the general path gives torch 1, not a bool (_eager)
        # x + 1 with a torch kernel: the number may reach it as a 0-d tensor of the same dtype (module note)
        self.numbers_as_tensors = self.lean == ARRAY_NUMBER and exact_number
        # The lean path's kernel needs no cast: the arrays are stored in the kernel's dtypes, and the kernel
        # answers in the result's (asked of torch's meta kernel once; its runners then skip the checks)
        self.exact = self.lean != NONE and all(
            args[i]._dtype.torch is kernel[i] for i in self.arrays
        ) and _result_dtype(entry, kernel) is outs[0].torch  # fmt: skip
        # x += y, x += 1 into the first operand: torch's in-place kernel may write it, no cast
        self.inplace: Any = None  # torch's in-place method of the kernel (``torch.Tensor.add_``)
        if self.lean in (ARRAYS, ARRAY_NUMBER) and entry.scalars and builtin and outs[0] is args[0]._dtype \
                and kernel[0] is args[0]._dtype.torch and self.out_shapes[0] == self.in_shapes[0]:
            self.inplace = getattr(torch.Tensor, f"{entry.kernel.__name__}_", None)
        self.number: tuple[Any, Any] | None = None  # (the last Python number seen, its 0-d tensor or None)

    def kernel_number(self, number: Any) -> Any:
        """``number`` as the kernel gets it (``numbers_as_tensors``): the number, or once the same
        object comes again, its 0-d tensor (module note). One tuple assignment: safe across threads."""
        seen = self.number
        if seen is None or seen[0] is not number:
            self.number = (number, None)
            return number
        tensor = seen[1]
        if tensor is None:
            tensor = _number_tensor(number, self.kernel_dtypes[0])
            self.number = (number, tensor)
        return tensor

    def number_tensor(self, number: Any) -> Any:
        """``number`` as a 0-d tensor of the kernel dtype, remembered by identity (``NUMBER_ARRAY``:
        torch's kernels take no number first); None if it has no such tensor (not remembered)."""
        seen = self.number
        if seen is not None and seen[0] is number:
            return seen[1]
        tensor = _number_tensor(number, self.kernel_dtypes[1])
        if type(tensor) is not torch.Tensor:
            return None
        self.number = (number, tensor)
        return tensor


# The two questions below are asked of 0-d CPU tensors, not meta ones: a meta kernel may load torch's
# decompositions, which import sympy and torch._dynamo on first use (a second of a program's first step).


@contextmanager
def no_modes() -> Iterator[None]:
    """No torch mode active while a plan asks the kernel about itself: a plan is kept for every later call,
    made under a mode or not (a mode answering a subclass alias made ``exp`` leave its lean path for good)."""
    with torch._C.DisableTorchFunction(), _disable_current_modes():
        yield


def _fresh_result(entry: OpDef, kernel_dtypes: tuple[torch.dtype, ...]) -> bool:
    """Whether ``entry``'s kernel answers a new contiguous tensor, not an input or a view of one
    (``torch.positive`` answers its input)."""
    inputs = [torch.ones((2,), dtype=d) for d in kernel_dtypes]
    try:
        with no_modes():
            out = entry.kernel(*inputs)
    except Exception:  # noqa: BLE001 - no answer: the general path, which copies what aliases
        return False
    return isinstance(out, torch.Tensor) and not _among(out, inputs) and not out._is_view() and out.is_contiguous()


def _among(t: torch.Tensor, inputs: list[torch.Tensor]) -> bool:
    return any(t is i for i in inputs)


def _result_dtype(entry: OpDef, kernel_dtypes: tuple[torch.dtype, ...]) -> torch.dtype | None:
    """The dtype ``entry``'s kernel answers in for inputs of ``kernel_dtypes``."""
    try:
        with no_modes():
            out = entry.kernel(*[torch.ones((), dtype=d) for d in kernel_dtypes])
    except Exception:  # noqa: BLE001 - no answer: the runners check and cast
        return None
    return out.dtype if isinstance(out, torch.Tensor) else None


def _number_tensor(number: Any, dtype: torch.dtype) -> Any:
    """``number`` in ``dtype`` as torch's kernels convert a Python number: made in that dtype directly, so
    a float64 kernel gets every bit of a float (never a float32 tensor cast up); the number itself if it
    does not fit (an int beyond int64: the kernel says what it says, as the first time)."""
    if type(number) is int and not -(2**63) <= number < 2**63:
        return number
    try:
        return torch.tensor(number, dtype=dtype)
    except (OverflowError, ValueError, RuntimeError, TypeError):
        return number


_numpy_mode = _dtypes.numpy_mode
_plans: dict[Any, Plan] = {}
_plans_lock = threading.Lock()
MAX_PLANS = 65_536


def _remember(key: Any, found: Plan) -> Plan:
    with _plans_lock:
        if len(_plans) >= MAX_PLANS:
            _plans.clear()
        _plans[key] = found
    return found


def plan(entry: OpDef, args: Sequence[Any], static: dict[str, Any], like: DType | None = None) -> Plan:
    """The cached :class:`Plan` for this call's signature (step 2)."""
    npmode = _numpy_mode.on
    if len(args) == 2 and not static and like is None:  # the hot case, x + y, x + 1, 1 - x: no list
        a, b = args
        ta, tb = type(a), type(b)
        if ta is NDArray:
            if tb is NDArray:
                npmode = npmode or a._storage.npmode or b._storage.npmode
                k2: Any = (entry, a._dtype, a._shape, b._dtype, b._shape, True) if npmode else \
                    (entry, a._dtype, a._shape, b._dtype, b._shape)
            elif tb in _SCALARS:
                npmode = npmode or a._storage.npmode
                k2 = (entry, a._dtype, a._shape, tb, True) if npmode else (entry, a._dtype, a._shape, tb)
            else:
                k2 = None
        elif tb is NDArray and ta in _SCALARS:
            npmode = npmode or b._storage.npmode
            k2 = (entry, ta, b._dtype, b._shape, True) if npmode else (entry, ta, b._dtype, b._shape)
        else:
            k2 = None
        if k2 is not None:
            hit = _plans.get(k2)
            if hit is not None:
                if hit.int_scalars:
                    i = hit.int_scalars[0]  # OverflowError when it does not fit
                    _dtypes.scalar_dtype(entry.name, hit.in_dtypes[i], args[i])
                return hit
            return _remember(k2, Plan(entry, args, static, like, npmode))
    key: list[Any] = [entry, like]
    for a in args:
        t = type(a)
        if t is NDArray:
            key.append(a._dtype)
            key.append(a._shape)
            if a._storage.npmode:
                npmode = True
        elif t in _SCALARS:
            key.append(t)
        else:
            raise TypeError(
                f"{entry.name}: unsupported operand {a!r:.60} ({t.__name__}); expected an autopar array "
                f"or a Python number (convert other data with autopar.asarray(...))"
            )
    if static:
        key.append(tuple(static.items()))
    if npmode:
        key.append(True)
    try:
        k = tuple(key)
        cached = _plans.get(k)
    except TypeError:  # an unhashable static parameter (a list): plan without caching
        return Plan(entry, args, static, like, npmode)
    if cached is None:
        return _remember(k, Plan(entry, args, static, like, npmode))
    for i in cached.int_scalars:
        _dtypes.scalar_dtype(entry.name, cached.in_dtypes[i], args[i])  # OverflowError when it does not fit
    return cached


