"""Datasets: the synthetic Fashion-MNIST stand-in, the IDX reader and the minibatch iterator.

Oracles from outside: NumPy's own big-endian encoding of the IDX files this
test writes, torch training a softmax regression for learnability.
"""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from autopar import datasets
from autopar.datasets import Minibatches, fashion_mnist, load_fashion_mnist, read_idx, synthetic_fashion_mnist


@pytest.fixture(scope="module")
def full() -> datasets.ImageDataset:
    return synthetic_fashion_mnist(0)


def test_synthetic_has_fashion_mnists_shape_range_and_balance(full: datasets.ImageDataset) -> None:
    # catches: a wrong count, layout or dtype; unclipped noise; unbalanced labels
    assert full.train_images.shape == (60_000, 1, 28, 28) and full.test_images.shape == (10_000, 1, 28, 28)
    assert full.train_images.dtype == np.float32 and full.train_labels.dtype == np.int64
    assert full.train_images.min() == 0.0 and full.train_images.max() == 1.0
    assert np.array_equal(np.bincount(full.train_labels), [6000] * 10)
    assert np.array_equal(np.bincount(full.test_labels), [1000] * 10)
    assert full.synthetic and "synthetic" in full.name and len(full.classes) == 10


def test_synthetic_is_deterministic_in_its_seed_and_test_differs_from_train() -> None:
    # catches: an unseeded generator; train and test drawn from one stream (test = train's start)
    a, b, c = (synthetic_fashion_mnist(seed, n_train=500, n_test=200) for seed in (3, 3, 4))
    for field in ("train_images", "train_labels", "test_images", "test_labels"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert not np.array_equal(a.train_images, c.train_images)
    assert not np.array_equal(a.test_images, a.train_images[:200])


def test_synthetic_is_learnable_but_not_linearly_easy() -> None:
    """A softmax regression, 300 steps of 128: far above chance (0.1), far from solved.

    catches: labels shuffled apart from their images (accuracy ~0.1); the
    noise and distractors gone (a linear model then reaches ~0.77)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    data = synthetic_fashion_mnist(seed=1, n_train=300 * 128, n_test=2000)
    model = torch.nn.Linear(28 * 28, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in data.train_iter(128):
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(images).flatten(1)), torch.from_numpy(labels))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        predicted = model(torch.from_numpy(data.test_images).flatten(1)).argmax(1).numpy()
    accuracy = (predicted == data.test_labels).mean()
    assert 0.4 < accuracy < 0.7, accuracy


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_synthetic_rejects_bad_sizes(bad: object) -> None:
    with pytest.raises(ValueError, match=r"synthetic_fashion_mnist: n_train=.*expected a whole number >= 0"):
        synthetic_fashion_mnist(0, n_train=bad)  # type: ignore[arg-type]


# --- IDX files ------------------------------------------------------------

_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int8): 0x09, np.dtype(np.int16): 0x0B, np.dtype(np.int32): 0x0C,
          np.dtype(np.float32): 0x0D, np.dtype(np.float64): 0x0E}


def write_idx(path: str | os.PathLike[str], array: np.ndarray, gzipped: bool = False) -> None:
    """The IDX encoding written independently of the reader: header bytes, then big-endian values."""
    header = bytes([0, 0, _CODES[array.dtype], array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    with open(path, "wb") as fh:
        fh.write(gzip.compress(data) if gzipped else data)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
@pytest.mark.parametrize("gzipped", [False, True])
def test_read_idx_round_trips_every_type(tmp_path, dtype, gzipped) -> None:  # type: ignore[no-untyped-def]
    # catches: little-endian decoding, a wrong type table, ignoring gzip, a wrong header length
    array = (np.arange(2 * 3 * 5) * 7 - 40).reshape(2, 3, 5).astype(dtype)
    path = tmp_path / "x-idx3-ubyte"  # the name says nothing of gzip: the content decides
    write_idx(path, array, gzipped)
    got = read_idx(path)
    assert got.dtype == dtype and got.dtype.isnative and np.array_equal(got, array)


@pytest.mark.parametrize("content, message", [
    (b"\x00\x00\x08\x01\x00\x00\x00\x03\x01\x02", "holds 10 bytes; its header .* needs 11"),
    (b"\x00\x00\x08\x03\x00\x00", "ends inside its header"),
    (b"\x00\x00\x07\x01\x00\x00\x00\x00", "does not start with an IDX magic number"),
    (b"P5\n28 28\n255\n", "does not start with an IDX magic number"),
    (b"\x1f\x8bnot really gzip", "starts like gzip but does not decompress"),
])
def test_read_idx_rejects_what_is_not_idx(tmp_path, content, message) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bad"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"read_idx: {path} {message}"):
        read_idx(path)


def _fashion_files(folder: str | os.PathLike[str], n_train: int = 6, n_test: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, n_train, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    os.makedirs(folder, exist_ok=True)
    for i, (name, array) in enumerate(arrays.items()):  # two gzipped, two not, as a mixed download might be
        write_idx(os.path.join(folder, name + (".gz" if i % 2 else "")), array, gzipped=bool(i % 2))
    return arrays


@pytest.mark.parametrize("layout", ["flat", "torchvision"])
def test_load_fashion_mnist_reads_the_four_files(tmp_path, layout) -> None:  # type: ignore[no-untyped-def]
    # catches: a wrong scale or layout, train/test swapped, labels misread, the torchvision folder not searched
    files = _fashion_files(tmp_path if layout == "flat" else tmp_path / "FashionMNIST" / "raw")
    data = load_fashion_mnist(tmp_path)
    assert not data.synthetic and data.classes[0] == "t-shirt" and str(tmp_path) in data.name
    assert data.train_images.shape == (6, 1, 28, 28) and data.train_images.dtype == np.float32
    np.testing.assert_array_equal(data.train_images[:, 0] * 255, files["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(data.test_images[:, 0] * 255, files["t10k-images-idx3-ubyte"])
    assert np.array_equal(data.train_labels, files["train-labels-idx1-ubyte"]) and data.train_labels.dtype == np.int64
    assert np.array_equal(data.test_labels, files["t10k-labels-idx1-ubyte"])
    assert fashion_mnist(str(tmp_path)).name == data.name


def test_load_fashion_mnist_says_which_file_is_missing_and_never_downloads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _fashion_files(tmp_path)
    os.remove(tmp_path / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(FileNotFoundError, match=r"some .* files but no t10k-labels-idx1-ubyte \(or t10k-labels-idx1-ubyte.gz\); .*local files only"):
        load_fashion_mnist(tmp_path)
    with pytest.raises(FileNotFoundError, match="is neither a folder nor an .npz file"):
        load_fashion_mnist(tmp_path / "nowhere")


def test_load_fashion_mnist_checks_labels_against_images(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _fashion_files(tmp_path)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(5, np.uint8))
    with pytest.raises(ValueError, match=r"expected 6 integer labels, one per image"):
        load_fashion_mnist(tmp_path)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.full(6, 10, np.uint8))
    with pytest.raises(ValueError, match=r"has label 10; .*'s are 0\.\.9"):
        load_fashion_mnist(tmp_path)


# --- minibatches ----------------------------------------------------------

def _indexed(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Images whose pixels hold their own row number, and labels equal to it: pairs are checkable."""
    return np.broadcast_to(np.arange(n, dtype=np.float32)[:, None, None, None], (n, 1, 2, 2)).copy(), np.arange(n)


def test_shuffled_epochs_visit_each_sample_once_in_pairs_and_differ() -> None:
    # catches: sampling with replacement; images and labels shuffled apart; the same order every epoch
    images, labels = _indexed(103)
    batches = Minibatches(images, labels, 10, seed=5)
    assert len(batches) == 11
    orders = []
    for _ in range(2):
        seen = []
        for x, y in batches:
            assert np.array_equal(x[:, 0, 0, 0], y)
            seen.append(y)
        assert [len(s) for s in seen] == [10] * 10 + [3]
        order = np.concatenate(seen)
        assert np.array_equal(np.sort(order), labels)
        orders.append(order)
    assert not np.array_equal(orders[0], orders[1]) and not np.array_equal(orders[0], labels)
    again = Minibatches(images, labels, 10, seed=5)
    assert np.array_equal(np.concatenate([y for _, y in again]), orders[0])  # same seed, same first epoch


def test_drop_last_and_in_order_batches() -> None:
    images, labels = _indexed(25)
    dropped = Minibatches(images, labels, 10, drop_last=True)
    assert len(dropped) == 2 and [len(y) for _, y in dropped] == [10, 10]
    ordered = list(Minibatches(images, labels, 10, shuffle=False))
    assert [y.tolist() for _, y in ordered] == [list(range(0, 10)), list(range(10, 20)), list(range(20, 25))]
    assert np.shares_memory(ordered[0][0], images)  # views, no copy


def test_dataset_iterators_follow_d2l() -> None:
    data = synthetic_fashion_mnist(0, n_train=1000, n_test=300)
    train, test = data.train_iter(256), data.test_iter(256)
    assert len(train) == 3 and all(len(y) == 256 for _, y in train)  # drop_last for equal device shards
    assert len(test) == 2 and np.array_equal(np.concatenate([y for _, y in test]), data.test_labels)


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch_size=0), "batch_size=0; expected a whole number >= 1"),
    (dict(batch_size=2.0), "batch_size=2.0; expected a whole number >= 1"),
    (dict(batch_size=50, drop_last=True), "batch_size=50 with drop_last leaves no batch of 10 samples"),
])
def test_minibatches_reject_bad_arguments(kwargs, message) -> None:  # type: ignore[no-untyped-def]
    images, labels = _indexed(10)
    with pytest.raises(ValueError, match=f"Minibatches: {message}"):
        Minibatches(images, labels, **kwargs)
    with pytest.raises(ValueError, match="10 images but 9 labels"):
        Minibatches(images, labels[:9], 2)


