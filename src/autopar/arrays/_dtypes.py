"""Dtypes: autopar's dtype objects, parsing, type promotion and Python scalars.

``autopar.float32`` and friends are :class:`DType` objects. ``x.dtype`` is one
of them, and each compares equal to its NumPy spellings (``numpy.float32``,
``numpy.dtype("float32")``, ``"float32"``) and to its torch dtype, so code
written against NumPy's dtypes keeps working; NumPy also accepts them
(``numpy.zeros(3, dtype=autopar.float32)``) through their ``dtype`` attribute.

Promotion. Between arrays, autopar promotes as NumPy 2 does
(``numpy.promote_types``): within a kind that is the Array API standard's
table; across kinds, where the standard leaves the result to the library,
it is NumPy's answer (``int64 + float32 -> float64``, ``int64 + uint64 ->
float64``). ``bfloat16``, which NumPy lacks, promotes as in torch.

Python scalars are *weak* (standard §"Mixing arrays with Python scalars"): an
``int`` keeps an integer or float array's dtype and must fit in it
(``OverflowError`` otherwise, as NumPy 2 raises); a ``float`` keeps a float
array's dtype; a ``complex`` makes a float array the complex type of its
precision. Where the standard leaves the choice (a float scalar with an
integer array, an int scalar with a bool array) the result is the default
dtype of the scalar's kind: the default float (below), ``int64``, and the
default complex -- NumPy does the same with its own defaults.

Default dtypes and NumPy mode. ``import autopar`` makes Python floats
``float32`` (the deep-learning default, MXNet's and PyTorch's); ``import
autopar.numpy`` follows NumPy: ``float64``, ``complex128``, and NumPy's
ufunc rule for integer inputs of floating functions (``sqrt(int8)`` is
``float16``, ``int / int`` and ``mean`` are ``float64``). Which applies is
*NumPy mode* (:data:`numpy_mode`): on for a call through ``autopar.numpy``
(a thread-local flag its functions set), for an op on an array made in
NumPy mode (``Storage.npmode``: results keep NumPy's rules), and everywhere
after ``set_default_dtype("float64")`` (``AUTOPAR_DEFAULT_DTYPE``). The
plan cache keys on it (``_plan``).

Computation dtypes. torch has few kernels for ``uint16``/``uint32``/``uint64``:
the dispatcher computes them in ``int64`` and casts the result back (exact
for ``uint16``/``uint32``; for ``uint64`` exact below ``2**63``, and
wrapping arithmetic stays exact above -- ordering and division of values
``>= 2**63`` are not, see docs/arrays.md). Ops that only move data (copies,
indexing, flips, joins) see them as the signed type of the same size: the
same bits, and torch has those kernels.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import torch
from torch import dtype as TorchDtype


class DType:
    """An autopar dtype: ``autopar.float32``, ``autopar.int64``, ``autopar.bool``, ..."""

    __slots__ = ("name", "torch", "kind", "itemsize", "numpy", "compute", "moves")

    name: str
    torch: TorchDtype
    kind: str  # "b" bool, "i" signed, "u" unsigned, "f" real floating, "c" complex floating
    itemsize: int
    numpy: Any  # the NumPy dtype, or None (bfloat16)
    compute: TorchDtype  # the dtype torch computes this one in
    moves: TorchDtype  # the dtype torch moves this one in (same bits; copies, indexing, joins)

    def __init__(self, name: str, tdtype: TorchDtype, kind: str) -> None:
        self.name = name
        self.torch = tdtype
        self.kind = kind
        self.itemsize = tdtype.itemsize
        self.numpy = None if name == "bfloat16" else np.dtype(name)
        self.compute = torch.int64 if name in ("uint16", "uint32", "uint64") else tdtype
        self.moves = {"uint16": torch.int16, "uint32": torch.int32, "uint64": torch.int64}.get(name, tdtype)

    @property
    def type(self) -> Any:
        """NumPy's scalar type (``x.dtype.type is numpy.float64``; ``issubclass(x.dtype.type, numpy.floating)``)."""
        return self.dtype.type

    @property
    def dtype(self) -> Any:
        """The NumPy dtype (what ``numpy.dtype(autopar.float32)`` reads)."""
        if self.numpy is None:
            raise TypeError(f"{self.name} has no NumPy equivalent")
        return self.numpy

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if type(other) is DType:
            return False
        return find(other) is self

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    # One object per dtype: identity hashing (in C, it is hashed on every op's plan lookup).
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"autopar.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> Any:
        return (as_dtype, (self.name,))

    def __call__(self, value: Any = 0) -> Any:
        """NumPy's ``numpy.float64(x)``: a NumPy scalar of this dtype for a number, an autopar array of
        this dtype for an array or nested sequence."""
        if isinstance(value, (bool, int, float, complex, str, np.generic)) and self.numpy is not None:
            return self.numpy.type(value)
        return _asarray(value, dtype=self)


