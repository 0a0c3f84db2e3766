"""``autopar.init``: Gluon's initializers (``net.initialize(init=init.Normal(sigma=0.01), ctx=devices)``).

An initializer is called with a parameter's name, shape, dtype and device
and returns its first value, drawn from autopar's generator of that device
(``autopar.random.seed``). As in MXNet, a parameter's own initializer (a
layer's ``bias_initializer="zeros"``, batch norm's ``gamma`` of ones) wins
over the one given to ``initialize``, and an initializer called for a
parameter by name fills biases, ``beta`` and running means with zeros and
``gamma`` and running variances with ones: ``init.Normal`` given to a whole
network draws only its weights.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["Constant", "Initializer", "Normal", "One", "Uniform", "Xavier", "Zero", "create"]

_ZEROS = ("bias", "beta", "running_mean", "moving_mean")
_ONES = ("gamma", "running_var", "moving_var")


class Initializer:
    """Base class: subclasses define ``_init_weight(shape, dtype, device)``."""

    def __call__(self, name: str, shape: tuple[int, ...], dtype: Any = None, device: Any = None) -> Any:
        from autopar.arrays._creation import full

        if name.endswith(_ZEROS):
            return full(shape, 0.0, dtype=dtype, device=device)
        if name.endswith(_ONES):
            return full(shape, 1.0, dtype=dtype, device=device)
        return self._init_weight(shape, dtype, device)

    def _init_weight(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not say how to initialise a weight")

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({settings})"


class _Fill(Initializer):
    """Every parameter it is given, whatever its name, gets ``value``."""

    value = 0.0

    def __call__(self, name: str, shape: tuple[int, ...], dtype: Any = None, device: Any = None) -> Any:
        from autopar.arrays._creation import full

        return full(shape, self.value, dtype=dtype, device=device)


class Zero(_Fill):
    value = 0.0


class One(_Fill):
    value = 1.0


class Constant(_Fill):
    def __init__(self, value: float) -> None:
        self.value = float(value)


class Uniform(Initializer):
    """Weights from ``U(-scale, scale)`` (MXNet's default initializer, ``scale=0.07``)."""

    def __init__(self, scale: float = 0.07) -> None:
        self.scale = float(scale)

    def _init_weight(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        from autopar.arrays import _random

        return _random.uniform(-self.scale, self.scale, size=shape, dtype=dtype, device=device)


class Normal(Initializer):
    """Weights from ``N(0, sigma^2)``."""

    def __init__(self, sigma: float = 0.01) -> None:
        self.sigma = float(sigma)

    def _init_weight(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        from autopar.arrays import _random

        return _random.normal(0.0, self.sigma, size=shape, dtype=dtype, device=device)


class Xavier(Initializer):
    """Glorot's: scale ``sqrt(magnitude / fan)``, fan by ``factor_type`` (``avg``, ``in``, ``out``)."""

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3.0) -> None:
        if rnd_type not in ("uniform", "gaussian") or factor_type not in ("avg", "in", "out"):
            raise ValueError(f"Xavier: rnd_type={rnd_type!r}, factor_type={factor_type!r}; expected "
                             "'uniform' or 'gaussian', and 'avg', 'in' or 'out'")
        self.rnd_type, self.factor_type, self.magnitude = rnd_type, factor_type, float(magnitude)

    def _init_weight(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        from autopar.arrays import _random

        if len(shape) < 2:
            raise ValueError(f"Xavier: needs a weight of 2 or more dimensions, got shape {shape}")
        receptive = math.prod(shape[2:])
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        fan = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = math.sqrt(self.magnitude / fan)
        if self.rnd_type == "uniform":
            return _random.uniform(-scale, scale, size=shape, dtype=dtype, device=device)
        return _random.normal(0.0, scale, size=shape, dtype=dtype, device=device)


_NAMES = {"zeros": Zero, "zero": Zero, "ones": One, "one": One, "uniform": Uniform, "normal": Normal,
          "xavier": Xavier}  # fmt: skip


def create(init: Any) -> Initializer:
    """An initializer from an instance or a name (``"zeros"``, ``"ones"``, ``"uniform"``, ``"normal"``, ``"xavier"``)."""
    if isinstance(init, Initializer):
        return init
    if isinstance(init, str) and init.lower() in _NAMES:
        made: Initializer = _NAMES[init.lower()]()
        return made
    raise ValueError(f"init: {init!r} is not an initializer; give one of autopar.init's (init.Normal(0.01), ...) "
                     f"or a name: {', '.join(sorted(_NAMES))}")
