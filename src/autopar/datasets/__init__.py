"""Image classification data for training: (Fashion-)MNIST from disk or the network, or a synthetic stand-in.

Everything here is NumPy only: no torch, no engine, no arrays. It sits at the
bottom of the import graph, next to ``errors`` and ``_config``, so that the
training layers above it (``autograd``, ``nn``, ``parallel``, ``autopar
train``, ``autopar.d2l``'s loaders, which turn batches into autopar arrays)
and the PyTorch baselines in ``autopar.benchmarks`` read the very same
batches.

- :func:`synthetic_fashion_mnist` makes a learnable dataset of Fashion-MNIST's
  shape (60,000 + 10,000 images, 1x28x28 float32 in [0, 1], 10 balanced
  classes) from a seed, in about a second, for machines without the real data.
- :func:`load_images` reads MNIST or Fashion-MNIST from files a reader
  already has, in the layouts they come in (IDX files as distributed or in
  torchvision's ``FashionMNIST/raw`` and ``MNIST/raw``, or a Keras-style
  ``.npz``), and names the dataset from what it is (``_local.py``);
  :func:`read_idx` reads any IDX file.
- :func:`fashion_mnist_files` finds the real Fashion-MNIST on disk or
  downloads it, checked by checksum, with a clear error without a network
  (``_download.py``).
- :func:`fashion_mnist` is what ``autopar train`` calls: the files at
  ``path`` when given, else the synthetic set.
- :class:`Minibatches` iterates over shuffled minibatches, a new reproducible
  permutation each epoch, and knows its length (for progress bars).
"""

from __future__ import annotations

from autopar.datasets._batches import Minibatches
from autopar.datasets._dataset import FASHION_MNIST_CLASSES, ImageDataset
from autopar.datasets._download import DownloadError, default_root, download_fashion_mnist, fashion_mnist_files
from autopar.datasets._idx import read_idx
from autopar.datasets._local import check_image_shape, load_fashion_mnist, load_images
from autopar.datasets._synthetic import synthetic_fashion_mnist

__all__ = [
    "DownloadError",
    "FASHION_MNIST_CLASSES",
    "ImageDataset",
    "Minibatches",
    "check_image_shape",
    "default_root",
    "download_fashion_mnist",
    "fashion_mnist",
    "fashion_mnist_files",
    "load_fashion_mnist",
    "load_images",
    "read_idx",
    "synthetic_fashion_mnist",
]


def fashion_mnist(path: str | None = None, seed: int = 0) -> ImageDataset:
    """The (Fashion-)MNIST files at ``path`` (:func:`load_images`), or, without one, the synthetic set made
    from ``seed``. ``ImageDataset.synthetic`` and ``ImageDataset.name`` tell which one it is."""
    if path is not None:
        return load_images(path)
    return synthetic_fashion_mnist(seed)
