"""``load_data_fashion_mnist``: d2l's loaders, yielding autopar arrays.

Batches are autopar arrays on ``cpu(0)`` (images float32 ``(B, 1, H, W)`` in
[0, 1], labels int64), so the book's ``X.to(device)``/``X.as_in_ctx(ctx)``,
``split_and_load`` and ``nn.parallel.scatter`` take them as they are. The
training iterator is reshuffled every epoch (a new permutation from its
seed each time it is iterated) and keeps the last, shorter batch, as d2l's
``DataLoader(shuffle=True)``; ``resize`` rescales each batch (bilinear, as
torchvision's ``Resize`` on tensors) when it is made, not the whole set.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from autopar.arrays._array import NDArray
from autopar.datasets import ImageDataset, Minibatches, fashion_mnist_files


def _size(resize: Any) -> tuple[int, int] | None:
    if resize is None:
        return None
    if isinstance(resize, int) and not isinstance(resize, bool) and resize > 0:
        return resize, resize
    if isinstance(resize, (tuple, list)) and len(resize) == 2 and all(isinstance(r, int) and r > 0 for r in resize):
        return int(resize[0]), int(resize[1])
    raise ValueError(f"load_data_fashion_mnist: resize={resize!r}; expected a size in pixels (an int, or (h, w))")


class DataLoader:
    """Batches of a dataset as autopar arrays: ``for X, y in loader``; ``len(loader)`` batches an epoch."""

    def __init__(self, images: Any, labels: Any, batch_size: int, shuffle: bool = False, resize: Any = None,
                 seed: int = 0, drop_last: bool = False) -> None:  # fmt: skip
        self._batches = Minibatches(images, labels, batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)
        self._size = _size(resize)
        self.batch_size = batch_size

    def __len__(self) -> int:
        return len(self._batches)

    def __iter__(self) -> Iterator[tuple[NDArray, NDArray]]:
        from autopar.arrays._creation import asarray

        for images, labels in self._batches:
            if self._size is not None:
                images = _resized(images, self._size)
            yield asarray(images), asarray(labels)

    def __repr__(self) -> str:
        return f"DataLoader({len(self._batches.images)} samples, batch_size={self.batch_size}, {len(self)} batches)"


def _resized(images: Any, size: tuple[int, int]) -> Any:
    import torch

    batch = torch.from_numpy(images)
    out = torch.nn.functional.interpolate(batch, size=size, mode="bilinear", align_corners=False, antialias=True)
    return out.clamp_(0.0, 1.0).numpy()


def load_data_fashion_mnist(batch_size: int, resize: Any = None, root: str | None = None, *, download: bool = True,
                            seed: int = 0) -> tuple[DataLoader, DataLoader]:  # fmt: skip
    """d2l's ``(train_iter, test_iter)`` of Fashion-MNIST: the files under ``root`` (default
    ``$AUTOPAR_DATA`` or ``~/.cache/autopar/data``; d2l's ``../data`` is looked in too), downloaded
    there when missing and the network allows (``autopar.datasets.fashion_mnist_files``)."""
    return loaders(fashion_mnist_files(root, download=download), batch_size, resize, seed)


def loaders(data: ImageDataset, batch_size: int, resize: Any = None, seed: int = 0) -> tuple[DataLoader, DataLoader]:
    """``(train_iter, test_iter)`` over any ``ImageDataset`` (``autopar.datasets.synthetic_fashion_mnist()``...)."""
    return (DataLoader(data.train_images, data.train_labels, batch_size, shuffle=True, resize=resize, seed=seed),
            DataLoader(data.test_images, data.test_labels, batch_size, shuffle=False, resize=resize))  # fmt: skip
