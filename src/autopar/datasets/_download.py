"""Fashion-MNIST from the network, when there is one: the four official files, checked by checksum.

:func:`fashion_mnist_files` is what ``d2l.load_data_fashion_mnist`` calls:
the files already on disk (under ``root``, then d2l's ``../data``) if any,
else a download into ``root/FashionMNIST/raw`` (torchvision's layout, so
torchvision and d2l find them there too). Each file comes from the first
mirror that answers and is kept only if its MD5 is the official one; a
file already there with the right checksum is not fetched again. Without a
network the error says where to put the files by hand, and that
:func:`~autopar.datasets.synthetic_fashion_mnist` needs none.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request

from autopar.datasets._dataset import ImageDataset
from autopar.datasets._local import FASHION_SUBFOLDERS, OFFICIAL_MD5, dataset_kind, find_idx, load_images, md5

MIRRORS = (
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
    "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
)
D2L_ROOT = os.path.join("..", "data")


class DownloadError(OSError):
    """A dataset could not be fetched: the message says from where, why, and what to do instead."""


def default_root() -> str:
    """``$AUTOPAR_DATA``, else ``~/.cache/autopar/data`` (``$XDG_CACHE_HOME`` when set)."""
    from autopar import _config

    return _config.data_root()


def download_fashion_mnist(root: str | os.PathLike[str] | None = None, mirrors: tuple[str, ...] | None = None,
                           timeout: float = 60.0) -> str:  # fmt: skip
    """Fetch the four Fashion-MNIST files into ``root/FashionMNIST/raw``; returns that folder."""
    folder = os.path.join(os.fspath(root) if root is not None else default_root(), "FashionMNIST", "raw")
    os.makedirs(folder, exist_ok=True)
    for name, digest in OFFICIAL_MD5["Fashion-MNIST"].items():
        path = os.path.join(folder, name)
        if os.path.isfile(path) and md5(path) == digest:
            continue
        failures = []
        for mirror in mirrors if mirrors is not None else MIRRORS:
            url = mirror.rstrip("/") + "/" + name
            try:
                _fetch(url, path, digest, timeout)
                break
            except (urllib.error.URLError, OSError, ValueError) as error:
                reason = getattr(error, "reason", None) or error
                failures.append(f"{url}: {reason}")
        else:
            raise DownloadError(
                f"could not download Fashion-MNIST ({name}): {'; '.join(failures)}. Without a network, copy the "
                f"four files ({', '.join(OFFICIAL_MD5['Fashion-MNIST'])}) into {folder}, or pass root= a folder that "
                "holds them (torchvision's FashionMNIST/raw layout is found too); "
                "autopar.datasets.synthetic_fashion_mnist() makes data of the same shape without any file"
            )
    return folder


def _fetch(url: str, path: str, digest: str, timeout: float) -> None:
    partial = path + ".part"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(partial, "wb") as out:  # noqa: S310
            while chunk := response.read(1 << 20):
                out.write(chunk)
        got = md5(partial)
        if got != digest:
            raise ValueError(f"the file's MD5 is {got}, not the official {digest} (a broken or different file)")
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def fashion_mnist_files(root: str | os.PathLike[str] | None = None, download: bool = True,
                        mirrors: tuple[str, ...] | None = None) -> ImageDataset:  # fmt: skip
    """The real Fashion-MNIST: from ``root`` (default :func:`default_root`) or d2l's ``../data`` when the
    files are there, else downloaded into ``root`` (``download=False``: a FileNotFoundError instead)."""
    where = os.fspath(root) if root is not None else default_root()
    for candidate in (where, D2L_ROOT):
        # torchvision's MNIST/raw beside FashionMNIST/raw (d2l's ../data often has both) is not what is asked for
        found = find_idx(candidate, FASHION_SUBFOLDERS) if os.path.isdir(candidate) else None
        if found is not None and dataset_kind(found[0], list(found[1].values())) != "MNIST":
            return load_images(found[0])
    if not download:
        raise FileNotFoundError(f"no Fashion-MNIST files under {where} or {D2L_ROOT}; pass download=True to fetch "
                                f"them, or copy them into {os.path.join(where, 'FashionMNIST', 'raw')}")
    return load_images(download_fashion_mnist(where, mirrors))
