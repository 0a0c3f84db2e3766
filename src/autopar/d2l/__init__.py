"""``autopar.d2l``: the helpers of the book *Dive into Deep Learning* that its chapters on
computational performance use, for autopar arrays and both of the book's editions.

    from autopar.d2l import torch as d2l      # for the PyTorch edition (was: from d2l import torch as d2l)
    from autopar.d2l import mxnet as d2l      # for the MXNet edition   (was: from d2l import mxnet as d2l)

Both hold everything here and the edition's ``Residual`` block (a
``nn.Module`` or a Gluon ``Block``); the MXNet one also the chapter's saved
``resnet18``. Here:

- devices: ``try_gpu``, ``try_all_gpus``, ``num_gpus``; timing: ``Benchmark``, ``Timer``;
- data: ``load_data_fashion_mnist(batch_size, resize=None)`` (autopar arrays;
  downloads when the network allows), ``get_fashion_mnist_labels``,
  ``split_batch``;
- metrics: ``accuracy``, ``Accumulator``, ``evaluate_accuracy``,
  ``evaluate_accuracy_gpu``, ``evaluate_accuracy_gpus``;
- training: ``sgd``, ``train_ch6``, ``train_ch13``, ``train_batch_ch13``;
- plotting: ``Animator`` (live in a notebook and a terminal; ``save(path)``),
  ``plt`` (matplotlib's pyplot, imported when first used), ``use_svg_display``, ``set_figsize``.
"""

from __future__ import annotations

from typing import Any

from autopar._timing import Benchmark
from autopar.d2l._animator import Animator
from autopar.d2l._data import DataLoader, load_data_fashion_mnist, loaders
from autopar.d2l._train import (
    Accumulator,
    Timer,
    accuracy,
    evaluate_accuracy,
    evaluate_accuracy_gpu,
    evaluate_accuracy_gpus,
    sgd,
    split_batch,
    train_batch_ch13,
    train_ch6,
    train_ch13,
)
from autopar.datasets import FASHION_MNIST_CLASSES
from autopar.devices import num_gpus, try_all_gpus, try_gpu

__all__ = ["Accumulator", "Animator", "Benchmark", "DataLoader", "Timer", "accuracy", "evaluate_accuracy",
           "evaluate_accuracy_gpu", "evaluate_accuracy_gpus", "get_dataloader_workers", "get_fashion_mnist_labels",
           "load_data_fashion_mnist", "loaders", "num_gpus", "set_figsize", "sgd", "split_batch",
           "train_batch_ch13", "train_ch13", "train_ch6", "try_all_gpus", "try_gpu", "use_svg_display"]  # fmt: skip


def get_fashion_mnist_labels(labels: Any) -> list[str]:
    """The text labels of Fashion-MNIST class indices."""
    return [FASHION_MNIST_CLASSES[int(i)] for i in labels]


def get_dataloader_workers() -> int:
    """Batches are made on the calling thread (the engine does the parallel work): 0 worker processes."""
    return 0


def use_svg_display() -> None:
    """Accepted for the book's code; figures are shown as the notebook shows them."""


def set_figsize(figsize: tuple[float, float] = (3.5, 2.5)) -> None:
    from autopar.d2l._animator import pyplot

    pyplot().rcParams["figure.figsize"] = figsize


def __getattr__(name: str) -> Any:
    if name == "plt":
        from autopar.d2l._animator import pyplot

        return pyplot()
    if name in ("Residual", "resnet18"):
        raise AttributeError(f"autopar.d2l.{name} differs between the book's editions: import it from the edition's "
                             "module, 'from autopar.d2l import torch as d2l' or 'from autopar.d2l import mxnet as d2l'")
    raise AttributeError(f"module 'autopar.d2l' has no attribute {name!r}")
