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
"""

from __future__ import annotations

import threading
import types
from collections.abc import Sequence
from typing import Any

import torch

from autopar.arrays import _dtypes, _infer
from autopar.arrays._array import NDArray
from autopar.arrays._dtypes import DType
from autopar.arrays._table import OpDef

# Work (elements read + written + multiply-adds) up to which a ready op may run on the
# calling thread: about 20 us of kernel on one core, the cost of handing it to a worker.
TINY_WORK = 1 << 15
_SCALARS = (bool, int, float, complex)
_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_WIDENED = (torch.float16, torch.bfloat16)  # torch computes with a Python number next to these in float32
Shape = tuple[int, ...]


class Plan:
    """What step 2 found for one signature of one op (cached)."""

    __slots__ = ("in_dtypes", "kernel_dtypes", "out_dtypes", "out_shapes", "in_shapes", "small", "int_scalars", "arrays",
                 "array_and_number", "numbers_as_tensors", "number")  # fmt: skip

    def __init__(self, entry: OpDef, args: Sequence[Any], static: dict[str, Any], like: DType | None) -> None:
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
                shapes.append(a.shape)
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
        elif entry.shape is not None:
            self.out_shapes = entry.shape(op, self.in_shapes, static)
        else:
            self.out_shapes = _infer.shapes(entry, self.in_shapes, kernel, static)
        self.small = entry.work(self.in_shapes, self.out_shapes, static) <= TINY_WORK
        # x + 1, x + y: an elementwise kernel that takes an array, then a number or an array (bind's fast path)
        self.array_and_number = (
            len(args) == 2 and self.arrays[:1] == (0,) and entry.scalars and entry.nout == 1 and not static
        )
        # x + 1 with a torch kernel: the number may reach it as a 0-d tensor of the same dtype (module note)
        self.numbers_as_tensors = (
            self.array_and_number and self.arrays == (0,) and isinstance(entry.kernel, types.BuiltinFunctionType)
            and kernel[1] is kernel[0] and kernel[0] not in _WIDENED
        )
        self.number: tuple[Any, Any] | None = None  # (the last Python number seen, its 0-d tensor or None)

    def kernel_number(self, number: Any) -> Any:
        """``number`` as the kernel gets it (``numbers_as_tensors``): the number, or once the same
        object comes again, its 0-d tensor (module note). One tuple assignment: safe across threads."""
        seen = self.number
        if seen is None or seen[0] is not number:
            self.number = (number, None)
            return number
        tensor = seen[1]
        if tensor is None:  # as torch wraps a number (int64, float64, complex128, bool), cast to the kernel dtype
            try:
                tensor = torch.tensor(number).to(self.kernel_dtypes[0])
            except (OverflowError, ValueError, RuntimeError):  # an int beyond int64: the kernel says what it says
                tensor = number
            self.number = (number, tensor)
        return tensor


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
    if len(args) == 2 and not static and like is None:  # the hot case, x + y and x + 1: no list
        a, b = args
        tb = type(b)
        if type(a) is NDArray and (tb is NDArray or tb in _SCALARS):
            k2 = (entry, a._dtype, a.shape, b._dtype, b.shape) if tb is NDArray else (entry, a._dtype, a.shape, tb)
            hit = _plans.get(k2)
            if hit is not None:
                if hit.int_scalars:
                    _dtypes.scalar_dtype(entry.name, hit.in_dtypes[1], b)  # OverflowError when it does not fit
                return hit
            return _remember(k2, Plan(entry, args, static, like))
    key: list[Any] = [entry, like]
    for a in args:
        t = type(a)
        if t is NDArray:
            key.append(a._dtype)
            key.append(a.shape)
        elif t in _SCALARS:
            key.append(t)
        else:
            raise TypeError(
                f"{entry.name}: unsupported operand {a!r:.60} ({t.__name__}); expected an autopar array "
                f"or a Python number (convert other data with autopar.asarray(...))"
            )
    if static:
        key.append(tuple(static.items()))
    try:
        k = tuple(key)
        cached = _plans.get(k)
    except TypeError:  # an unhashable static parameter (a list): plan without caching
        return Plan(entry, args, static, like)
    if cached is None:
        return _remember(k, Plan(entry, args, static, like))
    for i in cached.int_scalars:
        _dtypes.scalar_dtype(entry.name, cached.in_dtypes[i], args[i])  # OverflowError when it does not fit
    return cached


