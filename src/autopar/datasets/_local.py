"""(Fashion-)MNIST from files a reader already has, in the layouts they come in.

:func:`load_images` takes a folder or a file and finds, in this order:

- a ``.npz`` file (the path itself, or ``mnist.npz``/``fashion_mnist.npz``/
  ``fashion-mnist.npz`` in the folder) holding ``x_train``, ``y_train``,
  ``x_test``, ``y_test`` (Keras's layout: uint8 images ``(N, 28, 28)``);
- the four IDX files, named ``train-images-idx3-ubyte`` (as distributed) or
  ``train-images.idx3-ubyte`` (as some unpackers name them), gzipped or not,
  in the folder itself, in torchvision's ``FashionMNIST/raw`` or
  ``MNIST/raw`` under it (d2l's ``../data`` is such a root), or in its
  ``fashion`` subfolder (the Fashion-MNIST repository's ``data/fashion``).

The dataset is named from what it is: the official files are recognised by
their checksums; otherwise the folder names tell (``FashionMNIST``,
``fashion``, ``MNIST``); otherwise it is "MNIST-format images". Fashion-MNIST
gets its class names, MNIST the digits.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from autopar.datasets._dataset import FASHION_MNIST_CLASSES, ImageDataset
from autopar.datasets._idx import read_idx

# the four files, by role: (the distributed name, the name with a dot some unpackers use)
FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
# MD5 of the official gzipped files (as torchvision checks them)
OFFICIAL_MD5 = {
    "Fashion-MNIST": {
        "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
        "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
        "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
        "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
    },
    "MNIST": {
        "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
        "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
        "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
        "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
    },
}
DIGITS = tuple(str(i) for i in range(10))
_SUBFOLDERS = ("", os.path.join("FashionMNIST", "raw"), os.path.join("MNIST", "raw"), "fashion")
FASHION_SUBFOLDERS = tuple(s for s in _SUBFOLDERS if s != os.path.join("MNIST", "raw"))
_NPZ = ("fashion_mnist.npz", "fashion-mnist.npz", "mnist.npz")


def md5(path: str) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _idx_file(folder: str, name: str) -> str | None:
    dotted = name.replace("-idx", ".idx")  # train-images.idx3-ubyte
    for candidate in (name, name + ".gz", dotted, dotted + ".gz"):
        path = os.path.join(folder, candidate)
        if os.path.isfile(path):
            return path
    return None


def find_idx(root: str, subfolders: tuple[str, ...] = _SUBFOLDERS) -> tuple[str, dict[str, str]] | None:
    """The folder under ``root`` (itself, or one of ``subfolders``) holding all four files, and their paths
    by role; None when none does."""
    for sub in subfolders:
        folder = os.path.join(root, sub) if sub else root
        found = {role: _idx_file(folder, name) for role, name in FILES.items()}
        if all(found.values()):
            return folder, {role: path for role, path in found.items() if path is not None}
    return None


def _partly_there(root: str) -> tuple[str, list[str]] | None:
    """The folder under ``root`` with some but not all four files, and the names it lacks."""
    for sub in _SUBFOLDERS:
        folder = os.path.join(root, sub) if sub else root
        missing = [name for name in FILES.values() if _idx_file(folder, name) is None]
        if 0 < len(missing) < len(FILES):
            return folder, missing
    return None


def dataset_kind(folder: str, files: list[str]) -> str | None:
    """"Fashion-MNIST", "MNIST" or None, from the official checksums, else from the folder's names."""
    by_name = {os.path.basename(f): f for f in files}
    for kind, sums in OFFICIAL_MD5.items():
        if all(name in by_name and md5(by_name[name]) == digest for name, digest in sums.items()):
            return kind
    words = os.path.abspath(folder).lower().replace("-", "").replace("_", "").split(os.sep)[-2:]
    if any("fashion" in w for w in words):
        return "Fashion-MNIST"
    if any("mnist" in w for w in words):
        return "MNIST"
    return None


def _images(path: str, raw: np.ndarray) -> np.ndarray:
    if raw.ndim != 3 or raw.dtype != np.uint8:
        raise ValueError(f"load_images: {path} holds {raw.dtype} of shape {raw.shape}; "
                         "expected uint8 images of shape (N, H, W)")
    return (raw.astype(np.float32) / np.float32(255.0))[:, None]


