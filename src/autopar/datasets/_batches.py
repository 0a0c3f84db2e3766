"""Shuffled minibatches of NumPy arrays."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class Minibatches:
    """``for images, labels in Minibatches(x, y, 256): ...`` -- one epoch per ``iter()``.

    With ``shuffle`` (the default), epoch *k* (the *k*-th ``iter()``, from 0)
    visits the rows in the order of ``numpy.random.default_rng([seed, k])``'s
    permutation: every epoch differs, and the same seed gives the same epochs
    in any process. Without it, rows come in order and batches are views.
    ``drop_last`` leaves out a final batch shorter than ``batch_size`` (data
    parallelism wants equal shards); ``len()`` counts the batches an epoch
    yields. Batches of a shuffled epoch are copies.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, batch_size: int, *, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"Minibatches: batch_size={batch_size!r}; expected a whole number >= 1")
        if len(images) != len(labels):
            raise ValueError(f"Minibatches: {len(images)} images but {len(labels)} labels; "
                             "pass one label per image")
        if drop_last and len(images) < batch_size:
            raise ValueError(f"Minibatches: batch_size={batch_size} with drop_last leaves no batch of "
                             f"{len(images)} samples; use a smaller batch or drop_last=False")
        self.images = images
        self.labels = labels
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.epochs_started = 0

    def __len__(self) -> int:
        n = len(self.images)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        epoch = self.epochs_started
        self.epochs_started += 1
        return self._epoch(epoch)

    def _epoch(self, epoch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        n, size = len(self.images), self.batch_size
        order = np.random.default_rng([self.seed, epoch]).permutation(n) if self.shuffle else None
        for start in range(0, min(len(self) * size, n), size):
            if order is None:
                yield self.images[start:start + size], self.labels[start:start + size]
            else:
                rows = order[start:start + size]
                yield np.take(self.images, rows, axis=0), np.take(self.labels, rows, axis=0)

    def __repr__(self) -> str:
        return (f"Minibatches({len(self.images)} samples, batch_size={self.batch_size}, {len(self)} batches, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last})")