def test_datasets_do_not_import_torch() -> None:
    # the training layers' data sits below the array layer: NumPy only
    import subprocess
    import sys

    code = "import autopar.datasets as d, sys; d.synthetic_fashion_mnist(0, 10, 10); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


# --- the layouts readers have, names, sizes, downloads ----------------------

def _write_set(folder, names: dict[str, str], n_train: int = 6, n_test: int = 4, size: int = 28) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    arrays = {"train_images": rng.integers(0, 256, (n_train, size, size), dtype=np.uint8),
              "train_labels": rng.integers(0, 10, n_train, dtype=np.uint8),
              "test_images": rng.integers(0, 256, (n_test, size, size), dtype=np.uint8),
              "test_labels": rng.integers(0, 10, n_test, dtype=np.uint8)}
    os.makedirs(folder, exist_ok=True)
    for role, array in arrays.items():
        write_idx(os.path.join(folder, names[role]), array, gzipped=names[role].endswith(".gz"))
    return arrays


_DASHED = {"train_images": "train-images-idx3-ubyte.gz", "train_labels": "train-labels-idx1-ubyte.gz",
           "test_images": "t10k-images-idx3-ubyte.gz", "test_labels": "t10k-labels-idx1-ubyte.gz"}
_DOTTED = {role: name.replace("-idx", ".idx").removesuffix(".gz") for role, name in _DASHED.items()}


