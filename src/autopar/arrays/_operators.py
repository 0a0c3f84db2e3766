"""The array's operators, attached to ``NDArray`` from above (``_methods.attach``).

Each operator is the op-table entry it names, through the dispatcher:
``x + y`` binds ``add`` on ``(x, y)``, ``y + x`` on the same reflected,
``x += y`` is its in-place form (``_dispatch.bind_into``); operands other
than arrays and Python numbers go through ``_elementwise.operator``, which
converts them or declines. ``x[k]`` and ``x[k] = v`` are ``_indexing``'s.
Here too: the standard's ``T``, ``mT`` and ``to_device``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autopar.arrays import _copy, _indexing, _manipulation, _products  # noqa: F401  (matmul's entry)
from autopar.arrays import _elementwise as _ew
from autopar.arrays._array import NDArray
from autopar.arrays._dispatch import binary, binary_into, bind
from autopar.arrays._table import TABLE


# Operands the dispatcher takes as they are; anything else (NumPy scalars, lists) is converted by
# _elementwise first, or declined with NotImplemented.
_OPERANDS = frozenset({NDArray, bool, int, float, complex})


def _unary(name: str) -> Callable[[Any], Any]:
    entry = TABLE[name]

    def op(self: Any) -> Any:
        return bind(entry, (self,))

    op.__name__ = op.__qualname__ = name
    return op


def _binary(name: str) -> Callable[[Any, Any], Any]:
    entry = TABLE[name]

    def op(self: Any, other: Any) -> Any:
        if type(other) in _OPERANDS:
            return binary(entry, self, other)
        return _ew.operator(name, self, other)

    op.__name__ = op.__qualname__ = name
    return op


def _reflected(name: str) -> Callable[[Any, Any], Any]:
    entry = TABLE[name]

    def op(self: Any, other: Any) -> Any:
        if type(other) in _OPERANDS:
            return binary(entry, other, self)
        return _ew.operator(name, self, other, True)

    op.__name__ = op.__qualname__ = f"reflected {name}"
    return op


def _inplace(name: str) -> Callable[[Any, Any], Any]:
    entry, what = TABLE[name], f"{name} (in place)"

    def op(self: Any, other: Any) -> Any:
        if type(other) in _OPERANDS:
            return binary_into(entry, self, other, what)
        return _ew.inplace(name, self, other)

    op.__name__ = op.__qualname__ = f"{name} (in place)"
    return op


def _checked_power(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``x ** n``: an integer array to a negative int power raises at the call, as NumPy's does."""

    def power(self: Any, other: Any) -> Any:
        if type(other) is int and other < 0:
            _ew.check_power(self, other)
        return op(self, other)

    power.__name__ = power.__qualname__ = op.__name__
    return power


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

    __add__ = _binary("add")
    __radd__ = _reflected("add")
    __iadd__ = _inplace("add")
    __sub__ = _binary("subtract")
    __rsub__ = _reflected("subtract")
    __isub__ = _inplace("subtract")
    __mul__ = _binary("multiply")
    __rmul__ = _reflected("multiply")
    __imul__ = _inplace("multiply")
    __truediv__ = _binary("divide")
    __rtruediv__ = _reflected("divide")
    __itruediv__ = _inplace("divide")
    __floordiv__ = _binary("floor_divide")
    __rfloordiv__ = _reflected("floor_divide")
    __ifloordiv__ = _inplace("floor_divide")
    __mod__ = _binary("remainder")
    __rmod__ = _reflected("remainder")
    __imod__ = _inplace("remainder")
    __pow__ = _checked_power(_binary("pow"))
    __rpow__ = _reflected("pow")
    __ipow__ = _checked_power(_inplace("pow"))
    __and__ = _binary("bitwise_and")
    __rand__ = _reflected("bitwise_and")
    __iand__ = _inplace("bitwise_and")
    __or__ = _binary("bitwise_or")
    __ror__ = _reflected("bitwise_or")
    __ior__ = _inplace("bitwise_or")
    __xor__ = _binary("bitwise_xor")
    __rxor__ = _reflected("bitwise_xor")
    __ixor__ = _inplace("bitwise_xor")
    __lshift__ = _binary("bitwise_left_shift")
    __rlshift__ = _reflected("bitwise_left_shift")
    __ilshift__ = _inplace("bitwise_left_shift")
    __rshift__ = _binary("bitwise_right_shift")
    __rrshift__ = _reflected("bitwise_right_shift")
    __irshift__ = _inplace("bitwise_right_shift")
    __eq__ = _binary("equal")
    __ne__ = _binary("not_equal")
    __lt__ = _binary("less")
    __le__ = _binary("less_equal")
    __gt__ = _binary("greater")
    __ge__ = _binary("greater_equal")

    __neg__ = _unary("negative")
    __pos__ = _unary("positive")
    __abs__ = _unary("abs")
    __invert__ = _unary("bitwise_invert")

    __matmul__ = _binary("matmul")
    __rmatmul__ = _reflected("matmul")
    __imatmul__ = _inplace("matmul")

    def __getitem__(self, key: Any) -> NDArray:
        return _indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _indexing.setitem(self, key, value)

