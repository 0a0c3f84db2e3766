"""The op table: every array operation defined once.

Design note
-----------
An op is an :class:`OpDef` in ``TABLE``, registered once by name (JAX's
``Primitive``; PyTorch's ``native_functions.yaml``). An entry says:

``kernel``
    A pure function ``kernel(*tensors, **static) -> Tensor | tuple[Tensor, ...]``
    of torch tensors and *static* parameters (ints, floats, strings, tuples,
    dtypes: hashable and picklable). It never writes its inputs and never
    returns one of them (the dispatcher copies a result that aliases an
    input). Because it is functional, torch can differentiate it
    (``torch.func.vjp``), and because it is found by ``name`` and called with
    picklable ``static``, a remote node can run the same entry of its own
    autopar (the cluster layer does).
``dtype``
    The dtype rule: ``dtype(op, in_dtypes, static) -> (out_dtypes, casts)``,
    where ``casts`` gives, per input, the dtype the kernel sees it in (``None``
    keeps it). It validates the inputs' dtype categories (the standard's "should
    have a numeric data type") and applies promotion (``_dtypes.py``): the
    standard's table within a kind, NumPy's across kinds. torch's own
    promotion is never relied on -- the inputs reach the kernel already in the
    computation dtype, which is what fixes ``arange(3) @ ones(3)``.
``shape``
    The shape rule: ``shape(op, in_shapes, static) -> out_shapes``, written by
    hand only where it is short and hot (broadcasting, reductions, products)
    or where torch's meta kernel is slow to load (convolution, linear); a rule
    may answer ``None`` for calls it leaves to torch. No rule (or ``None``)
    means: run the kernel on torch *meta* tensors (no data, no memory) and
    read the shapes, cached per (op, shapes, computation dtypes, static). Measured here: a meta evaluation costs 40-140 us, a cache hit
    well under 1 us, a hand broadcast rule 0.3 us; the shape answers of torch's
    meta kernels are the standard's for every op in the table (tested against
    array-api-strict), so hand rules exist only for speed and for messages.
``work``
    ``work(in_shapes, out_shapes, static) -> int``: elements read plus
    written, plus multiply-adds for products. The dispatcher runs an op on
    the calling thread (``inline``) when its work is small, so ``x.sum()`` of
    a big array is never synchronous however small its output.
``differentiable`` / ``vjp``
    For gradients (``_autograd.py``): whether results of the op can carry a
    gradient (ops whose results are only ints or bools -- comparisons,
    ``argmax`` -- say False), and an override of the derivative, for the few
    kernels torch has none for: ``vjp(cotangents, inputs, outputs, **static)
    -> one gradient (or None) per input``, where ``cotangents`` has one
    entry per result (None: no gradient reached it). Without it, torch's
    autograd differentiates ``kernel``: the forward op keeps the graph torch
    builds while it runs.
``data_dependent``
    The output shape depends on values (``nonzero``, ``unique_*``, boolean
    masks): the dispatcher pushes the op, waits for it, then reads the shape.
``kernel_dtype``
    How inputs reach the kernel: ``"compute"`` in the dtype torch computes
    in (``uint16``/``uint32``/``uint64`` as ``int64``, which torch has
    kernels for); ``"bits"`` as the signed type of the same size, the same
    bits, for ops that only move data (copies, flips, shifts of position);
    ``"exact"`` in their own dtype (conversions, the user's own functions).
``scalars``
    The kernel takes a Python number in place of any tensor operand after the
    first (``torch.add(t, 1)``); otherwise numbers reach it as 0-d CPU
    tensors, which torch mixes with CUDA tensors without a device sync.
``elementwise``
    An elementwise op whose operands broadcast (``_elementwise._ew``): with a
    torch kernel that answers a new tensor, ``f(x, y)`` on two arrays takes
    the dispatcher's lean path even without ``scalars`` (``maximum``,
    ``logical_and``).

In-place forms (``x += y``, ``add_``) are not separate kernels: the dispatcher
runs the out-of-place kernel and writes its result through the target's view
(``_dispatch.bind_into``), so overlap (``m += m.T``) is always safe.

Adding an op is one call of :func:`define` (usually through a family helper
in ``_elementwise.py``, ``_reductions.py``, ...) plus its test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autopar.arrays import _dtypes
from autopar.arrays._dtypes import DType

Shape = tuple[int, ...]
DtypeRule = Callable[[str, tuple[DType, ...], dict[str, Any]], tuple[tuple[DType, ...], tuple[DType | None, ...] | None]]
ShapeRule = Callable[[str, tuple[Shape, ...], dict[str, Any]], tuple[Shape, ...] | None]
WorkRule = Callable[[tuple[Shape, ...], tuple[Shape, ...], dict[str, Any]], int]


def elements(in_shapes: tuple[Shape, ...], out_shapes: tuple[Shape, ...], static: dict[str, Any]) -> int:
    """Default work: elements read plus elements written."""
    total = 0
    for s in in_shapes:
        total += math.prod(s)
    for s in out_shapes:
        total += math.prod(s)
    return total


@dataclass(frozen=True, slots=True, eq=False)
class OpDef:
    name: str
    kernel: Callable[..., Any]
    dtype: DtypeRule
    shape: ShapeRule | None = None
    work: WorkRule = elements
    nout: int = 1
    differentiable: bool = True
    vjp: Callable[..., Any] | None = None
    data_dependent: bool = False
    scalars: bool = False
    kernel_dtype: str = "compute"
    elementwise: bool = False

    def __repr__(self) -> str:
        return f"<OpDef {self.name}>"


TABLE: dict[str, OpDef] = {}


def define(name: str, kernel: Callable[..., Any], dtype: DtypeRule, **fields: Any) -> OpDef:
    """Register the op ``name``; each name is defined once."""
    if name in TABLE:
        raise ValueError(f"op {name!r} is already in the table")
    entry = OpDef(name, kernel, dtype, **fields)
    TABLE[name] = entry
    return entry


def lookup(name: str) -> OpDef:
    try:
        return TABLE[name]
    except KeyError:
        raise KeyError(f"no op named {name!r} in autopar's op table") from None


# -- dtype rules, by the standard's wording --------------------------------------------------


def promoting(category: str = "any") -> DtypeRule:
    """Inputs of ``category``, promoted together; the result has the promoted dtype."""

    def rule(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
        for i, d in enumerate(dtypes):
            _dtypes.check_category(op, d, category, _arg(i, len(dtypes)))
        r = _dtypes.result_type(*dtypes)
        return (r,), (r,) * len(dtypes)

    return rule


def comparing(category: str = "any") -> DtypeRule:
    """Inputs promoted together and compared: the result is bool."""

    def rule(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
        for i, d in enumerate(dtypes):
            _dtypes.check_category(op, d, category, _arg(i, len(dtypes)))
        r = _dtypes.result_type(*dtypes)
        return (_dtypes.bool_,), (r,) * len(dtypes)

    return rule


def floating(category: str = "numeric", ufunc: bool = False) -> DtypeRule:
    """Inputs promoted, then made floating: integers become the default float (``int / int``), or for a
    ``ufunc`` (``sqrt``, ``exp``) in NumPy mode NumPy's smallest safe float (``_dtypes.ufunc_float``)."""
    to_float = _dtypes.ufunc_float if ufunc else _dtypes.to_float

    def rule(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
        for i, d in enumerate(dtypes):
            _dtypes.check_category(op, d, category, _arg(i, len(dtypes)))
        r = to_float(_dtypes.result_type(*dtypes))
        return (r,), (r,) * len(dtypes)

    return rule


def same(category: str = "any") -> DtypeRule:
    """The result has the (first) input's dtype; inputs are not cast."""

    def rule(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
        _dtypes.check_category(op, dtypes[0], category)
        return (dtypes[0],), None

    return rule


def fixed(out: DType | Callable[[tuple[DType, ...], dict[str, Any]], tuple[DType, ...]], category: str = "any") -> DtypeRule:
    """A result dtype that does not follow the inputs (``argmax`` gives int64)."""

    def rule(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
        for i, d in enumerate(dtypes):
            _dtypes.check_category(op, d, category, _arg(i, len(dtypes)))
        outs = (out,) if isinstance(out, DType) else out(dtypes, static)
        return outs, None

    return rule


def _arg(i: int, n: int) -> str:
    return "x" if n == 1 else f"x{i + 1}"
