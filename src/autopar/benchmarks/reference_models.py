"""The models of d2l's multi-device chapters in plain PyTorch: the reference.

They serve twice: the PyTorch ``DistributedDataParallel`` baseline trains them
(:mod:`autopar.benchmarks.ddp_baseline`), and tests of autopar's own training
use them as the oracle ("2 devices give the parameters 1 device gives", "the
gradients equal torch autograd's").

**LeNet** is LeNet-5 as in d2l's *Convolutional Neural Networks (LeNet)*
section, with ReLU by default::

    x (N, 1, 28, 28)
    conv 5x5 pad 2, 6 channels + bias, act, avg_pool 2x2 stride 2   -> (N, 6, 14, 14)
    conv 5x5, 16 channels + bias, act, avg_pool 2x2 stride 2        -> (N, 16, 5, 5)
    flatten                                                         -> (N, 400)
    linear 400 -> 120, act; linear 120 -> 84, act; linear 84 -> 10  -> (N, 10) logits

61,706 parameters. ``act`` is ``relu`` (the default: the activation of d2l's
multi-GPU chapter, and the one in autopar's nn op list) or ``sigmoid`` (the
book's LeNet section). The multi-GPU chapter's own from-scratch LeNet (20 and
50 channels of 3x3 and 5x5, 800 -> 128 -> 10) is not used: it costs about four
times as much per sample, and the reference training figures (7,870
samples/s on one thread) are LeNet-5's. :func:`lenet_forward` takes the
functional namespace as an argument, so the very same forward runs on torch
tensors and, once it exists, on autopar arrays (``autopar.nn.functional`` has
the same names).

**ResNet-18** is d2l's "slightly modified" one of *Concise Implementation for
Multiple GPUs*: a 3x3 stride-1 stem of 64 channels with batch norm and no max
pooling, then four stages of two residual blocks (64, 128, 256, 512 channels;
the first block of stages 2-4 halves the resolution and has a 1x1 projection),
global average pooling and one linear layer. For 1-channel 28x28 inputs and 10
classes it has 11,175,818 parameters. Its batch norms keep per-device
statistics in data-parallel training (as DDP without ``SyncBatchNorm`` and
d2l's loop do), so "2 devices equal 1 device" holds exactly only for LeNet.

:func:`build` initialises each as its d2l section does, deterministically from
a seed (equal seeds, equal parameters in every process): LeNet's conv and
linear weights Xavier-uniform, ResNet-18's drawn from N(0, 0.01^2); biases
zero (d2l leaves torch's default there); batch norm scale one, shift zero.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch
from torch import nn
from torch.nn import functional

MODELS = ("lenet", "resnet18")
ACTIVATIONS = ("relu", "sigmoid")


def lenet_forward(x: Any, params: list[Any], activation: str = "relu", nnf: ModuleType | Any = functional) -> Any:
    """LeNet's logits for ``x`` of shape ``(N, 1, 28, 28)``.

    ``params`` is ``[w1, b1, w2, b2, w3, b3, w4, b4, w5, b5]`` in the shapes of
    :class:`LeNet` (its ``list(parameters())``); ``nnf`` is the namespace that
    provides ``conv2d``, ``avg_pool2d``, ``linear`` and the activation.
    """
    if activation == "relu":
        act = nnf.relu
    else:  # torch's functional sigmoid is deprecated for torch.sigmoid
        act = torch.sigmoid if nnf is functional else nnf.sigmoid
    w1, b1, w2, b2, w3, b3, w4, b4, w5, b5 = params
    h = nnf.avg_pool2d(act(nnf.conv2d(x, w1, b1, padding=2)), kernel_size=2, stride=2)
    h = nnf.avg_pool2d(act(nnf.conv2d(h, w2, b2)), kernel_size=2, stride=2)
    h = h.reshape(h.shape[0], -1)
    h = act(nnf.linear(act(nnf.linear(h, w3, b3)), w4, b4))
    return nnf.linear(h, w5, b5)


class LeNet(nn.Module):
    """d2l's LeNet-5 (see the module docstring); parameters in :func:`lenet_forward`'s order."""

    def __init__(self, activation: str = "relu", num_classes: int = 10) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"LeNet(activation={activation!r}): expected one of {', '.join(ACTIVATIONS)}")
        self.activation = activation
        self.conv1 = nn.Conv2d(1, 6, kernel_size=5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, kernel_size=5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return lenet_forward(x, list(self.parameters()), self.activation)


class Residual(nn.Module):
    """d2l's residual block: two 3x3 convs with batch norm, an optional 1x1 projection of the input."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, stride=stride)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(out_channels)
        project = stride != 1 or in_channels != out_channels
        self.conv3 = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride) if project else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = functional.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        shortcut = x if self.conv3 is None else self.conv3(x)
        return functional.relu(y + shortcut)


def resnet18(num_classes: int = 10, in_channels: int = 1) -> nn.Sequential:
    """d2l's slightly modified ResNet-18 (see the module docstring)."""
    stages: list[nn.Module] = []
    channels = 64
    for i, out in enumerate((64, 128, 256, 512)):
        stride = 1 if i == 0 else 2
        stages.append(nn.Sequential(Residual(channels, out, stride), Residual(out, out)))
        channels = out
    return nn.Sequential(
        nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        *stages,
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(512, num_classes),
    )


def _initialise(module: nn.Module, seed: int, xavier: bool) -> nn.Module:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in module.modules():
            if isinstance(layer, (nn.Conv2d, nn.Linear)):
                if xavier:
                    nn.init.xavier_uniform_(layer.weight, generator=generator)
                else:
                    layer.weight.normal_(0.0, 0.01, generator=generator)
                if layer.bias is not None:
                    layer.bias.zero_()
            elif isinstance(layer, nn.BatchNorm2d):
                layer.reset_parameters()
    return module


def build(name: str, seed: int = 0, activation: str = "relu") -> nn.Module:
    """``"lenet"`` (with ``activation``) or ``"resnet18"``, for 1x28x28 inputs and 10 classes,
    initialised from ``seed`` as its d2l section does."""
    if name == "lenet":
        return _initialise(LeNet(activation), seed, xavier=True)
    if name == "resnet18":
        return _initialise(resnet18(), seed, xavier=False)
    raise ValueError(f"reference model {name!r}: expected one of {', '.join(MODELS)}")


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
