"""The IDX files of (Fashion-)MNIST, read from a local folder: never downloaded.

An IDX file is a 4-byte magic number -- two zero bytes, a type code, the
number of dimensions -- then each dimension as a big-endian uint32, then the
values, big-endian, in C order. Fashion-MNIST ships four of them, usually
gzipped::

    train-images-idx3-ubyte   60000 x 28 x 28 uint8 (magic 0x00000803)
    train-labels-idx1-ubyte   60000 uint8           (magic 0x00000801)
    t10k-images-idx3-ubyte    10000 x 28 x 28 uint8
    t10k-labels-idx1-ubyte    10000 uint8

torchvision (and so d2l, ``FashionMNIST(root="../data")``) keeps them in
``ROOT/FashionMNIST/raw/``; :func:`load_fashion_mnist` accepts that root, the
``raw`` folder itself, or any folder holding the four files.
"""

from __future__ import annotations

import gzip
import os

import numpy as np

from autopar.datasets._dataset import FASHION_MNIST_CLASSES, ImageDataset

# IDX type codes (the third magic byte) and the big-endian dtypes they name.
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_GZIP_MAGIC = b"\x1f\x8b"
_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """The array in the IDX file ``path`` (gzipped or not, whatever its name), in native byte order."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise ValueError(f"read_idx: {path} starts like gzip but does not decompress ({error})") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(f"read_idx: {path} does not start with an IDX magic number (0x00 0x00, a type code "
                         f"in {sorted(hex(t) for t in _IDX_TYPES)}, the number of dimensions); got {data[:4]!r}")
    dtype, ndim = np.dtype(_IDX_TYPES[data[2]]), data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"read_idx: {path} ends inside its header ({len(data)} bytes for {ndim} dimensions)")
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"read_idx: {path} holds {len(data)} bytes; its header (shape {shape}, {dtype.name}) "
                         f"needs {expected}: the file is truncated or not IDX")
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def _find(folder: str, name: str) -> str:
    for where in (folder, os.path.join(folder, "FashionMNIST", "raw")):
        for candidate in (name, name + ".gz"):
            path = os.path.join(where, candidate)
            if os.path.isfile(path):
                return path
    raise FileNotFoundError(
        f"load_fashion_mnist: no {name} (or {name}.gz) in {folder} or {os.path.join(folder, 'FashionMNIST', 'raw')}; "
        f"put the four Fashion-MNIST files ({', '.join(_FILES.values())}) there, as torchvision and d2l "
        "download them (autopar never downloads), or train on the synthetic set"
    )


def _images(path: str) -> np.ndarray:
    raw = read_idx(path)
    if raw.ndim != 3 or raw.dtype != np.uint8:
        raise ValueError(f"load_fashion_mnist: {path} holds {raw.dtype} of shape {raw.shape}; "
                         "expected uint8 images of shape (N, H, W)")
    return (raw.astype(np.float32) / np.float32(255.0))[:, None]


def _labels(path: str, count: int) -> np.ndarray:
    raw = read_idx(path)
    if raw.ndim != 1 or raw.dtype != np.uint8 or len(raw) != count:
        raise ValueError(f"load_fashion_mnist: {path} holds {raw.dtype} of shape {raw.shape}; "
                         f"expected {count} uint8 labels, one per image")
    if raw.size and raw.max() >= len(FASHION_MNIST_CLASSES):
        raise ValueError(f"load_fashion_mnist: {path} has label {raw.max()}; "
                         f"Fashion-MNIST's are 0..{len(FASHION_MNIST_CLASSES) - 1}")
    return raw.astype(np.int64)


def load_fashion_mnist(path: str | os.PathLike[str]) -> ImageDataset:
    """Fashion-MNIST from the local folder ``path`` (see the module docstring for the layouts)."""
    folder = os.fspath(path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"load_fashion_mnist: {folder} is not a folder; "
                                "pass the folder that holds the Fashion-MNIST files")
    files = {key: _find(folder, name) for key, name in _FILES.items()}
    train_images, test_images = _images(files["train_images"]), _images(files["test_images"])
    return ImageDataset(
        name=f"Fashion-MNIST from {folder}",
        train_images=train_images,
        train_labels=_labels(files["train_labels"], len(train_images)),
        test_images=test_images,
        test_labels=_labels(files["test_labels"], len(test_images)),
        classes=FASHION_MNIST_CLASSES,
        synthetic=False,
    )
