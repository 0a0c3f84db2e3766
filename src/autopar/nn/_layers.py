"""PyTorch's layers on autopar arrays: each forward is ``nn.functional`` ops, pushed like any other.

Parameters start as torch's do (``reset_parameters``: uniform in
``±1/sqrt(fan_in)`` for linear and convolution layers, ones and zeros for
batch norm), drawn from autopar's generators (``autopar.random.seed``).
The ``Lazy`` layers learn their input size from the first forward, make
their parameters on the input's device, and then become the plain layer
(``type(m) is nn.Conv2d``), as torch's do. Until then each parameter is a
placeholder (``_module.uninitialized``) that the real one succeeds, so an
optimizer made before the first forward follows it (``optim``: ``moved_to``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from autopar.arrays._array import NDArray
from autopar.nn import functional as F
from autopar.nn import init
from autopar.nn._module import Module, _note_move, is_uninitialized, uninitialized


def _new(shape: tuple[int, ...], device: Any, dtype: Any, fill: float | None = None) -> NDArray:
    """A fresh parameter array (zeros, or ``fill``) that requires grad; ``reset_parameters`` sets its values."""
    from autopar.arrays._creation import full

    out: NDArray = full(shape, 0.0 if fill is None else fill, device=device, dtype=dtype)
    return out.requires_grad_()


def _pair(value: Any) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))


class _Lazy(Module):
    """Parameters made on the first forward, from the input's channel count; then the plain layer."""

    cls_to_become: type[Module]  # the plain layer this one becomes after its first forward

    def _materialize(self, x: NDArray) -> None:
        raise NotImplementedError

    def _placeholders(self, *names: str) -> None:
        for name in names:
            setattr(self, name, uninitialized())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if type(self) is not self.cls_to_become and args and type(args[0]) is NDArray:
            before = dict(self._parameters)
            self._materialize(args[0])
            for name, old in before.items():  # an optimizer given the placeholders trains the real ones
                if old is not None and is_uninitialized(old) and self._parameters.get(name) is not None:
                    _note_move(old, self._parameters[name])  # type: ignore[arg-type]
            self.__class__ = self.cls_to_become  # type: ignore[assignment]
        return self.forward(*args, **kwargs)


class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``(out_features, in_features)``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:  # fmt: skip
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = _new((out_features, in_features), device, dtype)
        if bias:
            self.bias = _new((out_features,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if is_uninitialized(self.weight):
            return
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: NDArray) -> NDArray:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class LazyLinear(_Lazy, Linear):
    """``Linear`` whose ``in_features`` is the last axis of the first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        Module.__init__(self)
        self.in_features, self.out_features, self._dtype = 0, out_features, dtype
        self.register_parameter("bias", None)
        self._placeholders("weight", *(("bias",) if bias else ()))
        self._has_bias = bias

    def _materialize(self, x: NDArray) -> None:
        self.in_features = x.shape[-1]
        self.weight = _new((self.out_features, self.in_features), x.device, self._dtype)
        if self._has_bias:
            self.bias = _new((self.out_features,), x.device, self._dtype)
        self.reset_parameters()


class Conv2d(Module):
    """2-D convolution, as ``torch.nn.Conv2d`` (``padding_mode="zeros"`` only)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:  # fmt: skip
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d: padding_mode={padding_mode!r}; only 'zeros' is supported")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.dilation = _pair(kernel_size), _pair(stride), _pair(dilation)
        self.padding = padding if isinstance(padding, str) else _pair(padding)
        self._factory = (device, dtype)
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)
        self._bias_wanted = bias
        if in_channels:
            self._make(in_channels, device)

    def _make(self, in_channels: int, device: Any) -> None:
        if in_channels % self.groups:
            raise ValueError(f"Conv2d: in_channels={in_channels} is not divisible by groups={self.groups}")
        self.in_channels = in_channels
        dtype = self._factory[1]
        self.weight = _new((self.out_channels, in_channels // self.groups, *self.kernel_size), device, dtype)
        if self._bias_wanted:
            self.bias = _new((self.out_channels,), device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is None or is_uninitialized(self.weight):
            return
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.kernel_size[0] * self.kernel_size[1]
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: NDArray) -> NDArray:
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")


class LazyConv2d(_Lazy, Conv2d):
    """``Conv2d`` whose ``in_channels`` is the channel axis of the first input."""

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:  # fmt: skip
        Conv2d.__init__(self, 0, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                        device, dtype)  # fmt: skip
        self._placeholders("weight", *(("bias",) if bias else ()))

    def _materialize(self, x: NDArray) -> None:
        self._make(x.shape[1] if x.ndim == 4 else x.shape[0], x.device)


class _BatchNorm(Module):
    """Batch normalisation over axis 1, as torch's: batch statistics in training (updating the running
    ones by ``momentum``), the running statistics in ``eval()``. torch's ``num_batches_tracked`` (used
    only by ``momentum=None``, which is not supported) is not kept; ``load_state_dict`` skips it."""

    _ignored_state = ("num_batches_tracked",)
    _dims: tuple[int, ...] = (2, 3, 4)  # the input ranks the layer takes

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:  # fmt: skip
        super().__init__()
        if momentum is None:
            raise ValueError("BatchNorm: momentum=None (a cumulative average) is not supported; give a number")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._factory = (device, dtype)
        for name in ("weight", "bias"):
            self.register_parameter(name, None)
        for name in ("running_mean", "running_var"):
            self.register_buffer(name, None)
        if num_features:
            self._make(num_features, device)

    def _make(self, num_features: int, device: Any) -> None:
        from autopar.arrays._creation import ones, zeros

        self.num_features = num_features
        dtype = self._factory[1]
        if self.affine:
            self.weight = _new((num_features,), device, dtype, 1.0)
            self.bias = _new((num_features,), device, dtype)
        if self.track_running_stats:
            self.running_mean = zeros(num_features, device=device, dtype=dtype)
            self.running_var = ones(num_features, device=device, dtype=dtype)

    def forward(self, input: NDArray) -> NDArray:
        if input.ndim not in self._dims:
            raise ValueError(f"{type(self).__name__}: expected {' or '.join(f'{d}D' for d in self._dims)} input "
                             f"(got {input.ndim}D input of shape {tuple(input.shape)})")
        batch_stats = self.training or self.running_mean is None
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, batch_stats,
                            self.momentum, self.eps)  # fmt: skip

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}"


