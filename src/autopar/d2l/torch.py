"""The PyTorch edition's helpers: ``from autopar.d2l import torch as d2l``.

Everything in ``autopar.d2l``, and the edition's ``Residual`` block (an
``autopar.nn.Module``). ``Residual`` takes both of the book's signatures:
``Residual(num_channels, use_1x1conv=False, strides=1)`` (lazy convolutions,
the current edition) and ``Residual(input_channels, num_channels, ...)``.
"""

from __future__ import annotations

from typing import Any

from autopar.d2l import *  # noqa: F403 (the edition holds every shared helper)
from autopar.d2l import __all__ as _shared
from autopar.nn import BatchNorm2d, Conv2d, LazyBatchNorm2d, LazyConv2d, Module
from autopar.d2l._residual import residual_forward

__all__ = [*_shared, "Residual"]


class Residual(Module):
    """The residual block of ResNet: two 3x3 convolutions with batch norm, plus the input (through a
    1x1 convolution when ``use_1x1conv``)."""

    def __init__(self, *channels: int, use_1x1conv: bool = False, strides: int = 1) -> None:
        super().__init__()
        if len(channels) == 2:  # Residual(input_channels, num_channels, ...)
            in_channels, out = channels
            self.conv1: Any = Conv2d(in_channels, out, kernel_size=3, padding=1, stride=strides)
            self.conv2: Any = Conv2d(out, out, kernel_size=3, padding=1)
            self.conv3: Any = Conv2d(in_channels, out, kernel_size=1, stride=strides) if use_1x1conv else None
            self.bn1: Any = BatchNorm2d(out)
            self.bn2: Any = BatchNorm2d(out)
        elif len(channels) == 1:  # Residual(num_channels, ...): input size from the first forward
            (out,) = channels
            self.conv1 = LazyConv2d(out, kernel_size=3, padding=1, stride=strides)
            self.conv2 = LazyConv2d(out, kernel_size=3, padding=1)
            self.conv3 = LazyConv2d(out, kernel_size=1, stride=strides) if use_1x1conv else None
            self.bn1, self.bn2 = LazyBatchNorm2d(), LazyBatchNorm2d()
        else:
            raise TypeError("Residual(num_channels, use_1x1conv=False, strides=1), or "
                            "Residual(input_channels, num_channels, use_1x1conv=False, strides=1)")

    def forward(self, X: Any) -> Any:
        return residual_forward(self, X)


def __getattr__(name: str) -> Any:
    if name == "plt":  # matplotlib's pyplot, imported when first used
        from autopar.d2l._animator import pyplot

        return pyplot()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
