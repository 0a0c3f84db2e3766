"""A captured data-parallel step keeps gradient sums beside backward: its backward cut at gradient
buckets runs compiled (the forward compiled in stages at the cuts) and exactly where a frontier holds a
tensor and one made from it. (The segment rule that keeps a sum from waiting for a later piece of
backward: test_capture_segments.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import autopar as ap
from autopar._capture._backends import compiler_available

from _helpers import trains_as_eagerly


def _skip_mlp_loss(p, x, t):  # type: ignore[no-untyped-def]
    from autopar.nn import functional as F

    z = F.linear(x, p[0], p[1])
    h = F.relu(F.linear(F.relu(z), p[2], p[3])) + z
    return F.cross_entropy(F.linear(h, p[4], p[5]) + z[:, :4], t)


def _data_parallel_mlp(capture: bool | str):  # type: ignore[no-untyped-def]
    """Three layers, one gradient bucket each, the first one's pre-activation ``z`` added to the second
    one's output and to the last one's (a skip connection over both cuts, used between them too):
    backward cut into three pieces per device, the lower cut stopping at ``z`` and at ``relu(z)``, one
    made from the other."""
    from autopar import parallel

    devices = [ap.cpu(0), ap.cpu(1)]
    rng = np.random.default_rng(1)
    shapes = [(16, 12), (16,), (16, 16), (16,), (4, 16), (4,)]
    params = [ap.asarray((rng.standard_normal(s) * 0.3).astype(np.float32)) for s in shapes]
    replicas = parallel.replicate(params, devices)
    return replicas, parallel.DataParallel(replicas, parallel.sgd(lr=0.1), bucket_size=4 * 16 + 4,  # the last layer
                                           capture=capture)  # fmt: skip


@pytest.mark.skipif(bool(compiler_available()), reason="torch.compile cannot run here")
def test_a_compiled_data_parallel_step_keeps_its_backward_cut_and_matches_eager() -> None:
    # The forward is compiled in stages cut where backward is cut: each frontier between two pieces is
    # a tensor between two compiled graphs, the torch graph cut between them. Compiled as one graph, the
    # later pieces would find no path from the frontier to the first layers' weights, and those would
    # never learn; not cut, the path through the skip would count twice.
    import torch._inductor.config

    # (no pool of compile workers to fork; config.patch restores the setting -- a monkeypatch deleted it,
    # and every later compile in the process failed)
    with torch._inductor.config.patch(compile_threads=1):
        ap.set_cpu_devices(2)
        try:
            eager = _data_parallel_mlp(False)
            mine, trainer = _data_parallel_mlp("auto")
            start = [p.numpy().copy() for p in mine[1]]
            trains_as_eagerly(eager, (mine, trainer), _skip_mlp_loss)
            rng = np.random.default_rng(0)
            X = ap.asarray(rng.standard_normal((8, 12)).astype(np.float32))
            y = ap.asarray(rng.integers(0, 4, 8))
            for before, p in zip(start, mine[1]):
                assert not np.array_equal(before, p.numpy()), "a parameter was never updated"
            step = trainer._batch_step
            (program,) = step.traces
            pieces = [seg for seg in program.segments if program._is_piece(seg)]
            assert len(pieces) == 4, "the backward was not cut"  # two later pieces on each device
            # each compiled segment keeps its leaves' aliases with their arrays: the next step reuses them
            kept = [p._storage.leaf for replica in mine for p in replica]
            with ap.profile() as prof:
                trainer.step_batch(_skip_mlp_loss, X, y)
                ap.waitall()
            for k, p in zip(kept, [p for replica in mine for p in replica]):
                assert k is not None and p._storage.leaf is k and k[0]() is p._storage.tensor
                assert k[1].requires_grad and k[1].data_ptr() == p._storage.tensor.data_ptr()
            names = {r.name for r in prof.records}
            for seg in pieces:  # a piece runs in its head's compiled graph, and says so
                assert program.label(seg).endswith(", compile)") and program.label(seg) in names
            assert "compile+replay" in repr(step)  # the updates (the optimizer's own engine ops) replay
            assert all(seg.run.reason == "" for seg in pieces)  # nothing to say why a piece is not compiled: it is
        finally:
            ap.waitall()
            ap.set_cpu_devices(1)


def _two_skips_loss(params, x, t):  # type: ignore[no-untyped-def]
    from autopar.nn import functional as F

    x0 = ap.matmul(x, params[0])
    h1 = ap.matmul(ap.tanh(x0), params[1])
    out = ap.matmul(ap.tanh(ap.matmul(ap.tanh(h1), params[2])), params[3]) + ap.matmul(x0, params[4]) + \
        ap.matmul(h1, params[5])  # fmt: skip
    return F.cross_entropy(out, t)


def test_a_cut_whose_frontier_holds_a_tensor_and_one_made_from_it_is_made_and_matches_eager() -> None:
    # The cut before params[2] stops at x0, h1 and tanh(h1): h1 is made from x0, tanh(h1) from h1. Without
    # the graph cut there, the piece above would give each its whole gradient (through the others too)
    # and the piece below, started from all three, count the paths through tanh(h1) and h1 twice.
    from autopar import parallel

    ap.set_cpu_devices(2)
    try:
        devices = [ap.cpu(0), ap.cpu(1)]
        rng = np.random.default_rng(1)
        params = [ap.asarray(rng.standard_normal(s).astype(np.float32) * 0.5)
                  for s in ((8, 6), (6, 5), (5, 4), (4, 4), (6, 4), (5, 4))]  # fmt: skip
        X, y = rng.standard_normal((10, 8)).astype(np.float32), rng.integers(0, 4, 10)
        trainers = [parallel.DataParallel(parallel.replicate(params, devices), parallel.sgd(lr=0.1), bucket_size=100,
                                          capture=c) for c in (False, "replay")]  # fmt: skip
        for _ in range(3):
            want, got = (t.step_batch(_two_skips_loss, X, y) for t in trainers)
            np.testing.assert_allclose([g.item() for g in got], [w.item() for w in want], rtol=1e-6)
        for e, m in zip(*(t.replicas for t in trainers)):
            for a, b in zip(e, m):
                np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)
        program = trainers[1]._batch_step.traces[0]
        assert sum(program._is_piece(seg) for seg in program.segments) == 2, "the backward was not cut"
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)
