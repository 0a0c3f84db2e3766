"""autopar.d2l's helpers: loaders of autopar arrays, metrics, the Animator, the training functions."""

from __future__ import annotations

import io
import os
import struct
import sys
from collections.abc import Iterator

import numpy as np
import pytest

import autopar as ap
from autopar import d2l, gluon, nn
from autopar.d2l import mxnet as d2l_mx
from autopar.d2l import torch as d2l_pt
from autopar.datasets import ImageDataset, synthetic_fashion_mnist

sys.path.insert(0, os.path.dirname(__file__))
import _d2l_oracle as oracle  # noqa: E402


def easy(n_train: int, n_test: int) -> ImageDataset:
    """Class c lights up row band c of the image, over noise: learnable in a few steps."""
    rng = np.random.default_rng(0)

    def make(n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = np.arange(n) % 10
        images = rng.random((n, 1, 28, 28), dtype=np.float32) * 0.3
        for i, c in enumerate(labels):
            images[i, 0, 2 * c + 4: 2 * c + 6] = 1.0
        return images, labels.astype(np.int64)

    (a, b), (c, d) = make(n_train), make(n_test)
    return ImageDataset("easy", a, b, c, d, tuple(map(str, range(10))), True)


@pytest.fixture(scope="module")
def tiny() -> tuple[d2l.DataLoader, d2l.DataLoader]:
    return d2l.loaders(easy(40, 20), batch_size=8)


@pytest.fixture
def two_devices() -> Iterator[list[ap.Device]]:
    with oracle.two_cpu_devices() as devices:
        yield devices


def test_loaders_yield_autopar_arrays_reshuffled_each_epoch(tiny: tuple[d2l.DataLoader, d2l.DataLoader]) -> None:
    train_iter, test_iter = tiny
    X, y = next(iter(train_iter))
    assert type(X) is ap.NDArray and X.shape == (8, 1, 28, 28) and X.dtype == ap.float32 and y.dtype == ap.int64
    assert X.to(ap.cpu()) is X and X.as_in_ctx(ap.cpu()).shape == X.shape  # the book's moves work
    assert len(train_iter) == 5 and len(test_iter) == 3  # the last test batch is short (20 = 8 + 8 + 4)
    first, second = ([y.tolist() for _, y in train_iter] for _ in range(2))
    assert first != second and sorted(sum(first, [])) == sorted(sum(second, []))
    assert [y.shape[0] for _, y in test_iter] == [8, 8, 4]


def test_resize_rescales_each_batch() -> None:
    train_iter, _ = d2l.loaders(synthetic_fashion_mnist(0, n_train=4, n_test=4), 4, resize=56)
    X, _ = next(iter(train_iter))
    assert X.shape == (4, 1, 56, 56) and 0.0 <= float(X.min()) and float(X.max()) <= 1.0
    ones = ImageDataset("ones", *(np.ones((2, 1, 28, 28), np.float32), np.zeros(2, np.int64)) * 2, ("0",), True)
    X, _ = next(iter(d2l.loaders(ones, 2, resize=13)[0]))
    assert float(X.max()) <= 1.0  # bilinear with antialiasing rounds to 1.0000002 here: clamped
    with pytest.raises(ValueError, match="resize=-3; expected a size in pixels"):
        d2l.loaders(synthetic_fashion_mnist(0, n_train=4, n_test=4), 4, resize=-3)


def test_load_data_fashion_mnist_reads_the_data_root(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    oracle.write_fashion(tmp_path, n_train=12, n_test=4)
    monkeypatch.setenv("AUTOPAR_DATA", str(tmp_path))
    train_iter, test_iter = d2l.load_data_fashion_mnist(4)
    assert len(train_iter) == 3 and len(test_iter) == 1
    assert d2l.get_fashion_mnist_labels([0, 9]) == ["t-shirt", "ankle boot"]


def test_metrics_and_timer() -> None:
    y_hat = ap.asarray(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], dtype=np.float32))
    assert d2l.accuracy(y_hat, ap.asarray(np.array([1, 0, 0]))) == 2.0
    acc = d2l.Accumulator(2)
    acc.add(ap.asarray(3.0), 4)
    acc.add(1, 1)
    assert acc[0] == 4.0 and acc[1] == 5.0
    timer = d2l.Timer()
    timer.stop()
    timer.start()
    timer.stop()
    assert len(timer.times) == 2 and timer.sum() == pytest.approx(sum(timer.times)) and timer.cumsum()[-1] == timer.sum()


def test_animator_prints_in_a_terminal_and_saves_separate_labelled_panels(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = io.StringIO()
    animator = d2l.Animator(xlabel="epoch", legend=["train loss", "train acc", "test acc"], out=out)
    for epoch in range(1, 4):
        animator.add(epoch - 0.5, (2.0 / epoch, 0.3 * epoch, None))
        animator.add(epoch, (None, None, 0.25 * epoch))
    lines = out.getvalue().splitlines()
    assert lines[0] == "epoch 0.50: train loss 2.000, train acc 0.300" and lines[1] == "epoch 1.00: test acc 0.250"
    assert animator.Y == [[2.0, 1.0, 2.0 / 3], [0.3, 0.6, 0.3 * 3], [0.25, 0.5, 0.75]]
    pytest.importorskip("matplotlib")
    fig = animator.figure()
    labels = [(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes]
    assert labels == [("epoch", "loss"), ("epoch", "accuracy")]
    assert [len(ax.lines) for ax in fig.axes] == [1, 2] and fig.axes[1].get_ylim() == (0.0, 1.0)
    path = tmp_path / "curves.png"
    animator.save(str(path))
    png = path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24])[0] > 600  # two panels wide
    quiet = io.StringIO()
    d2l.Animator(legend=["x"], live=False, out=quiet).add(1, 1.0)
    assert quiet.getvalue() == ""


