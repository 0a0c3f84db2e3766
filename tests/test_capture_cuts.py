"""A captured data-parallel backward cut at gradient buckets where the graph has skip connections over
the cuts: each cut point's tensors are detached for what follows (the torch graph is cut there), so
residual networks are cut too, and their gradients and updates equal eager execution's. (The compiled
step with a skip over its cut: test_capture_buckets.py, one compile.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import autopar as ap
from autopar import parallel
from autopar.nn import functional as F


@pytest.fixture
def two_cpus():  # type: ignore[no-untyped-def]
    ap.set_cpu_devices(2)
    yield [ap.cpu(0), ap.cpu(1)]
    ap.waitall()
    ap.set_cpu_devices(1)


def _pieces(trainer: parallel.DataParallel) -> int:
    """The later pieces of backward in the trainer's captured step (0: the backward was not cut)."""
    (program,) = trainer._batch_step.traces
    return sum(1 for seg in program.segments if program._is_piece(seg))


def _assert_same(eager: parallel.DataParallel, captured: parallel.DataParallel, rtol: float) -> None:
    for d, (want_row, got_row) in enumerate(zip(eager.replicas, captured.replicas)):
        for i, (want, got) in enumerate(zip(want_row, got_row)):
            np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=rtol, atol=rtol * 0.1,
                                       err_msg=f"gradient of parameter {i}, device {d}")  # fmt: skip
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=rtol * 0.1,
                                       err_msg=f"parameter {i}, device {d}")  # fmt: skip


def test_resnet18_data_parallel_step_is_cut_at_its_buckets_and_trains_as_eagerly(two_cpus: list[Any]) -> None:
    """d2l's ResNet-18: every residual block's shortcut crosses the cuts of its convolutions' buckets."""
    from autopar.nn import models

    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 1, 8, 8)).astype(np.float32)  # batch 4 per device
    y = rng.integers(0, 10, 8)
    trainers = []
    for capture in (False, "replay"):
        net = models.build("resnet18", 0)  # (each its own batch-norm statistics)

        def loss_fn(params: Any, x: Any, t: Any, net: Any = net) -> Any:
            return F.cross_entropy(net(x, params), t)

        # (the buckets of devices that copy to sum, as GPUs do; CPU devices of one process make larger ones)
        trainer = parallel.DataParallel(parallel.replicate(net.params, two_cpus), parallel.sgd(lr=0.05),
                                        capture=capture, bucket_size=parallel.BUCKET_SIZE)  # fmt: skip
        trainers.append(trainer)
        for _ in range(3):  # (the captured: traced, then replayed twice)
            losses = trainer.step_batch(loss_fn, X, y)
        assert all(np.isfinite(loss.item()) for loss in losses)
    eager, captured = trainers
    assert len(captured.buckets) > 20
    assert _pieces(captured) >= 2 * 10, "ResNet-18's backward was not cut into pieces on each device"
    _assert_same(eager, captured, rtol=1e-5)


def _layered(seed: int, width: int = 5, depth: int = 5) -> tuple[list[np.ndarray], Any]:
    """A random stack of layers, each fed by the one before and by skips from earlier layers (their
    output, or the pre-activation the output is made from): (starting parameters, loss function)."""
    rng = np.random.default_rng(seed)
    plan: list[list[tuple[int, bool]]] = []  # per layer: (source layer, its pre-activation?)
    for i in range(1, depth + 1):
        sources = [(i - 1, False)] + [(int(k), bool(rng.integers(2))) for k in range(i - 1) if rng.random() < 0.6]
        plan.append(sources)
    shapes: list[tuple[int, ...]] = []
    for sources in plan:
        shapes += [(width, width)] * len(sources) + [(width,)]
    shapes += [(width, 3), (3,)]
    start = [(rng.standard_normal(s) * 0.4).astype(np.float32) for s in shapes]

    def loss_fn(params: Any, x: Any, t: Any) -> Any:
        weights = iter(params)
        outs, pre = [x], [x]
        for sources in plan:
            z = None
            for k, raw in sources:
                term = ap.matmul(pre[k] if raw else outs[k], next(weights))
                z = term if z is None else z + term
            z = z + next(weights)
            pre.append(z)
            outs.append(ap.tanh(z))
        return F.cross_entropy(ap.matmul(outs[-1], next(weights)) + next(weights), t)

    return start, loss_fn


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_layered_models_with_skips_over_cuts_train_as_eagerly(seed: int, two_cpus: list[Any],
                                                                      eng: Any) -> None:  # fmt: skip
    start, loss_fn = _layered(seed)
    rng = np.random.default_rng(10 + seed)
    X, y = rng.standard_normal((6, 5)).astype(np.float32), rng.integers(0, 3, 6)
    for bucket_size in (1, 30, 60):  # a parameter per bucket, a layer or so, two or three layers
        params = [ap.asarray(p) for p in start]
        trainers = [parallel.DataParallel(parallel.replicate(params, two_cpus), parallel.sgd(lr=0.1),
                                          bucket_size=bucket_size, capture=c) for c in (False, "replay")]  # fmt: skip
        for _ in range(3):
            want, got = (t.step_batch(loss_fn, X, y) for t in trainers)
            np.testing.assert_allclose([g.item() for g in got], [w.item() for w in want], rtol=1e-6)
        assert _pieces(trainers[1]) >= 2, f"bucket_size={bucket_size}: the backward was not cut"
        _assert_same(*trainers, rtol=1e-5)


def test_the_step_by_step_path_cuts_the_graph_as_the_fast_path_does(
        two_cpus: list[Any], threaded: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Every segment made to run step by step (the path of a call that meets a failed read): the same
    pieces, cut at the same points, the same gradients and updates as eagerly."""
    from autopar._capture import _failed
    from autopar.engine import _failures

    start, loss_fn = _layered(1)
    rng = np.random.default_rng(11)
    X, y = rng.standard_normal((6, 5)).astype(np.float32), rng.integers(0, 3, 6)
    params = [ap.asarray(p) for p in start]
    trainers = [parallel.DataParallel(parallel.replicate(params, two_cpus), parallel.sgd(lr=0.1), bucket_size=30,
                                      capture=c) for c in (False, "replay")]  # fmt: skip
    runs: list[int] = []
    stopped = _failed.stopped
    monkeypatch.setattr(_failures, "seen", True)
    monkeypatch.setattr(_failed, "stopped", lambda *args: runs.append(1) or stopped(*args) or True)
    for _ in range(3):
        for t in trainers:
            t.step_batch(loss_fn, X, y)
    ap.waitall()
    assert _pieces(trainers[1]) >= 2 and len(runs) >= 2 * _pieces(trainers[1])
    _assert_same(*trainers, rtol=1e-5)
