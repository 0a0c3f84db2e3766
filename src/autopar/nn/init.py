"""``nn.init``: torch.nn.init's functions, writing into an array in place (``nn.init.normal_(m.weight, std=0.01)``).

Values are drawn from autopar's generator of the array's device
(``autopar.random.seed``); the write is not recorded for gradients, as in
torch. Each returns the array.
"""

from __future__ import annotations

import math
from typing import Any

from autopar.arrays._array import NDArray

__all__ = ["calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_", "uniform_",
           "xavier_normal_", "xavier_uniform_", "zeros_"]  # fmt: skip


def _target(op: str, tensor: Any) -> NDArray:
    from autopar.nn._module import is_uninitialized

    if tensor is None or is_uninitialized(tensor):
        raise ValueError(f"nn.init.{op}: the parameter is not made yet -- a lazy layer makes its parameters on the "
                         "first forward; run one batch through the model first")
    if type(tensor) is not NDArray:
        raise TypeError(f"nn.init.{op}: expected an autopar array (a module's parameter), got {type(tensor).__name__}")
    return tensor


def _fill(tensor: NDArray, values: Any) -> NDArray:
    from autopar.arrays._autograd import no_grad

    with no_grad():
        tensor[...] = values
    return tensor


def _draw(kind: str, a: float, b: float, tensor: NDArray) -> Any:
    from autopar.arrays import _random

    draw = _random.uniform if kind == "uniform" else _random.normal
    return draw(a, b, size=tensor.shape, device=tensor.device, dtype=tensor.dtype)


def uniform_(tensor: Any, a: float = 0.0, b: float = 1.0) -> NDArray:
    t = _target("uniform_", tensor)
    return _fill(t, _draw("uniform", a, b, t))


def normal_(tensor: Any, mean: float = 0.0, std: float = 1.0) -> NDArray:
    t = _target("normal_", tensor)
    return _fill(t, _draw("normal", mean, std, t))


def constant_(tensor: Any, val: float) -> NDArray:
    return _fill(_target("constant_", tensor), float(val))


def zeros_(tensor: Any) -> NDArray:
    return _fill(_target("zeros_", tensor), 0.0)


def ones_(tensor: Any) -> NDArray:
    return _fill(_target("ones_", tensor), 1.0)


def _fans(op: str, tensor: NDArray) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError(f"nn.init.{op}: fan in and fan out need an array of 2 or more dimensions, "
                         f"got shape {tensor.shape}")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """torch's recommended gains: 1 for linear/sigmoid/conv, 5/3 for tanh, sqrt(2) for relu, leaky relu's by slope."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "sigmoid", "conv_transpose2d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def xavier_uniform_(tensor: Any, gain: float = 1.0) -> NDArray:
    t = _target("xavier_uniform_", tensor)
    fan_in, fan_out = _fans("xavier_uniform_", t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return _fill(t, _draw("uniform", -bound, bound, t))


def xavier_normal_(tensor: Any, gain: float = 1.0) -> NDArray:
    t = _target("xavier_normal_", tensor)
    fan_in, fan_out = _fans("xavier_normal_", t)
    return _fill(t, _draw("normal", 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), t))


def _kaiming_std(op: str, t: NDArray, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"nn.init.{op}: mode={mode!r}; expected 'fan_in' or 'fan_out'")
    fan_in, fan_out = _fans(op, t)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0


def kaiming_uniform_(tensor: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> NDArray:
    t = _target("kaiming_uniform_", tensor)
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", t, a, mode, nonlinearity)
    return _fill(t, _draw("uniform", -bound, bound, t))


def kaiming_normal_(tensor: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> NDArray:
    t = _target("kaiming_normal_", tensor)
    return _fill(t, _draw("normal", 0.0, _kaiming_std("kaiming_normal_", t, a, mode, nonlinearity), t))