def test_train_ch6_trains_both_kinds_of_network(tiny: tuple[d2l.DataLoader, d2l.DataLoader], capsys) -> None:  # type: ignore[no-untyped-def]
    train_iter, test_iter = tiny
    ap.random.seed(0)
    torch_net = nn.Sequential(nn.Conv2d(1, 4, kernel_size=5, padding=2), nn.ReLU(), nn.AvgPool2d(4), nn.Flatten(),
                              nn.Linear(4 * 7 * 7, 10))  # fmt: skip
    gluon_net = gluon.nn.Sequential()
    gluon_net.add(gluon.nn.Conv2D(4, kernel_size=5, padding=2, activation="relu"), gluon.nn.AvgPool2D(4),
                  gluon.nn.Dense(10))  # fmt: skip
    for net in (torch_net, gluon_net):
        animator = d2l.train_ch6(net, train_iter, test_iter, num_epochs=3, lr=0.3, device=ap.cpu())
        losses, train_acc, test_acc = animator.Y
        assert len(losses) == 15 and len(test_acc) == 3  # five points an epoch, and the test accuracy
        assert 1.5 < losses[0] < 4.0, losses  # the mean loss per sample of an untrained net: near ln(10) = 2.3
        assert losses[-1] < 0.9 * losses[0] and test_acc[-1] >= 0.3, (losses, test_acc)  # chance: 0.1
    out = capsys.readouterr().out
    assert out.count("training on cpu:0") == 2 and "examples/sec on cpu:0" in out


def test_train_ch13_is_data_parallel_on_every_device(tiny: tuple[d2l.DataLoader, d2l.DataLoader],
                                                     two_devices: list[ap.Device], capsys) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    train_iter, test_iter = tiny
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    trainer = ap.optim.SGD(net.parameters(), lr=0.1)
    with ap.profile() as prof:
        animator = d2l.train_ch13(net, train_iter, test_iter, nn.CrossEntropyLoss(reduction="none"), trainer, 1)
    assert {r.device for r in prof.records if r.name == "linear"} == {"cpu:0", "cpu:1"}
    assert len(animator.Y[0]) == 5 and "examples/sec on cpu:0, cpu:1" in capsys.readouterr().out
    gnet = gluon.nn.Sequential()
    gnet.add(gluon.nn.Dense(10))
    gnet.initialize(ctx=two_devices)
    gtrainer = gluon.Trainer(gnet.collect_params(), "sgd", {"learning_rate": 0.1})
    animator = d2l.train_ch13(gnet, train_iter, test_iter, gluon.loss.SoftmaxCrossEntropyLoss(), gtrainer, 1)
    assert 0.0 <= animator.Y[2][-1] <= 1.0


def test_editions_hold_their_residual_block() -> None:
    assert issubclass(d2l_pt.Residual, nn.Module) and issubclass(d2l_mx.Residual, gluon.Block)
    block = d2l_pt.Residual(6, use_1x1conv=True, strides=2)
    assert block(ap.ones((1, 3, 8, 8))).shape == (1, 6, 4, 4)
    assert d2l_pt.Residual(3, 3)(ap.ones((1, 3, 8, 8))).shape == (1, 3, 8, 8)
    with pytest.raises(AttributeError, match="differs between the book's editions"):
        d2l.Residual  # noqa: B018
    assert d2l_mx.try_all_gpus is ap.try_all_gpus and d2l_pt.Benchmark is ap.Benchmark


def test_animator_redraws_in_a_notebook(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """In a Jupyter kernel the figure is shown and the previous one cleared at each point (no line printed)."""
    import types

    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401  (imported before the fake kernel, which it would hook into)

    shown: list[str] = []

    class ZMQInteractiveShell:  # the class name IPython's kernel shell has
        pass

    display = types.ModuleType("IPython.display")
    display.display = lambda fig: shown.append("display")  # type: ignore[attr-defined]
    display.clear_output = lambda wait=False: shown.append(f"clear wait={wait}")  # type: ignore[attr-defined]
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: ZMQInteractiveShell()  # type: ignore[attr-defined]
    ipython.display = display  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    out = io.StringIO()
    animator = d2l.Animator(xlabel="epoch", legend=["train loss"], out=out)
    animator.add(1, 0.5)
    animator.add(2, 0.4)
    assert shown == ["display", "clear wait=True"] * 2 and out.getvalue() == ""


def test_evaluation_counts_samples_and_the_test_loader_keeps_the_datas_order(
        tiny: tuple[d2l.DataLoader, d2l.DataLoader]) -> None:  # fmt: skip
    train_iter, test_iter = tiny
    assert sum((y.tolist() for _, y in test_iter), []) == [i % 10 for i in range(20)]  # as d2l: not shuffled
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    nn.init.zeros_(net[1].weight)
    with ap.no_grad():
        net[1].bias[...] = ap.asarray(np.eye(10, dtype=np.float32)[3])  # every image is called class 3
    assert d2l.evaluate_accuracy_gpu(net, test_iter) == 0.1 and d2l.evaluate_accuracy(net, test_iter) == 0.1
    gnet = gluon.nn.Dense(10, in_units=784, weight_initializer="zeros", bias_initializer=ap.init.Constant(0.0))
    gnet.initialize()
    gnet.bias.set_data(ap.asarray(np.eye(10, dtype=np.float32)[3]))
    assert d2l.evaluate_accuracy_gpus(gnet, test_iter) == 0.1
