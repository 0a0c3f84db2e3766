"""``autopar.nn``: PyTorch's layer API on autopar arrays.

    from autopar import nn
    net = nn.Sequential(nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))
    net.apply(lambda m: nn.init.normal_(m.weight, std=0.01) if type(m) is nn.Conv2d else None)
    net = nn.DataParallel(net, device_ids=autopar.try_all_gpus())
    loss = nn.CrossEntropyLoss()
    trainer = autopar.optim.SGD(net.parameters(), lr=0.1)

- ``Module`` and the layers (``_module.py``, ``_layers.py``): torch's names,
  arguments and initialisation; each forward is ``nn.functional`` ops, so it
  returns at once and runs on the engine.
- ``init``: torch.nn.init's functions; ``functional``: the ops themselves.
- ``CrossEntropyLoss``, ``MSELoss``, ``L1Loss``.
- ``DataParallel`` and ``parallel.scatter``/``gather``: torch's single-process
  data parallelism on autopar devices (``parallel.py``).
- ``models``: the reference LeNet and ResNet-18 as parameter arrays (for
  ``autopar.parallel``'s own data-parallel step and the benchmarks).

Why these are autopar's own classes rather than torch.nn modules: the design
note of ``_module.py``. Gluon's names are in ``autopar.gluon``.
"""

from __future__ import annotations

from typing import Any

from autopar.arrays import _methods  # noqa: F401  (arrays get their methods and operators)

from autopar.nn import functional, init, parallel
from autopar.nn._layers import (
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv2d,
    Dropout,
    Flatten,
    Identity,
    LazyBatchNorm2d,
    LazyConv2d,
    LazyLinear,
    Linear,
    MaxPool2d,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from autopar.nn._loss import CrossEntropyLoss, L1Loss, MSELoss
from autopar.nn._module import Module, Parameter
from autopar.nn.parallel import DataParallel

__all__ = ["AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss",
           "DataParallel", "Dropout", "Flatten", "Identity", "L1Loss", "LazyBatchNorm2d", "LazyConv2d", "LazyLinear",
           "Linear", "MSELoss", "MaxPool2d", "Module", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh",
           "functional", "init", "models", "parallel"]  # fmt: skip


def __getattr__(name: str) -> Any:
    if name == "models":  # the reference models import the benchmarks' torch models: only when asked
        import importlib

        module = importlib.import_module("autopar.nn.models")
        globals()["models"] = module
        return module
    raise AttributeError(f"module 'autopar.nn' has no attribute {name!r}")
