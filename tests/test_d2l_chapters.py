"""The book's chapters, both editions, ported by changing the imports (examples/d2l/), on tiny data.

Each runs as the book's code on two CPU devices, and trains what plain PyTorch trains from the same
start on the same batches (tests/_d2l_oracle.py): the from-scratch chapter's LeNet equals one device and
the oracle; the concise chapter's ResNet-18 equals PyTorch computing each device's shard in turn (two
devices) and the whole batch (one device).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import autopar as ap
from autopar.d2l import load_data_fashion_mnist

sys.path.insert(0, os.path.dirname(__file__))
import _d2l_oracle as oracle  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples", "d2l")
BATCH = 8
# The concise chapter trains one step of the whole tiny set: ResNet-18's batch norms of a few samples
# amplify float rounding step after step (the second step's gradients of the last layers differ by up to
# 9% from PyTorch's after 1e-6 differences in the first), so one step is compared, tightly.
# (DataParallel over several steps is compared exactly on a model without batch norm: test_layer_api.py.)
CONCISE_BATCH = 16
LR = 0.1


@pytest.fixture(scope="module")
def fashion_root(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("data")
    oracle.write_fashion(root, n_train=16, n_test=8)
    return str(root)


@pytest.fixture
def chapter_env(fashion_root: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The tiny dataset as the loaders' data root, two CPU devices, a seeded generator."""
    monkeypatch.setenv("AUTOPAR_DATA", fashion_root)
    ap.set_cpu_devices(2)
    ap.random.seed(0)
    yield
    ap.waitall()
    ap.set_cpu_devices(1)


