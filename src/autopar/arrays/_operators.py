"""The array's operators, attached to ``NDArray`` from above (``_methods.attach``).

Each operator is the op-table entry it names, through the dispatcher:
``x + y`` is ``_elementwise.operator("add", x, y)``, ``x += y`` its in-place
form (``_dispatch.bind_into``), ``x[k]`` and ``x[k] = v`` are ``_indexing``'s.
Here too: the standard's ``T``, ``mT`` and ``to_device``, and pickling.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autopar.arrays import _copy, _creation, _indexing, _manipulation
from autopar.arrays import _elementwise as _ew
from autopar.arrays._array import NDArray


class Operators:
    """Mixed into NDArray (attached by ``_methods.attach``): the operators."""

    __slots__: tuple[str, ...] = ()
    shape: tuple[int, ...]
    device: Any
    _dtype: Any

    @property
    def T(self) -> NDArray:
        """All axes reversed (a view), as NumPy does for any number of dimensions."""
        return _manipulation.permute_dims(self, tuple(reversed(range(len(self.shape)))))

    @property
    def mT(self) -> NDArray:
        return _manipulation.matrix_transpose(self)

    def to_device(self, device: Any, /, *, stream: Any = None) -> NDArray:
        """The standard's spelling: this array on ``device`` (a copy, asynchronous)."""
        if stream is not None:
            raise ValueError("to_device: stream= is not supported; autopar orders copies itself")
        return _copy.to(self, device, non_blocking=True)  # type: ignore[arg-type]

    def __reduce__(self) -> Any:
        return (_rebuild, (self.numpy(), str(self.device), self._dtype.name))  # type: ignore[attr-defined]

    def __add__(self, other: Any) -> NDArray:
        return _ew.operator("add", self, other)

    def __radd__(self, other: Any) -> NDArray:
        return _ew.operator("add", self, other, True)

    def __iadd__(self, other: Any) -> NDArray:
        return _ew.inplace("add", self, other)

    def __sub__(self, other: Any) -> NDArray:
        return _ew.operator("subtract", self, other)

    def __rsub__(self, other: Any) -> NDArray:
        return _ew.operator("subtract", self, other, True)

    def __isub__(self, other: Any) -> NDArray:
        return _ew.inplace("subtract", self, other)

    def __mul__(self, other: Any) -> NDArray:
        return _ew.operator("multiply", self, other)

    def __rmul__(self, other: Any) -> NDArray:
        return _ew.operator("multiply", self, other, True)

    def __imul__(self, other: Any) -> NDArray:
        return _ew.inplace("multiply", self, other)

    def __truediv__(self, other: Any) -> NDArray:
        return _ew.operator("divide", self, other)

    def __rtruediv__(self, other: Any) -> NDArray:
        return _ew.operator("divide", self, other, True)

    def __itruediv__(self, other: Any) -> NDArray:
        return _ew.inplace("divide", self, other)

    def __floordiv__(self, other: Any) -> NDArray:
        return _ew.operator("floor_divide", self, other)

    def __rfloordiv__(self, other: Any) -> NDArray:
        return _ew.operator("floor_divide", self, other, True)

    def __ifloordiv__(self, other: Any) -> NDArray:
        return _ew.inplace("floor_divide", self, other)

    def __mod__(self, other: Any) -> NDArray:
        return _ew.operator("remainder", self, other)

    def __rmod__(self, other: Any) -> NDArray:
        return _ew.operator("remainder", self, other, True)

    def __imod__(self, other: Any) -> NDArray:
        return _ew.inplace("remainder", self, other)

    def __pow__(self, other: Any) -> NDArray:
        return _ew.operator("pow", self, other)

    def __rpow__(self, other: Any) -> NDArray:
        return _ew.operator("pow", self, other, True)

    def __ipow__(self, other: Any) -> NDArray:
        return _ew.inplace("pow", self, other)

    def __and__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_and", self, other)

    def __rand__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_and", self, other, True)

    def __iand__(self, other: Any) -> NDArray:
        return _ew.inplace("bitwise_and", self, other)

    def __or__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_or", self, other)

    def __ror__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_or", self, other, True)

    def __ior__(self, other: Any) -> NDArray:
        return _ew.inplace("bitwise_or", self, other)

    def __xor__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_xor", self, other)

    def __rxor__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_xor", self, other, True)

    def __ixor__(self, other: Any) -> NDArray:
        return _ew.inplace("bitwise_xor", self, other)

    def __lshift__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_left_shift", self, other)

    def __rlshift__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_left_shift", self, other, True)

    def __ilshift__(self, other: Any) -> NDArray:
        return _ew.inplace("bitwise_left_shift", self, other)

    def __rshift__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_right_shift", self, other)

    def __rrshift__(self, other: Any) -> NDArray:
        return _ew.operator("bitwise_right_shift", self, other, True)

    def __irshift__(self, other: Any) -> NDArray:
        return _ew.inplace("bitwise_right_shift", self, other)

    def __eq__(self, other: Any) -> NDArray:  # type: ignore[override]
        return _ew.operator("equal", self, other)

    def __ne__(self, other: Any) -> NDArray:  # type: ignore[override]
        return _ew.operator("not_equal", self, other)

    def __lt__(self, other: Any) -> NDArray:
        return _ew.operator("less", self, other)

    def __le__(self, other: Any) -> NDArray:
        return _ew.operator("less_equal", self, other)

    def __gt__(self, other: Any) -> NDArray:
        return _ew.operator("greater", self, other)

    def __ge__(self, other: Any) -> NDArray:
        return _ew.operator("greater_equal", self, other)

    def __neg__(self) -> NDArray:
        return _ew.call("negative", self)

    def __pos__(self) -> NDArray:
        return _ew.call("positive", self)

    def __abs__(self) -> NDArray:
        return _ew.call("abs", self)

    def __invert__(self) -> NDArray:
        return _ew.call("bitwise_invert", self)

    def __matmul__(self, other: Any) -> NDArray:
        return _ew.operator("matmul", self, other)

    def __rmatmul__(self, other: Any) -> NDArray:
        return _ew.operator("matmul", self, other, True)

    def __imatmul__(self, other: Any) -> NDArray:
        return _ew.inplace("matmul", self, other)

    def __getitem__(self, key: Any) -> NDArray:
        return _indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _indexing.setitem(self, key, value)


def _rebuild(values: np.ndarray, device: str, dtype: str = "") -> NDArray:
    return _creation.asarray(values, device=device, dtype=dtype or None)
