"""The dataset record shared by the real and the synthetic Fashion-MNIST."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autopar.datasets._batches import Minibatches

FASHION_MNIST_CLASSES = (
    "t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot",
)


@dataclass(frozen=True, eq=False)
class ImageDataset:
    """Train and test images ``(N, C, H, W)`` float32 in [0, 1], labels ``(N,)`` int64 in ``[0, len(classes))``."""

    name: str
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    classes: tuple[str, ...]
    synthetic: bool

    def __post_init__(self) -> None:
        for split, images, labels in (("train", self.train_images, self.train_labels),
                                      ("test", self.test_images, self.test_labels)):
            if images.ndim != 4 or images.dtype != np.float32:
                raise ValueError(f"ImageDataset {split}_images: {images.dtype} of shape {images.shape}; "
                                 "expected float32 of shape (N, C, H, W)")
            if labels.shape != (len(images),) or labels.dtype != np.int64:
                raise ValueError(f"ImageDataset {split}_labels: {labels.dtype} of shape {labels.shape}; "
                                 f"expected int64 of shape ({len(images)},), one label per image")

    def train_iter(self, batch_size: int, seed: int = 0, drop_last: bool = True) -> Minibatches:
        """Shuffled training minibatches, a new permutation each epoch (d2l's ``train_iter``)."""
        return Minibatches(self.train_images, self.train_labels, batch_size, shuffle=True, seed=seed,
                           drop_last=drop_last)

    def test_iter(self, batch_size: int) -> Minibatches:
        """The test set in order, the last batch possibly short (d2l's ``test_iter``)."""
        return Minibatches(self.test_images, self.test_labels, batch_size, shuffle=False)

    def __repr__(self) -> str:
        return (f"ImageDataset({self.name!r}, train={len(self.train_images)}, test={len(self.test_images)}, "
                f"image={tuple(self.train_images.shape[1:])}, classes={len(self.classes)})")
