"""The MXNet edition's helpers: ``from autopar.d2l import mxnet as d2l``.

Everything in ``autopar.d2l``, the edition's ``Residual`` block (a Gluon
``Block``), and ``resnet18(num_classes)``, the network the concise
multi-GPU chapter saves to the d2l package.
"""

from __future__ import annotations

from typing import Any

from autopar.d2l import *  # noqa: F403 (the edition holds every shared helper)
from autopar.d2l import __all__ as _shared
from autopar.gluon import nn
from autopar.d2l._residual import residual_forward

__all__ = [*_shared, "Residual", "resnet18"]


class Residual(nn.Block):
    """The residual block of ResNet: two 3x3 convolutions with batch norm, plus the input (through a
    1x1 convolution when ``use_1x1conv``)."""

    def __init__(self, num_channels: int, use_1x1conv: bool = False, strides: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.conv1 = nn.Conv2D(num_channels, kernel_size=3, padding=1, strides=strides)
        self.conv2 = nn.Conv2D(num_channels, kernel_size=3, padding=1)
        self.conv3 = nn.Conv2D(num_channels, kernel_size=1, strides=strides) if use_1x1conv else None
        self.bn1 = nn.BatchNorm()
        self.bn2 = nn.BatchNorm()

    def forward(self, X: Any) -> Any:
        return residual_forward(self, X)


def resnet18(num_classes: int) -> nn.Sequential:
    """The chapter's slightly modified ResNet-18: a 3x3 first convolution, no max-pooling."""

    def resnet_block(num_channels: int, num_residuals: int, first_block: bool = False) -> nn.Sequential:
        blk = nn.Sequential()
        for i in range(num_residuals):
            blk.add(Residual(num_channels, use_1x1conv=True, strides=2) if i == 0 and not first_block
                    else Residual(num_channels))  # fmt: skip
        return blk

    net = nn.Sequential()
    net.add(nn.Conv2D(64, kernel_size=3, strides=1, padding=1), nn.BatchNorm(), nn.Activation("relu"))
    net.add(resnet_block(64, 2, first_block=True), resnet_block(128, 2), resnet_block(256, 2), resnet_block(512, 2))
    net.add(nn.GlobalAvgPool2D(), nn.Dense(num_classes))
    return net


def __getattr__(name: str) -> Any:
    if name == "plt":  # matplotlib's pyplot, imported when first used
        from autopar.d2l._animator import pyplot

        return pyplot()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