bool_ = DType("bool", torch.bool, "b")
int8 = DType("int8", torch.int8, "i")
int16 = DType("int16", torch.int16, "i")
int32 = DType("int32", torch.int32, "i")
int64 = DType("int64", torch.int64, "i")
uint8 = DType("uint8", torch.uint8, "u")
uint16 = DType("uint16", torch.uint16, "u")
uint32 = DType("uint32", torch.uint32, "u")
uint64 = DType("uint64", torch.uint64, "u")
float16 = DType("float16", torch.float16, "f")
bfloat16 = DType("bfloat16", torch.bfloat16, "f")
float32 = DType("float32", torch.float32, "f")
float64 = DType("float64", torch.float64, "f")
complex64 = DType("complex64", torch.complex64, "c")
complex128 = DType("complex128", torch.complex128, "c")

# autopar.asarray, registered from above by _creation (this module is below it)
_asarray: Any = None

ALL = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
       float16, bfloat16, float32, float64, complex64, complex128)  # fmt: skip
DEFAULT_FLOAT = float32  # the deep-learning default; NumPy mode's is float64 (default_float)
DEFAULT_INT = int64
DEFAULT_COMPLEX = complex64
INDEX = int64


class _NumpyMode(threading.local):
    """``on``: this thread follows NumPy's dtype defaults (module note). The class attribute is the
    process-wide default (``set_default_dtype``); a call through ``autopar.numpy`` sets it for its thread."""

    on: bool = False


numpy_mode = _NumpyMode()