def load(name: str) -> Any:
    """A fresh copy of the chapter's module (its module-level parameters drawn now)."""
    spec = importlib.util.spec_from_file_location(f"chapter_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def batches(batch_size: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The first epoch's training batches, as the chapter's loader gives them."""
    train_iter, _ = load_data_fashion_mnist(batch_size)
    return [(X.numpy(), y.numpy()) for X, y in train_iter]


@pytest.mark.parametrize("edition", ["torch", "mxnet"])
def test_auto_parallelism_chapter_runs_on_both_devices(edition: str, chapter_env: None, capsys: Any) -> None:
    module = load(f"auto_parallelism_{edition}")
    with ap.profile() as prof:
        copies = module.chapter(size=64)
    out = capsys.readouterr().out
    for label in ("GPU1 time", "GPU2 time", "GPU1 & GPU2", "Run on GPU1", "Copy to CPU", "Run on GPU1 and copy to CPU"):
        assert f"\n{label}: " in "\n" + out, label
    assert {r.device for r in prof.records if r.name in ("dot", "matmul", "mm")} == {"cpu:0", "cpu:1"}
    assert len(copies) == 50 and copies[0].shape == (64, 64)


def _scratch(edition: str, num_gpus: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[np.ndarray], list[Any]]:
    """Train the chapter's LeNet one epoch; returns the starting parameters and every device's after."""
    module = load(f"multiple_gpus_{edition}")
    start = [oracle.numpy_of(p) for p in module.params]
    made: list[Any] = []
    get_params = module.get_params
    monkeypatch.setattr(module, "get_params", lambda params, d: made.append(get_params(params, d)) or made[-1])
    module.train(num_gpus=num_gpus, batch_size=BATCH, lr=0.2, num_epochs=1)
    return start, made


@pytest.mark.parametrize("edition", ["torch", "mxnet"])
def test_from_scratch_chapter_on_two_devices_equals_one_and_plain_pytorch(
        edition: str, chapter_env: None, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    start, two = _scratch(edition, 2, monkeypatch)
    ap.random.seed(0)
    start_one, one = _scratch(edition, 1, monkeypatch)
    assert all(np.array_equal(a, b) for a, b in zip(start, start_one))
    expected = oracle.train_lenet(start, batches(BATCH), lr=0.2)
    assert not np.allclose(expected[0], start[0])  # it trained
    for i, want in enumerate(expected):
        np.testing.assert_allclose(oracle.numpy_of(one[0][i]), want, rtol=1e-4, atol=1e-6, err_msg=f"1 device, {i}")
        for d in range(2):  # both devices hold the same parameters, equal to one device's
            np.testing.assert_allclose(oracle.numpy_of(two[d][i]), want, rtol=1e-4, atol=1e-6, err_msg=f"device {d}, {i}")


def _concise_torch(num_gpus: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """The PyTorch edition's train(); returns the trained net and a torch twin of it as it started."""
    module = load("multiple_gpus_concise_torch")
    net = module.resnet18(10)
    twins: list[Any] = []
    wrap = ap.nn.DataParallel

    class Recording(wrap):  # type: ignore[misc, valid-type]
        def __init__(self, module: Any, device_ids: Any = None) -> None:
            twins.append(oracle.torch_twin(module))  # the weights after the chapter's init_weights
            super().__init__(module, device_ids)

    monkeypatch.setattr(ap.nn, "DataParallel", Recording)
    module.train(net, num_gpus=num_gpus, batch_size=CONCISE_BATCH, lr=LR, num_epochs=1)
    return net, twins[0]


def _assert_trained_alike(ours: list[np.ndarray], theirs: list[np.ndarray], start: list[np.ndarray]) -> None:
    """Each parameter moved as PyTorch's did, to 0.1% of how far it moved."""
    assert len(ours) == len(theirs) == len(start)
    assert not np.allclose(ours[-2], start[-2])  # the last layer moved
    for i, (a, b, s) in enumerate(zip(ours, theirs, start)):
        moved = float(np.abs(b - s).max())
        assert float(np.abs(a - b).max()) <= 1e-3 * moved + 1e-7, (i, float(np.abs(a - b).max()), moved)


@pytest.mark.parametrize("num_gpus", [2, 1])
def test_concise_chapter_pytorch_edition_equals_plain_pytorch(num_gpus: int, chapter_env: None,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """nn.DataParallel on 2 devices = PyTorch computing the two shards in turn; on 1 = the whole batch."""
    net, twin = _concise_torch(num_gpus, monkeypatch)
    start = [p.detach().numpy().copy() for p in twin.parameters()]
    oracle.train_twin(twin, batches(CONCISE_BATCH), lr=LR, shards=num_gpus)
    _assert_trained_alike([oracle.numpy_of(p) for p in net.parameters()],
                          [p.detach().numpy() for p in twin.parameters()], start)  # fmt: skip


@pytest.mark.parametrize("num_gpus", [2, 1])
def test_concise_chapter_mxnet_edition_equals_plain_pytorch(num_gpus: int, chapter_env: None) -> None:
    """Gluon's Trainer on 2 devices = PyTorch computing the two shards in turn; every device's copy alike."""
    module = load("multiple_gpus_concise_mxnet")
    devices = [ap.cpu(i) for i in range(num_gpus)]
    net = module.net
    trainer_init = module.net.initialize
    started: list[Any] = []

    def initialize(**kwargs: Any) -> None:  # the chapter's own initialize, then a look at the first weights
        trainer_init(**kwargs)
        X = ap.zeros((num_gpus, 1, 28, 28))
        from autopar import autograd

        with autograd.predict_mode():
            for x in ap.gluon.utils.split_and_load(X, devices):
                net(x)  # finish the deferred initialisation (no statistics change outside train mode)
        started.append(oracle.torch_twin(net, devices[0]))

    net.initialize = initialize
    module.train(num_gpus=num_gpus, batch_size=CONCISE_BATCH, lr=LR, num_epochs=1)
    twin = started[0]
    start = [p.detach().numpy().copy() for p in twin.parameters()]
    oracle.train_twin(twin, batches(CONCISE_BATCH), lr=LR, shards=num_gpus)
    theirs = [p.detach().numpy() for p in twin.parameters()]
    trained = [p for p in net.collect_params().values() if p.grad_req != "null"]
    for device in devices:
        _assert_trained_alike([oracle.numpy_of(p.data(device)) for p in trained], theirs, start)
