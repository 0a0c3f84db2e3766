"""``gluon.loss``: Gluon's losses, one value per sample (``l.backward()`` sums them, as MXNet does)."""

from __future__ import annotations

from typing import Any

from autopar.arrays._array import NDArray
from autopar.gluon._block import HybridBlock
from autopar.nn import functional as F

__all__ = ["L1Loss", "L2Loss", "Loss", "SoftmaxCrossEntropyLoss", "SoftmaxCELoss"]


class Loss(HybridBlock):
    """Base class: ``weight`` scales the loss; values are averaged over every axis but ``batch_axis``."""

    def __init__(self, weight: float | None = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__()
        if batch_axis != 0:
            raise ValueError(f"{type(self).__name__}: batch_axis={batch_axis}; only 0 is supported")
        self._weight = weight

    def _finish(self, loss: NDArray, sample_weight: Any) -> NDArray:
        if sample_weight is not None:
            loss = loss * sample_weight
        if self._weight is not None:
            loss = loss * self._weight
        return loss.reshape((loss.shape[0], -1)).mean(axis=1) if loss.ndim > 1 else loss


class SoftmaxCrossEntropyLoss(Loss):
    """Softmax cross-entropy of logits ``pred`` against class indices (``sparse_label``) or probabilities."""

    def __init__(self, axis: int = -1, sparse_label: bool = True, from_logits: bool = False, weight: float | None = None,
                 batch_axis: int = 0, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(weight, batch_axis)
        self._axis, self._sparse, self._from_logits = axis, sparse_label, from_logits

    def forward(self, pred: NDArray, label: NDArray, sample_weight: Any = None) -> NDArray:
        if self._sparse and not self._from_logits and pred.ndim == 2 and self._axis in (1, -1):
            labels = label.reshape((label.shape[0],)) if label.ndim == 2 else label
            return self._finish(F.cross_entropy(pred, labels.astype("int64"), reduction="none"), sample_weight)
        logp = pred if self._from_logits else F.log_softmax(pred, self._axis)
        if self._sparse:
            from autopar.arrays._indexing import take_along_axis

            index = label.astype("int64")
            loss = -take_along_axis(logp, index.reshape((*index.shape, 1)) if index.ndim < pred.ndim else index,
                                    axis=self._axis)  # fmt: skip
        else:
            loss = -(logp * label).sum(axis=self._axis, keepdims=True)
        return self._finish(loss, sample_weight)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class L2Loss(Loss):
    """``weight / 2 * (pred - label) ** 2`` (Gluon's ``weight`` defaults to 1)."""

    def __init__(self, weight: float = 1.0, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis)

    def forward(self, pred: NDArray, label: NDArray, sample_weight: Any = None) -> NDArray:
        return self._finish((pred - label.reshape(pred.shape)) ** 2 / 2, sample_weight)


class L1Loss(Loss):
    """``|pred - label|``."""

    def forward(self, pred: NDArray, label: NDArray, sample_weight: Any = None) -> NDArray:
        return self._finish(abs(pred - label.reshape(pred.shape)), sample_weight)