def in_mode(on: bool, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with this thread in NumPy mode (``on``) or not, restored after: for objects
    that keep the mode they were made in (a ``Generator`` of ``autopar.numpy.random``, ``autopar.numpy``'s ufuncs)."""
    state = numpy_mode.__dict__  # this thread's own setting, if any (else the process-wide default)
    if state.get("on", _NumpyMode.on) == on:
        return fn(*args, **kwargs)
    had, before = "on" in state, state.get("on")
    state["on"] = on
    try:
        return fn(*args, **kwargs)
    finally:
        if had:
            state["on"] = before
        else:
            del state["on"]


def _read_default() -> None:
    from autopar import _config

    _NumpyMode.on = _config.default_dtype() == "float64"


_read_default()


def default_float() -> DType:
    """The dtype a Python float or a default-dtype creation takes: float64 in NumPy mode, else float32."""
    return float64 if numpy_mode.on else float32


def default_complex() -> DType:
    return complex128 if numpy_mode.on else complex64


def set_default_dtype(dtype: Any) -> None:
    """Make ``dtype`` (float32 or float64) the process-wide default float; float64 is NumPy mode."""
    d = find(dtype)
    if d is not float32 and d is not float64:
        raise TypeError(f"set_default_dtype: {dtype!r} is not float32 or float64, the two default floats "
                        "autopar has; pass 'float64' for NumPy's defaults or 'float32' for deep learning's")
    _NumpyMode.on = d is float64


def get_default_dtype() -> DType:
    """The default float of this thread: float64 in NumPy mode, else float32."""
    return default_float()

_BY_TORCH: dict[torch.dtype, DType] = {d.torch: d for d in ALL}
_BY_NUMPY: dict[Any, DType] = {d.numpy: d for d in ALL if d.numpy is not None}
_BY_NAME: dict[str, DType] = {d.name: d for d in ALL}
_BY_NAME.update({"bool_": bool_, "half": float16, "float": float64, "double": float64, "int": int64,
                 "long": int64, "cfloat": complex64, "cdouble": complex128})  # fmt: skip
_COMPLEX_OF = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128}
REAL_OF = {complex64: float32, complex128: float64}


def find(obj: Any) -> DType | None:
    """The DType ``obj`` names, or None."""
    if type(obj) is DType:
        return obj
    if isinstance(obj, torch.dtype):
        return _BY_TORCH.get(obj)
    if isinstance(obj, str):
        found = _BY_NAME.get(obj.lower())
        if found is not None or not obj:
            return found
        try:  # NumPy's type codes: 'f8', 'i4', '<f8', 'd', '?' (a byte order other than this machine's: None)
            return _BY_NUMPY.get(np.dtype(obj))
        except (TypeError, ValueError):
            return None
    if obj is float:
        return float64
    if obj is int:
        return int64
    if obj is bool:
        return bool_
    if obj is complex:
        return complex128
    if obj is None:
        return None
    try:
        return _BY_NUMPY.get(np.dtype(obj))
    except (TypeError, ValueError):
        return None


def as_dtype(obj: Any, op: str = "dtype") -> DType:
    """Parse a dtype (autopar, NumPy, torch, string or Python type); raise naming ``op``."""
    found = find(obj)
    if found is None:
        hint = ""
        if isinstance(obj, int) and not isinstance(obj, bool):
            hint = " (to give a shape, pass a tuple: zeros((2, 3)) or zeros(2, 3) without dtype=)"
        raise TypeError(
            f"{op}: {obj!r} is not a dtype autopar knows; use one of "
            f"{', '.join(d.name for d in ALL)} (as autopar.float32 or 'float32'){hint}"
        )
    return found


def of_tensor(t: torch.Tensor) -> DType:
    return _BY_TORCH[t.dtype]


# -- promotion --------------------------------------------------------------------------

_promoted: dict[tuple[DType, DType], DType] = {}


def promote(a: DType, b: DType) -> DType:
    """The result dtype of an operation on arrays of dtypes ``a`` and ``b``."""
    if a is b:
        return a
    key = (a, b)
    found = _promoted.get(key)
    if found is None:
        if a.numpy is None or b.numpy is None:
            found = _BY_TORCH[torch.promote_types(a.torch, b.torch)]
        else:
            found = _BY_NUMPY[np.promote_types(a.numpy, b.numpy)]
        _promoted[key] = found
    return found


def result_type(*dtypes: DType) -> DType:
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote(out, d)
    return out


def to_float(d: DType) -> DType:
    """``d`` if it is floating, else the default float (what ``mean(int_array)`` gives)."""
    if d.kind in "fc":
        return d
    return float64 if numpy_mode.on else float32


def ufunc_float(d: DType) -> DType:
    """What a floating function (``sqrt``, ``exp``) gives for ``d``: the default float, or in NumPy mode
    NumPy's smallest safe float (``sqrt(int8)`` is float16, ``sqrt(int32)`` float64)."""
    if d.kind in "fc":
        return d
    return promote(d, float16) if numpy_mode.on else float32


def complex_of(d: DType) -> DType:
    if d.kind == "c":
        return d
    if d.kind == "f":
        return _COMPLEX_OF[d]
    return complex128 if numpy_mode.on else complex64


def scalar_dtype(op: str, d: DType, value: Any) -> DType:
    """The dtype a Python scalar ``value`` takes next to an array of dtype ``d``.

    Raises OverflowError for an int that does not fit an integer array's dtype.
    """
    t = type(value)
    if t is bool:
        return d
    if t is int:
        if d.kind in "iu":
            info = _iinfo(d)
            if not info[0] <= value <= info[1]:
                raise OverflowError(
                    f"{op}: Python integer {value} is out of bounds for an array of dtype {d.name} "
                    f"(range {info[0]}..{info[1]}); cast the array first, e.g. x.astype('int64')"
                )
            return d
        return DEFAULT_INT if d is bool_ else d
    if t is float:
        return d if d.kind in "fc" else default_float()
    if t is complex:
        return complex_of(d)
    raise TypeError(f"{op}: unsupported operand {value!r} ({t.__name__}); expected an array or a Python number")


def _iinfo(d: DType) -> tuple[int, int]:
    if d.kind == "u":
        return 0, (1 << (8 * d.itemsize)) - 1
    bits = 8 * d.itemsize - 1
    return -(1 << bits), (1 << bits) - 1


def can_cast_same_kind(src: DType, dst: DType) -> bool:
    """NumPy's 'same_kind' rule, used for in-place updates: no float into int, no int into bool."""
    order = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
    return order[src.kind] <= order[dst.kind]


# -- dtype categories (the standard's isdtype and the per-function input rules) -----------

KINDS = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "integral": "iu",
    "real floating": "f",
    "complex floating": "c",
    "numeric": "iufc",
}
# What each function of the standard accepts (its "should have a ... data type").
CATEGORIES = {
    "any": "biufc",
    "numeric": "iufc",
    "real numeric": "iuf",
    "integer": "iu",
    "integer or boolean": "biu",
    "floating-point": "fc",
    "real floating-point": "f",
    "boolean": "b",
    "real": "biuf",
}