@pytest.mark.parametrize("sub, names, kind", [
    ("MNIST/raw", _DASHED, "MNIST"),                       # torchvision's MNIST
    ("FashionMNIST/raw", _DASHED, "Fashion-MNIST"),        # torchvision's (and d2l's) Fashion-MNIST
    ("digits", _DOTTED, "MNIST-format images"),            # the dotted names, a folder that says nothing
])
def test_load_images_finds_the_layouts_and_names_the_dataset(tmp_path, sub, names, kind) -> None:  # type: ignore[no-untyped-def]
    # catches: a layout not searched, the dotted names not tried, everything called Fashion-MNIST
    root = tmp_path / "data"
    arrays = _write_set(root / sub, names)
    data = datasets.load_images(root if "/" in sub else root / sub)
    assert data.name.startswith(f"{kind} from ") and not data.synthetic
    np.testing.assert_array_equal(data.test_images[:, 0] * 255, arrays["test_images"])
    np.testing.assert_array_equal(data.train_labels, arrays["train_labels"])
    assert data.classes[0] == ("t-shirt" if kind == "Fashion-MNIST" else "0")


def test_load_images_reads_a_keras_npz(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(2)
    x_train, x_test = rng.integers(0, 256, (5, 28, 28), dtype=np.uint8), rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    y_train, y_test = rng.integers(0, 10, 5), rng.integers(0, 10, 3)
    np.savez(tmp_path / "mnist.npz", x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    for path in (tmp_path / "mnist.npz", tmp_path):  # the file, or the folder holding it
        data = datasets.load_images(path)
        assert data.name.startswith("MNIST from ") and data.train_images.shape == (5, 1, 28, 28)
        np.testing.assert_array_equal(data.train_images[:, 0] * 255, x_train)
        np.testing.assert_array_equal(data.test_labels, y_test)
    np.savez(tmp_path / "other.npz", images=x_train)
    with pytest.raises(ValueError, match=r"lacks x_train, y_train, x_test, y_test; .*\(Keras's layout\); it holds images"):
        datasets.load_images(tmp_path / "other.npz")


def test_fashion_mnist_files_pass_over_mnist(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """d2l's ../data often holds torchvision's MNIST/raw beside Fashion-MNIST: load_data_fashion_mnist must not
    return the digits."""
    monkeypatch.chdir(tmp_path)  # no ../data of the machine's
    _write_set(tmp_path / "data" / "MNIST" / "raw", _DASHED)
    _write_set(tmp_path / "digits" / "mnist", _DASHED)  # MNIST in the root itself, named by its folder
    for root in (tmp_path / "data", tmp_path / "digits" / "mnist"):
        with pytest.raises(FileNotFoundError, match="no Fashion-MNIST files under"):
            datasets.fashion_mnist_files(root, download=False)
    arrays = _write_set(tmp_path / "data" / "fashion", _DOTTED, n_train=3)
    data = datasets.fashion_mnist_files(tmp_path / "data", download=False)
    assert data.name.startswith("Fashion-MNIST from ") and data.name.endswith("fashion")
    np.testing.assert_array_equal(data.train_labels, arrays["train_labels"])


def test_official_files_are_named_by_their_checksums(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a folder whose name says nothing: the checksums tell Fashion-MNIST from MNIST
    _write_set(tmp_path / "x", _DASHED)
    sums = {name: datasets._local.md5(str(tmp_path / "x" / name)) for name in _DASHED.values()}
    monkeypatch.setitem(datasets._local.OFFICIAL_MD5, "Fashion-MNIST", sums)
    assert datasets.load_images(tmp_path / "x").name.startswith("Fashion-MNIST from ")


def test_image_size_is_checked_with_a_clear_message(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _write_set(tmp_path / "small", _DASHED, size=14)
    data = datasets.load_images(tmp_path / "small")
    with pytest.raises(ValueError, match=r"images must be 28x28 with 1 channel \(LeNet's input\); these are 1 x 14 x 14"):
        datasets.check_image_shape(data)
    datasets.check_image_shape(datasets.load_images(_write_set(tmp_path / "ok", _DASHED) and tmp_path / "ok"))


@pytest.fixture
def file_server(tmp_path):  # type: ignore[no-untyped-def]
    """An HTTP server on 127.0.0.1 serving tmp_path/served; yields its base URL."""
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join()


def test_download_fetches_checks_and_keeps_the_files(tmp_path, file_server, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    served, url = file_server
    arrays = _write_set(served, _DASHED)
    sums = {name: datasets._local.md5(str(served / name)) for name in _DASHED.values()}
    monkeypatch.setitem(datasets._local.OFFICIAL_MD5, "Fashion-MNIST", sums)
    root = tmp_path / "root"
    # the first mirror refuses (a closed port on loopback): the second serves
    closed = "http://127.0.0.1:9/"
    data = datasets.fashion_mnist_files(root, mirrors=(closed, url))
    assert data.name.startswith("Fashion-MNIST from ") and (root / "FashionMNIST" / "raw").is_dir()
    np.testing.assert_array_equal(data.train_images[:, 0] * 255, arrays["train_images"])
    # on disk now: found without a network
    assert datasets.fashion_mnist_files(root, download=False).name == data.name
    # a corrupted download is refused, with the checksum in the message
    (served / "t10k-labels-idx1-ubyte.gz").write_bytes(b"not the file")
    os.remove(root / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte.gz")
    with pytest.raises(datasets.DownloadError, match=r"t10k-labels-idx1-ubyte.gz\): .*MD5 is .*not the official"):
        datasets.download_fashion_mnist(root, mirrors=(url,))
    assert not (root / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").exists()


def test_no_network_says_what_to_do(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)  # no ../data here
    with pytest.raises(datasets.DownloadError) as info:
        datasets.fashion_mnist_files(tmp_path / "empty", mirrors=("http://127.0.0.1:9/",))
    message = str(info.value)
    assert "could not download Fashion-MNIST (train-images-idx3-ubyte.gz): http://127.0.0.1:9/train-images" in message
    assert "Without a network, copy the four files" in message and "synthetic_fashion_mnist()" in message
    with pytest.raises(FileNotFoundError, match="pass download=True"):
        datasets.fashion_mnist_files(tmp_path / "empty", download=False)


def test_data_root_comes_from_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("AUTOPAR_DATA", "/somewhere/data")
    assert datasets.default_root() == "/somewhere/data"
    monkeypatch.delenv("AUTOPAR_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", "/cache")
    assert datasets.default_root() == os.path.join("/cache", "autopar", "data")
