"""``autopar.nn.functional``: torch.nn.functional's names and arguments, on autopar arrays.

Each op is a table entry of the array layer (``autopar/arrays/_nn.py``): it
returns at once, runs on the engine, and has torch's gradient. MXNet's
spellings are in ``autopar.npx``.
"""

from __future__ import annotations

from autopar.arrays._nn import (
    adaptive_avg_pool2d,
    avg_pool2d,
    batch_norm,
    conv2d,
    cross_entropy,
    dropout,
    flatten,
    linear,
    log_softmax,
    max_pool2d,
    relu,
    softmax,
)
from autopar.arrays._elementwise import FUNCTIONS as _EW

sigmoid = _EW["sigmoid"]
tanh = _EW["tanh"]

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "batch_norm", "conv2d", "cross_entropy", "dropout", "flatten", "linear",
           "log_softmax", "max_pool2d", "relu", "sigmoid", "softmax", "tanh"]  # fmt: skip
