"""Image classification data for training: Fashion-MNIST from disk, or a synthetic stand-in.

Everything here is NumPy only: no torch, no engine, no arrays. It sits at the
bottom of the import graph, next to ``errors`` and ``_config``, so that the
training layers above it (``autograd``, ``nn``, ``parallel``, ``autopar
train``) and the PyTorch baselines in ``autopar.benchmarks`` read the very
same batches; whoever trains turns a batch into tensors or autopar arrays (and
splits it across devices) itself.

- :func:`synthetic_fashion_mnist` makes a learnable dataset of Fashion-MNIST's
  shape (60,000 + 10,000 images, 1x28x28 float32 in [0, 1], 10 balanced
  classes) from a seed, in about a second. It is for machines without the real
  data: nothing is ever downloaded.
- :func:`load_fashion_mnist` reads the real one from a local folder holding the
  four ``*-idx?-ubyte`` files (gzipped or not) as torchvision and d2l download
  them; :func:`read_idx` reads any IDX file.
- :func:`fashion_mnist` is the one entry point a command needs: the real data
  from ``path`` when given, else the synthetic set.
- :class:`Minibatches` iterates over shuffled minibatches, a new reproducible
  permutation each epoch, and knows its length (for progress bars).
"""

from __future__ import annotations

from autopar.datasets._batches import Minibatches
from autopar.datasets._dataset import FASHION_MNIST_CLASSES, ImageDataset
from autopar.datasets._idx import load_fashion_mnist, read_idx
from autopar.datasets._synthetic import synthetic_fashion_mnist

__all__ = [
    "FASHION_MNIST_CLASSES",
    "ImageDataset",
    "Minibatches",
    "fashion_mnist",
    "load_fashion_mnist",
    "read_idx",
    "synthetic_fashion_mnist",
]


def fashion_mnist(path: str | None = None, seed: int = 0) -> ImageDataset:
    """The real Fashion-MNIST from the folder ``path``, or, without one, the synthetic set made from ``seed``.

    ``ImageDataset.synthetic`` and ``ImageDataset.name`` tell which one it is,
    so a command can say so in its output.
    """
    if path is not None:
        return load_fashion_mnist(path)
    return synthetic_fashion_mnist(seed)
