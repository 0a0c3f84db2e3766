"""The models of d2l's multi-device chapters, written with ``autopar.nn.functional``.

A :class:`Model` is what d2l's from-scratch chapter trains: a list of
parameter arrays, the batch-norm statistics (``buffers``, one mean and one
variance per batch norm), and a forward function of them. It is made from the
plain-PyTorch reference model of the same name and seed
(:mod:`autopar.benchmarks.reference_models`), so both start from the very same
numbers -- what makes the reference the oracle of the training tests, and the
DDP baseline a fair comparison. ``Model.to(device)`` is the model on one
device; the data-parallel step replicates the parameters itself
(``parallel.replicate``), and each device keeps its own batch-norm statistics,
as DDP without ``SyncBatchNorm`` does.

- ``lenet``: LeNet-5 (ReLU), 61,706 parameters -- the reference's own
  ``lenet_forward``, run on autopar arrays.
- ``resnet18``: d2l's slightly modified ResNet-18 (11,175,818 parameters),
  the reference's layers in the order of its ``parameters()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from autopar.arrays import _autograd
from autopar.arrays._array import NDArray
from autopar.arrays._creation import asarray
from autopar.nn import functional as F

MODELS = ("lenet", "resnet18")


@dataclass
class Model:
    """Parameters, batch-norm statistics and a forward: ``model(x, params, buffers, training)``.

    ``params`` default to the model's own; pass a device's replica of the
    parameters (``parallel.replicate``) to run it there. ``buffers`` default to
    the statistics of the input's device (``buffers_for``): the model's own on
    their device, a copy kept per other device.
    """

    name: str
    params: list[NDArray]
    buffers: list[NDArray] = field(default_factory=list)
    forward: Callable[..., NDArray] = field(default=lambda x, params, buffers, training: x, repr=False)
    _device_buffers: dict[Any, list[NDArray]] = field(default_factory=dict, repr=False)

    def __call__(self, x: NDArray, params: list[NDArray] | None = None, buffers: list[NDArray] | None = None,
                 training: bool | None = None) -> NDArray:  # fmt: skip
        """The logits for ``x``; ``training`` (batch statistics in batch norm) defaults to MXNet's
        train mode, which ``autograd.record()`` enters."""
        if training is None:
            training = _autograd.is_training()
        if buffers is None:
            buffers = self.buffers_for(x.device) if type(x) is NDArray else self.buffers
        return self.forward(x, self.params if params is None else params, buffers, training)

    def buffers_on(self, device: Any) -> list[NDArray]:
        """A copy of the batch-norm statistics on ``device`` (each device keeps its own)."""
        return [b.copyto(device) if b.device != device else b.copy() for b in self.buffers]

    def buffers_for(self, device: Any) -> list[NDArray]:
        """The statistics a forward on ``device`` updates: the model's own where they live, else that
        device's copy, made on first use and kept (each device keeps its own, as DDP without SyncBatchNorm)."""
        if not self.buffers or self.buffers[0].device == device:
            return self.buffers
        if device not in self._device_buffers:
            self._device_buffers[device] = self.buffers_on(device)
        return self._device_buffers[device]

    @property
    def parameter_count(self) -> int:
        return sum(p.size for p in self.params)


def _lenet(x: NDArray, params: list[NDArray], buffers: list[NDArray], training: bool) -> NDArray:
    from autopar.benchmarks.reference_models import lenet_forward

    out: NDArray = lenet_forward(x, params, "relu", nnf=F)
    return out


def _resnet18(x: NDArray, params: list[NDArray], buffers: list[NDArray], training: bool) -> NDArray:
    weights: Iterator[NDArray] = iter(params)
    stats: Iterator[NDArray] = iter(buffers)

    def conv(h: NDArray, stride: int, padding: int) -> NDArray:
        return F.conv2d(h, next(weights), next(weights), stride=stride, padding=padding)

    def bn(h: NDArray) -> NDArray:
        gamma, beta = next(weights), next(weights)
        return F.batch_norm(h, next(stats), next(stats), gamma, beta, training=training)

    y = F.relu(bn(conv(x, 1, 1)))
    channels = 64
    for i, out in enumerate((64, 128, 256, 512)):
        for j in range(2):
            stride = 2 if i > 0 and j == 0 else 1
            project = stride != 1 or channels != out
            h = F.relu(bn(conv(y, stride, 1)))
            h = bn(conv(h, 1, 1))
            y = F.relu(h + (conv(y, stride, 0) if project else y))
            channels = out
    y = F.flatten(F.adaptive_avg_pool2d(y, 1), 1)
    return F.linear(y, next(weights), next(weights))


def build(name: str, seed: int = 0, device: Any = None) -> Model:
    """``"lenet"`` or ``"resnet18"``, with the parameters of the reference model built from ``seed``."""
    from autopar.benchmarks import reference_models

    if name not in MODELS:
        raise ValueError(f"nn.models.build: model {name!r}; expected one of {', '.join(MODELS)}")
    reference = reference_models.build(name, seed)
    params = [asarray(p.detach().cpu().numpy(), device=device) for p in reference.parameters()]
    buffers = [asarray(b.detach().cpu().numpy(), device=device) for n, b in reference.named_buffers()
               if n.endswith(("running_mean", "running_var"))]  # fmt: skip
    return Model(name, params, buffers, _lenet if name == "lenet" else _resnet18)