# NumPy's arithmetic on booleans that torch's kernels compute alike (add is or, multiply is and, divide
# is float): allowed in NumPy mode; the standard leaves arithmetic on bool out.
NUMPY_BOOL_ARITHMETIC = frozenset({"add", "multiply", "divide"})


def check_category(op: str, d: DType, category: str, what: str = "x") -> None:
    if d.kind not in CATEGORIES[category]:
        if d.kind == "b" and op in NUMPY_BOOL_ARITHMETIC and numpy_mode.on:
            return
        raise TypeError(
            f"{op}: {what} has dtype {d.name}, but {op} needs a {category} dtype; "
            f"cast first, e.g. {what}.astype('{_suggest(category)}')"
        )


def _suggest(category: str) -> str:
    return {"integer": "int64", "integer or boolean": "int64", "boolean": "bool"}.get(category, "float32")


def infer_python(obj: Any) -> DType:
    """The dtype of nested Python data: bool, int64, the default float or the default complex."""
    kinds: set[type] = set()
    typed = False  # a NumPy scalar seen: in NumPy mode the data's dtype is NumPy's (numpy.float32(1.5) is float32)
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, np.generic):
            typed = True
            kinds.add({"b": bool, "i": int, "u": int, "f": float, "c": complex}.get(x.dtype.kind, float))
        else:
            kinds.add(type(x))
    if typed and numpy_mode.on and kinds <= {bool, int, float, complex}:
        try:
            found = _BY_NUMPY.get(np.asarray(obj).dtype)
        except (TypeError, ValueError):  # ragged: the caller says so
            found = None
        if found is not None:
            return found
    if kinds and kinds <= {bool}:
        return bool_
    if kinds and kinds <= {bool, int}:
        return int64
    if complex in kinds:
        return default_complex()
    return default_float()


def iinfo_tuple(d: DType) -> tuple[int, int]:
    return _iinfo(d)