class BatchNorm1d(_BatchNorm):
    """Batch norm of ``(N, C)`` or ``(N, C, L)`` inputs."""

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm of ``(N, C, H, W)`` inputs."""

    _dims = (4,)


class LazyBatchNorm2d(_Lazy, BatchNorm2d):
    """``BatchNorm2d`` whose ``num_features`` is the channel axis of the first input."""

    cls_to_become = BatchNorm2d

    def __init__(self, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:  # fmt: skip
        BatchNorm2d.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype)
        if affine:
            self._placeholders("weight", "bias")

    def _materialize(self, x: NDArray) -> None:
        self._make(x.shape[1], x.device)


class _Function(Module):
    """A layer without parameters: ``forward`` is one function of ``nn.functional``."""

    def __init__(self, **settings: Any) -> None:
        super().__init__()
        self._settings = settings

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._settings.items())


class ReLU(_Function):
    def __init__(self, inplace: bool = False) -> None:  # inplace is accepted and ignored: arrays are values
        super().__init__()

    def forward(self, input: NDArray) -> NDArray:
        return F.relu(input)


class Sigmoid(_Function):
    def forward(self, input: NDArray) -> NDArray:
        return F.sigmoid(input)


class Tanh(_Function):
    def forward(self, input: NDArray) -> NDArray:
        return F.tanh(input)


class Softmax(_Function):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__(dim=dim)

    def forward(self, input: NDArray) -> NDArray:
        return F.softmax(input, self._settings["dim"])


class Flatten(_Function):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__(start_dim=start_dim, end_dim=end_dim)

    def forward(self, input: NDArray) -> NDArray:
        return F.flatten(input, **self._settings)


class MaxPool2d(_Function):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 ceil_mode: bool = False) -> None:  # fmt: skip
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                         ceil_mode=ceil_mode)  # fmt: skip

    def forward(self, input: NDArray) -> NDArray:
        return F.max_pool2d(input, **self._settings)


class AvgPool2d(_Function):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:  # fmt: skip
        super().__init__(kernel_size=kernel_size, stride=stride, padding=padding, ceil_mode=ceil_mode,
                         count_include_pad=count_include_pad)  # fmt: skip

    def forward(self, input: NDArray) -> NDArray:
        return F.avg_pool2d(input, **self._settings)


class AdaptiveAvgPool2d(_Function):
    def __init__(self, output_size: Any) -> None:
        super().__init__(output_size=output_size)

    def forward(self, input: NDArray) -> NDArray:
        return F.adaptive_avg_pool2d(input, self._settings["output_size"])


class Dropout(_Function):
    """Zeroes each element with probability ``p`` in training, from the device's generator."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__(p=p)

    def forward(self, input: NDArray) -> NDArray:
        return F.dropout(input, self._settings["p"], self.training)


class Identity(_Function):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: NDArray) -> NDArray:
        return input


class Sequential(Module):
    """Modules run in order: ``Sequential(a, b, c)`` or ``Sequential(OrderedDict(name=module, ...))``;
    ``add_module(name, m)`` appends one, ``net[i]`` and ``len(net)`` index them."""

    def __init__(self, *modules: Any) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (dict, OrderedDict)):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(modules):
                self.add_module(str(i), module)

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self._modules)), module)
        return self

    def __getitem__(self, index: int | slice) -> Any:
        items = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return items[index]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(m for m in self._modules.values() if m is not None)

    def forward(self, input: Any) -> Any:
        for module in self:
            input = module(input)
        return input
