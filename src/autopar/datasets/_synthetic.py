"""A synthetic, learnable stand-in for Fashion-MNIST, made from a seed in about a second.

Same shape as the real data: 60,000 training and 10,000 test images of
1x28x28 float32 in [0, 1], 10 classes of equal size. How it is made:

1. **Class prototypes.** Five *families* each get a broad shape, a sum of four
   wide Gaussian bumps (like a garment's silhouette); each class adds three
   narrow bumps of its own (its details) to its family's shape, at weights
   0.6 / 0.4, scaled to peak at 1. Classes 0 and 5, 1 and 6, ... share a family
   and differ only in details, as a shirt and a T-shirt do::

       family shape      class detail       prototype
        .:::::.            .      .          .:::::. .
       :#######:   +         .         =    :###.###:
        '#####'        .                     '#####'

2. **A bank of variants.** Each prototype is rendered at every shift of
   -3..3 pixels in x and y and at scales 0.85, 1 and 1.15 (the bumps are
   moved and widened analytically, not resampled): 10 x 147 templates.
3. **Samples.** An image of class ``c`` is ``a * T[c, v] + b * T[d, w] +
   noise``, clipped to [0, 1]: a random variant of its own prototype at
   strength ``a ~ U(0.5, 1)``, a random variant of another class ``d`` at
   ``b ~ U(0, 0.6)`` (a distractor that is sometimes almost as strong), and
   Gaussian pixel noise of standard deviation 0.2.

The test set is drawn from the same distribution with its own random stream.
Shifts, scales and distractors defeat a linear model (softmax regression
plateaus near 60% test accuracy), while LeNet's convolutions learn it
gradually, like the real data: with d2l's loop (batch 256, SGD, ReLU LeNet-5)
about 65% after one epoch, 80% after three, more later; overlapping
strengths keep the best possible accuracy below 100%.
"""

from __future__ import annotations

import numpy as np

from autopar.datasets._dataset import ImageDataset

SIZE = 28
CLASSES = 10
FAMILIES = 5
SHIFTS = tuple(range(-3, 4))
SCALES = (0.85, 1.0, 1.15)
OWN_STRENGTH = (0.5, 1.0)
DISTRACTOR_STRENGTH = (0.0, 0.6)
NOISE_STD = 0.2


def _render(cx: np.ndarray, cy: np.ndarray, sx: np.ndarray, sy: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Images ``(T, SIZE, SIZE)``, each a weighted sum of axis-aligned Gaussian bumps, peak 1.

    Every argument is ``(T, bumps)``: centres, widths and weights of each template's bumps."""
    grid = np.arange(SIZE, dtype=np.float64)
    across = np.exp(-0.5 * ((grid - cx[..., None]) / sx[..., None]) ** 2)
    down = np.exp(-0.5 * ((grid - cy[..., None]) / sy[..., None]) ** 2)
    images = np.einsum("tb,tby,tbx->tyx", weight, down, across)
    return images / images.max(axis=(1, 2), keepdims=True)


def _template_bank(rng: np.random.Generator) -> np.ndarray:
    """``(CLASSES * variants, SIZE * SIZE)`` float32: row ``c * variants + v`` is variant ``v`` of class ``c``."""
    family = np.arange(CLASSES) % FAMILIES

    def bumps(count: int, n: int, centre: tuple[float, float], width: tuple[float, float], share: float) -> list[np.ndarray]:
        cx, cy = rng.uniform(*centre, (n, count)), rng.uniform(*centre, (n, count))
        sx, sy = rng.uniform(*width, (n, count)), rng.uniform(*width, (n, count))
        weight = rng.uniform(0.5, 1.0, (n, count))
        return [cx, cy, sx, sy, weight / weight.sum(axis=1, keepdims=True) * share]

    shape = [a[family] for a in bumps(4, FAMILIES, (7.0, 21.0), (2.5, 5.5), 0.6)]
    detail = bumps(3, CLASSES, (6.0, 22.0), (1.2, 2.5), 0.4)
    cx, cy, sx, sy, weight = (np.concatenate(pair, axis=1) for pair in zip(shape, detail))

    dx, dy, scale = (np.array(v, dtype=np.float64).reshape(-1)
                     for v in np.meshgrid(SHIFTS, SHIFTS, SCALES, indexing="ij"))
    middle = (SIZE - 1) / 2
    # (class, variant, bump): each bump moved by the shift and spread from the middle by the scale
    vcx = middle + (cx[:, None] - middle) * scale[:, None] + dx[:, None]
    vcy = middle + (cy[:, None] - middle) * scale[:, None] + dy[:, None]
    vsx, vsy = sx[:, None] * scale[:, None], sy[:, None] * scale[:, None]
    vweight = np.broadcast_to(weight[:, None], vcx.shape)
    flat = [a.reshape(-1, a.shape[-1]) for a in (vcx, vcy, vsx, vsy, vweight)]
    return _render(*flat).reshape(-1, SIZE * SIZE).astype(np.float32)


def _samples(bank: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    variants = len(bank) // CLASSES
    labels = rng.permutation(np.arange(n) % CLASSES)
    other = (labels + rng.integers(1, CLASSES, n)) % CLASSES
    images = np.take(bank, labels * variants + rng.integers(0, variants, n), axis=0)
    images *= rng.uniform(*OWN_STRENGTH, (n, 1)).astype(np.float32)
    distractor = np.take(bank, other * variants + rng.integers(0, variants, n), axis=0)
    distractor *= rng.uniform(*DISTRACTOR_STRENGTH, (n, 1)).astype(np.float32)
    images += distractor
    del distractor
    noise = rng.standard_normal((n, SIZE * SIZE), dtype=np.float32)
    noise *= np.float32(NOISE_STD)
    images += noise
    np.clip(images, 0.0, 1.0, out=images)
    return images.reshape(n, 1, SIZE, SIZE), labels.astype(np.int64)


def synthetic_fashion_mnist(seed: int = 0, n_train: int = 60_000, n_test: int = 10_000) -> ImageDataset:
    """A learnable dataset of Fashion-MNIST's shape (see the module docstring), the same for the same arguments."""
    for name, value in (("seed", seed), ("n_train", n_train), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"synthetic_fashion_mnist: {name}={value!r}; expected a whole number >= 0")
    prototypes, train, test = np.random.SeedSequence(int(seed)).spawn(3)
    bank = _template_bank(np.random.default_rng(prototypes))
    train_images, train_labels = _samples(bank, int(n_train), np.random.default_rng(train))
    test_images, test_labels = _samples(bank, int(n_test), np.random.default_rng(test))
    return ImageDataset(
        name=f"synthetic Fashion-MNIST-shaped data (seed {seed})",
        train_images=train_images,
        train_labels=train_labels,
        test_images=test_images,
        test_labels=test_labels,
        classes=tuple(f"class {i}" for i in range(CLASSES)),
        synthetic=True,
    )
