"""The array layer: :class:`NDArray` and its operations, on PyTorch kernels.

Importing this package imports torch; ``import autopar`` defers it until an
array name is first used.
"""

from __future__ import annotations

import torch as _torch

from autopar.ndarray import _copy, random  # noqa: F401  (_copy attaches copyto/to)
from autopar.ndarray._core import NDArray
from autopar.ndarray._creation import arange, array, asarray, from_torch, full, ones, ones_like, zeros, zeros_like
from autopar.ndarray._ops import (
    call,
    dot,
    exp,
    log,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mm,
    reshape,
    sqrt,
    sum,
    tanh,
    transpose,
)
from autopar.ndarray._random import rand, randn

float16 = _torch.float16
bfloat16 = _torch.bfloat16
float32 = _torch.float32
float64 = _torch.float64
int32 = _torch.int32
int64 = _torch.int64
bool_ = _torch.bool

__all__ = [
    "NDArray",
    "arange",
    "array",
    "asarray",
    "bfloat16",
    "bool_",
    "call",
    "dot",
    "exp",
    "float16",
    "float32",
    "float64",
    "from_torch",
    "full",
    "int32",
    "int64",
    "log",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mm",
    "ones",
    "ones_like",
    "rand",
    "randn",
    "random",
    "reshape",
    "sqrt",
    "sum",
    "tanh",
    "transpose",
    "zeros",
    "zeros_like",
]