def _labels(path: str, raw: np.ndarray, count: int, classes: int, kind: str) -> np.ndarray:
    if raw.ndim != 1 or len(raw) != count or not np.issubdtype(raw.dtype, np.integer):
        raise ValueError(f"load_images: {path} holds {raw.dtype} of shape {raw.shape}; "
                         f"expected {count} integer labels, one per image")
    if raw.size and (raw.min() < 0 or raw.max() >= classes):
        raise ValueError(f"load_images: {path} has label {raw.max() if raw.max() >= classes else raw.min()}; "
                         f"{kind}'s are 0..{classes - 1}")
    return raw.astype(np.int64)


def _dataset(where: str, kind: str | None, arrays: dict[str, np.ndarray], paths: dict[str, str]) -> ImageDataset:
    classes = FASHION_MNIST_CLASSES if kind == "Fashion-MNIST" else DIGITS
    label = kind or "MNIST-format images"
    train = _images(paths["train_images"], arrays["train_images"])
    test = _images(paths["test_images"], arrays["test_images"])
    return ImageDataset(
        name=f"{label} from {where}",
        train_images=train,
        train_labels=_labels(paths["train_labels"], arrays["train_labels"], len(train), len(classes), label),
        test_images=test,
        test_labels=_labels(paths["test_labels"], arrays["test_labels"], len(test), len(classes), label),
        classes=classes,
        synthetic=False,
    )


def _npz(path: str) -> ImageDataset:
    keys = {"train_images": "x_train", "train_labels": "y_train", "test_images": "x_test", "test_labels": "y_test"}
    with np.load(path, allow_pickle=False) as archive:
        missing = [k for k in keys.values() if k not in archive.files]
        if missing:
            raise ValueError(f"load_images: {path} lacks {', '.join(missing)}; an .npz needs x_train, y_train, "
                             f"x_test and y_test (Keras's layout); it holds {', '.join(archive.files) or 'nothing'}")
        arrays = {role: archive[key] for role, key in keys.items()}
    name = os.path.basename(path).lower().replace("-", "").replace("_", "")
    kind = "Fashion-MNIST" if "fashion" in name else "MNIST" if "mnist" in name else dataset_kind(os.path.dirname(path), [])
    return _dataset(path, kind, arrays, {role: f"{path}[{key}]" for role, key in keys.items()})


def load_images(path: str | os.PathLike[str]) -> ImageDataset:
    """MNIST or Fashion-MNIST from ``path`` (a folder or an ``.npz`` file; the layouts: module docstring)."""
    where = os.fspath(path)
    if os.path.isfile(where) and where.endswith(".npz"):
        return _npz(where)
    if not os.path.isdir(where):
        raise FileNotFoundError(f"load_images: {where} is neither a folder nor an .npz file; pass the folder that "
                                "holds the (Fashion-)MNIST files, or an .npz with x_train, y_train, x_test, y_test")
    for name in _NPZ:
        if os.path.isfile(os.path.join(where, name)):
            return _npz(os.path.join(where, name))
    found = find_idx(where)
    if found is None:
        partial = _partly_there(where)
        if partial is not None:
            folder, missing = partial
            raise FileNotFoundError(f"load_images: {folder} holds some (Fashion-)MNIST files but no "
                                    f"{' and no '.join(f'{m} (or {m}.gz)' for m in missing)}; add the missing "
                                    "file(s) (this loader reads local files only)")
        tried = ", ".join(os.path.join(where, s) if s else where for s in _SUBFOLDERS)
        raise FileNotFoundError(
            f"load_images: no (Fashion-)MNIST files in {tried}: expected the four IDX files "
            f"({', '.join(FILES.values())}, gzipped or not, or named like train-images.idx3-ubyte) or an .npz "
            f"({', '.join(_NPZ)}) with x_train, y_train, x_test, y_test"
        )
    folder, paths = found
    arrays = {role: read_idx(p) for role, p in paths.items()}
    return _dataset(folder, dataset_kind(folder, list(paths.values())), arrays, paths)


def load_fashion_mnist(path: str | os.PathLike[str]) -> ImageDataset:
    """:func:`load_images`, kept under its first name."""
    return load_images(path)


def check_image_shape(data: ImageDataset, shape: tuple[int, int, int] = (1, 28, 28), what: str = "LeNet") -> None:
    """Raise a clear ValueError when ``data``'s images are not ``shape`` (what ``what`` takes)."""
    found = tuple(data.train_images.shape[1:])
    if found != shape or tuple(data.test_images.shape[1:]) != shape:
        c, h, w = shape
        raise ValueError(f"{data.name}: images must be {h}x{w} with {c} channel{'s' if c != 1 else ''} ({what}'s "
                         f"input); these are {' x '.join(map(str, found))} (channels x height x width)")
