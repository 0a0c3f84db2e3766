"""``autopar.gluon``: MXNet Gluon's API on autopar arrays.

    from autopar import autograd, gluon, init
    from autopar.gluon import nn
    net = nn.Sequential()
    net.add(nn.Conv2D(6, kernel_size=5, padding=2, activation="relu"), nn.Dense(10))
    net.initialize(init=init.Normal(sigma=0.01), ctx=autopar.try_all_gpus())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()

- ``Block``/``HybridBlock`` (``_block.py``) and ``Parameter`` (``_parameter.py``):
  parameters initialised on every device of ``ctx``, a forward that uses
  the copy of its input's device.
- ``nn``: the layers; ``loss``: the losses; ``utils.split_and_load``.
- ``Trainer`` (``_trainer.py``): gradients summed across devices, then each
  copy updated -- pushed, so the sums overlap backward.

PyTorch's names for the same layers are in ``autopar.nn``.
"""

from __future__ import annotations

from autopar.gluon import loss, nn, utils
from autopar.gluon._block import Block, HybridBlock
from autopar.gluon._parameter import DeferredInitializationError, Parameter, ParameterDict
from autopar.gluon._trainer import Trainer

__all__ = ["Block", "DeferredInitializationError", "HybridBlock", "Parameter", "ParameterDict", "Trainer", "loss",
           "nn", "utils"]  # fmt: skip
