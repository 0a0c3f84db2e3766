"""Dtypes: parsing what users pass, and the promotion rules applied at call time.

Arrays keep a torch dtype inside; ``NDArray.dtype`` shows it as a NumPy dtype
(so ``x.dtype == numpy.float32`` holds), except ``bfloat16``, which NumPy lacks
and which is shown as ``torch.bfloat16``.

Promotion follows NumPy 2 / PyTorch: two arrays promote to the wider type; a
Python scalar is *weak* -- it keeps the array's type unless its kind is higher
(a float scalar with an int array gives the default float, float32).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

DEFAULT_FLOAT = torch.float32

_BY_NAME: dict[str, torch.dtype] = {
    "float16": torch.float16,
    "half": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float": torch.float64,
    "float64": torch.float64,
    "double": torch.float64,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "int": torch.int64,
    "bool": torch.bool,
    "bool_": torch.bool,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}
_TORCH_TO_NUMPY: dict[torch.dtype, Any] = {}
for _t in set(_BY_NAME.values()):
    if _t is not torch.bfloat16:
        _TORCH_TO_NUMPY[_t] = np.dtype(str(_t).removeprefix("torch."))
_TORCH_TO_NUMPY[torch.bool] = np.dtype(bool)
_NUMPY_TO_TORCH = {v: k for k, v in _TORCH_TO_NUMPY.items()}
_promote_cache: dict[tuple[torch.dtype, torch.dtype], torch.dtype] = {}


def to_torch_dtype(dtype: Any, what: str = "dtype") -> torch.dtype:
    """Parse a dtype given as torch, NumPy, string or Python type."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is float:
        return torch.float64
    if dtype is int:
        return torch.int64
    if dtype is bool:
        return torch.bool
    if isinstance(dtype, str):
        found = _BY_NAME.get(dtype.lower())
        if found is not None:
            return found
    else:
        try:
            found = _NUMPY_TO_TORCH.get(np.dtype(dtype))
        except TypeError:
            found = None
        if found is not None:
            return found
    raise TypeError(f"{what}={dtype!r} is not a dtype autopar knows; use e.g. 'float32', 'int64', 'bool'")


def numpy_dtype(dtype: torch.dtype) -> Any:
    return _TORCH_TO_NUMPY.get(dtype, dtype)


def promote(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    key = (a, b)
    found = _promote_cache.get(key)
    if found is None:
        found = _promote_cache[key] = torch.promote_types(a, b)
    return found


def with_scalar(dtype: torch.dtype, scalar: Any) -> torch.dtype:
    """The result type of ``array <op> python_scalar`` (scalars are weak)."""
    if isinstance(scalar, bool):
        return dtype
    if isinstance(scalar, int):
        return torch.int64 if dtype is torch.bool else dtype
    if isinstance(scalar, float):
        return dtype if (dtype.is_floating_point or dtype.is_complex) else DEFAULT_FLOAT
    if isinstance(scalar, complex):
        return dtype if dtype.is_complex else torch.complex64
    raise TypeError(f"unsupported operand {scalar!r} ({type(scalar).__name__}): expected an array or a Python number")


def can_cast_in_place(result: torch.dtype, target: torch.dtype) -> bool:
    """NumPy's 'same_kind' rule for in-place ops: no float into int, no int into bool."""
    order = {"bool": 0, "int": 1, "float": 2, "complex": 3}
    return order[_kind(result)] <= order[_kind(target)]


def _kind(dtype: torch.dtype) -> str:
    if dtype is torch.bool:
        return "bool"
    if dtype.is_complex:
        return "complex"
    if dtype.is_floating_point:
        return "float"
    return "int"


def infer_from_python(obj: Any) -> torch.dtype:
    """Default dtype of nested Python data: bool, int64, else float32."""
    kinds = set()

    def walk(x: Any) -> None:
        if isinstance(x, (list, tuple)):
            for item in x:
                walk(item)
        else:
            kinds.add(type(x))

    walk(obj)
    if kinds and kinds <= {bool}:
        return torch.bool
    if kinds and kinds <= {bool, int}:
        return torch.int64
    if complex in kinds:
        return torch.complex64
    return DEFAULT_FLOAT
