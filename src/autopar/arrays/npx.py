"""``autopar.npx``: MXNet's ``npx`` spellings.

``npx.set_np()`` is a no-op (autopar arrays are always NumPy-like);
``waitall``, ``cpu``/``gpu``/``num_gpus`` are autopar's own; ``relu``,
``sigmoid``, ``softmax`` and ``log_softmax`` are table entries.
"""

from __future__ import annotations

from typing import Any

import torch

from autopar.arrays._dispatch import bind
from autopar.arrays._elementwise import FUNCTIONS
from autopar.arrays._manipulation import _array_like, normalize_axis
from autopar.arrays._table import TABLE, define, floating
from autopar.devices import cpu, gpu, num_gpus
from autopar.engine import waitall

relu = FUNCTIONS["relu"]
sigmoid = FUNCTIONS["sigmoid"]

define("softmax", lambda t, axis: torch.softmax(t, dim=axis), floating("real numeric"))
define("log_softmax", lambda t, axis: torch.log_softmax(t, dim=axis), floating("real numeric"))


def set_np(shape: bool = True, array: bool = True, dtype: bool = False) -> None:
    """MXNet's switch to NumPy semantics: autopar has no other, so this does nothing."""


def reset_np() -> None:
    """A no-op, like :func:`set_np`."""


def softmax(data: Any, axis: int = -1) -> Any:
    x = _array_like(data)
    return bind(TABLE["softmax"], (x,), {"axis": normalize_axis("softmax", axis, x.ndim)})


def log_softmax(data: Any, axis: int = -1) -> Any:
    x = _array_like(data)
    return bind(TABLE["log_softmax"], (x,), {"axis": normalize_axis("log_softmax", axis, x.ndim)})


__all__ = ["cpu", "gpu", "log_softmax", "num_gpus", "relu", "reset_np", "set_np", "sigmoid", "softmax", "waitall"]
