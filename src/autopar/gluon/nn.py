"""``gluon.nn``: Gluon's layers (``Sequential``, ``Dense``, ``Conv2D``, ``BatchNorm``, ...) on autopar arrays.

Names, arguments and defaults are Gluon's: input sizes are inferred at the
first forward unless given (``in_units``, ``in_channels``), ``Dense``
flattens its input, ``BatchNorm``'s ``momentum=0.9`` is the weight of the
running statistics, weights use the initializer given to ``initialize``
and biases start at zero. Each forward reads the parameters on the input's
device and is ``nn.functional`` ops, pushed like any other.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from autopar.arrays import _autograd
from autopar.arrays._array import NDArray
from autopar.gluon._block import Block, HybridBlock
from autopar.gluon._parameter import Parameter
from autopar.nn import functional as F

__all__ = ["Activation", "AvgPool2D", "BatchNorm", "Block", "Conv2D", "Dense", "Dropout", "Flatten",
           "GlobalAvgPool2D", "GlobalMaxPool2D", "HybridBlock", "HybridSequential", "MaxPool2D", "Sequential"]  # fmt: skip


def _pair(value: Any) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


_ACTIVATIONS = {"relu": F.relu, "sigmoid": F.sigmoid, "tanh": F.tanh}


def _activation(name: str | None) -> Any:
    if name is None:
        return None
    if name == "softrelu":
        return lambda x: (x.exp() + 1).log()
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation {name!r}: expected one of relu, sigmoid, tanh, softrelu")
    return _ACTIVATIONS[name]


class Sequential(Block):
    """Blocks run in order; ``net.add(a, b, ...)`` appends, ``net[i]`` and ``len(net)`` index them."""

    def add(self, *blocks: Block) -> Sequential:
        for block in blocks:
            self.register_child(block)
        return self

    def forward(self, x: Any, *args: Any) -> Any:
        for block in self.children():
            x = block(x, *args)
            args = ()
        return x

    def __getitem__(self, index: int | slice) -> Any:
        blocks = list(self.children())
        if isinstance(index, slice):
            return type(self)().add(*blocks[index])
        return blocks[index]

    def __len__(self) -> int:
        return len(self._registries()[0])

    def __iter__(self) -> Iterator[Block]:
        return self.children()


class HybridSequential(Sequential, HybridBlock):
    """``Sequential`` (``hybridize()`` changes nothing)."""

    forward = Sequential.forward


class Dense(HybridBlock):
    """``y = activation(x @ weight.T + bias)``; weight ``(units, in_units)``; ``flatten`` reshapes x to ``(N, -1)``."""

    def __init__(self, units: int, activation: str | None = None, use_bias: bool = True, flatten: bool = True,
                 dtype: Any = "float32", weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 in_units: int = 0, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self._units, self._flatten, self._act = units, flatten, _activation(activation)
        self.weight = Parameter("weight", shape=(units, in_units), dtype=dtype, init=weight_initializer)
        self.bias = Parameter("bias", shape=(units,), dtype=dtype, init=bias_initializer) if use_bias else None

    def forward(self, x: NDArray) -> NDArray:
        if self._flatten and x.ndim != 2:
            x = x.reshape((x.shape[0], -1))
        self.weight._finish_deferred_init((self._units, x.shape[-1]))
        device = x.device
        y = F.linear(x, self.weight.data(device), None if self.bias is None else self.bias.data(device))
        return y if self._act is None else self._act(y)

    def _describe(self) -> str:
        shape = self.weight.shape or (0, 0)
        return f"{shape[1] or None} -> {self._units}, {'linear' if self._act is None else 'activated'}"


class Conv2D(HybridBlock):
    """2-D convolution, Gluon's arguments (``channels``, ``kernel_size``, ``strides``, ``padding``, NCHW)."""

    def __init__(self, channels: int, kernel_size: Any, strides: Any = (1, 1), padding: Any = (0, 0),
                 dilation: Any = (1, 1), groups: int = 1, layout: str = "NCHW", activation: str | None = None,
                 use_bias: bool = True, weight_initializer: Any = None, bias_initializer: Any = "zeros",
                 in_channels: int = 0, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if layout != "NCHW":
            raise ValueError(f"Conv2D: layout={layout!r}; only 'NCHW' is supported")
        self._channels, self._kernel, self._groups = channels, _pair(kernel_size), groups
        self._strides, self._padding, self._dilation = _pair(strides), _pair(padding), _pair(dilation)
        self._act = _activation(activation)
        self.weight = Parameter("weight", shape=(channels, in_channels // groups, *self._kernel),
                                init=weight_initializer)  # fmt: skip
        self.bias = Parameter("bias", shape=(channels,), init=bias_initializer) if use_bias else None

    def forward(self, x: NDArray) -> NDArray:
        self.weight._finish_deferred_init((self._channels, x.shape[1] // self._groups, *self._kernel))
        device = x.device
        y = F.conv2d(x, self.weight.data(device), None if self.bias is None else self.bias.data(device),
                     self._strides, self._padding, self._dilation, self._groups)  # fmt: skip
        return y if self._act is None else self._act(y)

    def _describe(self) -> str:
        return f"{self._channels}, kernel_size={self._kernel}, stride={self._strides}, padding={self._padding}"


class BatchNorm(HybridBlock):
    """Batch normalisation over ``axis=1``: batch statistics in train mode (inside ``autograd.record()``),
    updating the running ones as ``momentum * running + (1 - momentum) * batch``; running ones otherwise."""

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, use_global_stats: bool = False, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", running_mean_initializer: Any = "zeros",
                 running_variance_initializer: Any = "ones", in_channels: int = 0, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        if axis != 1:
            raise ValueError(f"BatchNorm: axis={axis}; only the channel axis 1 is supported")
        self._momentum, self._eps, self._global = momentum, epsilon, use_global_stats
        self.gamma = Parameter("gamma", shape=(in_channels,), init=gamma_initializer,
                               grad_req="write" if scale else "null")  # fmt: skip
        self.beta = Parameter("beta", shape=(in_channels,), init=beta_initializer,
                              grad_req="write" if center else "null")  # fmt: skip
        self.running_mean = Parameter("running_mean", shape=(in_channels,), init=running_mean_initializer,
                                      grad_req="null")  # fmt: skip
        self.running_var = Parameter("running_var", shape=(in_channels,), init=running_variance_initializer,
                                     grad_req="null")  # fmt: skip

    def forward(self, x: NDArray) -> NDArray:
        channels = (x.shape[1],)
        for p in (self.gamma, self.beta, self.running_mean, self.running_var):
            p._finish_deferred_init(channels)
        device = x.device
        training = _autograd.is_training() and not self._global
        return F.batch_norm(x, self.running_mean.data(device), self.running_var.data(device),
                            self.gamma.data(device), self.beta.data(device), training, 1.0 - self._momentum,
                            self._eps)  # fmt: skip

    def _describe(self) -> str:
        return f"momentum={self._momentum}, epsilon={self._eps}, in_channels={(self.gamma.shape or (0,))[0] or None}"


class _Function(HybridBlock):
    def __init__(self, **settings: Any) -> None:
        super().__init__()
        self._settings = settings

    def _describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._settings.items())


class Activation(_Function):
    def __init__(self, activation: str, **kwargs: Any) -> None:
        super().__init__(activation=activation)
        self._act = _activation(activation)

    def forward(self, x: NDArray) -> NDArray:
        out: NDArray = self._act(x)
        return out


class MaxPool2D(_Function):
    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 layout: str = "NCHW", **kwargs: Any) -> None:  # fmt: skip
        super().__init__(kernel_size=pool_size, stride=pool_size if strides is None else strides, padding=padding,
                         ceil_mode=ceil_mode)  # fmt: skip

    def forward(self, x: NDArray) -> NDArray:
        return F.max_pool2d(x, **self._settings)


class AvgPool2D(_Function):
    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 layout: str = "NCHW", count_include_pad: bool = True, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(kernel_size=pool_size, stride=pool_size if strides is None else strides, padding=padding,
                         ceil_mode=ceil_mode, count_include_pad=count_include_pad)  # fmt: skip

    def forward(self, x: NDArray) -> NDArray:
        return F.avg_pool2d(x, **self._settings)


class GlobalAvgPool2D(_Function):
    """The mean over each channel: ``(N, C, H, W)`` to ``(N, C, 1, 1)``."""

    def forward(self, x: NDArray) -> NDArray:
        return F.adaptive_avg_pool2d(x, 1)


class GlobalMaxPool2D(_Function):
    def forward(self, x: NDArray) -> NDArray:
        return F.max_pool2d(x, kernel_size=x.shape[2:])


class Flatten(_Function):
    def forward(self, x: NDArray) -> NDArray:
        return x.reshape((x.shape[0], -1))


class Dropout(_Function):
    """Zeroes each element with probability ``rate`` in train mode (inside ``autograd.record()``)."""

    def __init__(self, rate: float, axes: Any = (), **kwargs: Any) -> None:
        super().__init__(rate=rate)

    def forward(self, x: NDArray) -> NDArray:
        return F.dropout(x, self._settings["rate"], _autograd.is_training())
