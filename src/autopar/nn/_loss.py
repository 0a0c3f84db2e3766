"""PyTorch's loss modules: ``nn.CrossEntropyLoss``, ``nn.MSELoss``, ``nn.L1Loss``."""

from __future__ import annotations

import warnings
from typing import Any

from autopar.arrays._array import NDArray
from autopar.nn import functional as F
from autopar.nn._module import Module

_REDUCTIONS = ("mean", "sum", "none")


def _reduction(op: str, reduction: str) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction={reduction!r}; expected one of {', '.join(_REDUCTIONS)}")
    return reduction


def _same_shape(op: str, input: NDArray, target: NDArray) -> None:
    """torch's warning: an (N, 1) output against (N,) targets broadcasts to (N, N) -- a silent wrong loss."""
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"{op}: the target's shape {tuple(target.shape)} differs from the input's "
                      f"{tuple(input.shape)}; they broadcast, which is likely not meant (reshape one to the "
                      "other)", UserWarning, stacklevel=4)  # fmt: skip


def _reduce(loss: NDArray, reduction: str) -> NDArray:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


class CrossEntropyLoss(Module):
    """Softmax cross-entropy of logits against class indices (or probabilities), as torch's."""

    def __init__(self, weight: Any = None, size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:  # fmt: skip
        super().__init__()
        if size_average is not None or reduce is not None:
            raise ValueError("CrossEntropyLoss: size_average= and reduce= are deprecated in torch; use reduction=")
        self.weight, self.ignore_index = weight, ignore_index
        self.reduction, self.label_smoothing = _reduction("CrossEntropyLoss", reduction), label_smoothing

    def forward(self, input: NDArray, target: NDArray) -> NDArray:
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)  # fmt: skip

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"


class MSELoss(Module):
    """``(input - target) ** 2``, reduced."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction("MSELoss", reduction)

    def forward(self, input: NDArray, target: NDArray) -> NDArray:
        _same_shape("MSELoss", input, target)
        return _reduce((input - target) ** 2, self.reduction)


class L1Loss(Module):
    """``|input - target|``, reduced."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction("L1Loss", reduction)

    def forward(self, input: NDArray, target: NDArray) -> NDArray:
        _same_shape("L1Loss", input, target)
        return _reduce(abs(input - target), self.reduction)
