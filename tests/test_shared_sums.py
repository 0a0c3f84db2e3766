"""Sums between CPU devices of one process (``parallel/_local.py``) against sums through copies
(forced on CPU devices, as GPUs and other machines' devices use them): a data-parallel step gives
the same bits either way, whatever its buckets hold, and after whatever happened to its arrays;
``allreduce`` takes the same dtypes and raises the same errors either way, and inside a captured
function; only whole arrays of CPU devices of this process are summed by one op."""

from __future__ import annotations

import numpy as np
import pytest

import autopar as ap
from autopar import parallel
from autopar.parallel import _local


def _loss(params, x, y):  # type: ignore[no-untyped-def]
    w1, b1, w2 = params
    return ((ap.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()


def _train(monkeypatch, sums: str, n: int, optimizer, steps: int = 2, **options):  # type: ignore[no-untyped-def]
    """Parameters and gradients (bytes) after ``steps`` data-parallel steps on ``n`` CPU devices."""
    ap.set_cpu_devices(n)
    try:
        with monkeypatch.context() as m:
            if sums == "copies":
                m.setattr(_local, "shares_memory", lambda devices: False)
                m.setattr(_local, "shared_memory", lambda arrays: False)
            rng = np.random.default_rng(7)
            w0 = [rng.standard_normal(s).astype(np.float32) for s in ((4, 5), (5,), (5, 2))]
            replicas = parallel.replicate([ap.asarray(w) for w in w0], [ap.cpu(i) for i in range(n)])
            trainer = parallel.DataParallel(replicas, optimizer, **options)
            assert trainer._shared == (sums == "shared")
            for _ in range(steps):
                X, Y = rng.standard_normal((3 * n, 4)), rng.standard_normal((3 * n, 2))
                trainer.step_batch(_loss, X.astype(np.float32), Y.astype(np.float32))
            ap.waitall()
            return [[(p.numpy().tobytes(), p.grad.numpy().tobytes()) for p in row] for row in replicas]
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


@pytest.mark.parametrize("bucket_size", [1, None])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_three_devices_update_with_the_bits_of_sums_through_copies(eng, monkeypatch, weight_decay, bucket_size) -> None:  # type: ignore[no-untyped-def]
    """Plain SGD on three devices, both ways of summing: the same parameters and gradients, bit for bit.
    Buckets of one parameter (``bucket_size=1``): through copies each is updated by the parameter's own
    op (not the bucket's one-pass kernel), and so after the one-op sum; one bucket of all three
    (``None``): one op sums it and updates every device."""
    got = {sums: _train(monkeypatch, sums, 3, parallel.sgd(0.1, weight_decay=weight_decay), bucket_size=bucket_size)
           for sums in ("shared", "copies")}  # fmt: skip
    assert got["shared"] == got["copies"]


def _broken(t):  # type: ignore[no-untyped-def]
    raise FloatingPointError("bad batch")


def test_a_captured_step_after_a_failed_one_and_a_restore_updates_as_eager_does(sums) -> None:  # type: ignore[no-untyped-def]
    """Captured plain SGD (one op sums the bucket and updates both devices, replayed every step) through a
    failed step whose parameters are restored with ``copyto``: replays after it read and write the arrays
    as they are then, not as they were when the step was traced -- the same values as the eager steps."""

    def run(capture: bool):  # type: ignore[no-untyped-def]
        ap.set_cpu_devices(2)
        try:
            rng = np.random.default_rng(3)
            w0 = [rng.standard_normal(s).astype(np.float32) for s in ((4, 5), (5,), (5, 2))]
            replicas = parallel.replicate([ap.asarray(w) for w in w0], [ap.cpu(0), ap.cpu(1)])
            trainer = parallel.DataParallel(replicas, parallel.sgd(0.1), capture="replay" if capture else False)
            history = []
            for step in range(5):
                X, Y = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
                kept = [[p.numpy().copy() for p in row] for row in replicas]
                if step == 2:
                    trainer.step_batch(_loss, ap.call(_broken, ap.asarray(X), shape=X.shape), Y)
                    with pytest.raises(FloatingPointError):
                        ap.waitall()
                    with ap.no_grad():
                        for row, values in zip(replicas, kept):
                            for p, v in zip(row, values):
                                ap.asarray(v, device=p.device).copyto(p)
                else:
                    trainer.step_batch(_loss, X, Y)
                grads = step != 2  # (a failed step's gradients are failed)
                history.append([[(p.numpy().tobytes(), grads and p.grad.numpy().tobytes()) for p in row]
                                for row in replicas])  # fmt: skip
            return history
        finally:
            ap.waitall()
            ap.set_cpu_devices(1)

    eager, captured = run(False), run(True)
    for step, (want, got) in enumerate(zip(eager, captured)):
        assert got == want, step


def _replicas(n: int = 2):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(11)
    w0 = [rng.standard_normal(s).astype(np.float32) for s in ((4, 5), (5,), (5, 2))]
    return parallel.replicate([ap.asarray(w) for w in w0], [ap.cpu(i) for i in range(n)]), rng


def test_a_step_after_a_failed_one_without_a_restore_keeps_the_parameters_failed(eng, sums) -> None:  # type: ignore[no-untyped-def]
    """Contract, failures rule 2: an update reads the parameter it keeps, so a step whose parameters a
    failed step left failed does not run on them -- they keep the error, not a value made from none."""
    ap.set_cpu_devices(2)
    try:
        replicas, rng = _replicas()
        trainer = parallel.DataParallel(replicas, parallel.sgd(0.1))
        X, Y = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
        trainer.step_batch(_loss, ap.call(_broken, ap.asarray(X), shape=X.shape), Y)
        trainer.step_batch(_loss, X, Y)  # a good batch, on failed parameters
        for row in replicas:
            for p in row:
                with pytest.raises(FloatingPointError, match="bad batch"):
                    p.numpy()
    finally:
        ap.set_cpu_devices(1)


def test_a_step_without_sync_updates_each_device_with_its_own_gradients(eng, sums) -> None:  # type: ignore[no-untyped-def]
    """``step(losses, sync=False)``: no sums -- each device's gradients are its own, and its parameters
    move by them alone (the same as a one-device step on its part of the batch)."""
    ap.set_cpu_devices(2)
    try:
        replicas, rng = _replicas()
        alone = [parallel.replicate([p.copy() for p in replicas[0]], [ap.cpu(d)]) for d in range(2)]
        trainer = parallel.DataParallel(replicas, parallel.sgd(0.1), average=False)
        singles = [parallel.DataParallel(row, parallel.sgd(0.1), average=False) for row in alone]
        X, Y = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
        xs, ys = parallel.split_and_load(X, trainer.devices), parallel.split_and_load(Y, trainer.devices)
        with ap.autograd.record():
            losses = [_loss(row, x, y) for row, x, y in zip(replicas, xs, ys)]
            own = [_loss(row[0], x, y) for row, x, y in zip(alone, xs, ys)]
        trainer.step(losses, sync=False)
        for single, loss in zip(singles, own):
            single.step([loss])
        for row, (single,) in zip(replicas, alone):
            for p, q in zip(row, single):
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)
                np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6, atol=1e-7)
        assert not np.allclose(replicas[0][0].numpy(), replicas[1][0].numpy())  # each its own
    finally:
        ap.set_cpu_devices(1)


def test_the_bucket_update_reads_the_tensors_its_arrays_hold_each_time_it_runs() -> None:
    """SGD's bucket kernel keeps its views of the gradient between runs (a captured step replays it):
    where the gradient's storage holds another tensor by then -- an op's result is stored as a new
    tensor -- it reads that one, and it writes the tensors the parameters hold then."""
    import torch

    params = [ap.asarray(np.ones((2, 2), np.float32)), ap.asarray(np.ones(3, np.float32))]
    flat = ap.asarray(np.arange(7.0, dtype=np.float32))
    kernel = parallel.sgd(0.5).bucket_kernel(params, flat, [(), ()], scale=0.5)
    assert kernel is not None
    run, reads, writes = kernel
    ap.waitall()
    run()  # w -= 0.25 g
    np.testing.assert_array_equal(params[0].numpy(), 1.0 - 0.25 * np.arange(4.0).reshape(2, 2))
    flat._storage.tensor = torch.full((7,), 4.0)
    run()
    np.testing.assert_array_equal(params[0].numpy(), 1.0 - 0.25 * np.arange(4.0).reshape(2, 2) - 1.0)
    params[1]._storage.tensor = torch.zeros(3)
    run()
    np.testing.assert_array_equal(params[1].numpy(), np.full(3, -1.0, np.float32))


def test_only_whole_arrays_on_cpu_devices_of_this_process_are_summed_by_one_op() -> None:
    """Which sums read every device's memory in one op: GPUs' memory is not this thread's to read, nor
    another machine's (their sums go through copies). Stand-ins: such devices cannot be made here."""
    from types import SimpleNamespace as Fake

    def device(kind: str, node: str | None = None) -> Fake:
        return Fake(kind=kind, node=node)

    def array(kind: str, remote: bool = False, view: object = None) -> Fake:
        return Fake(device=device(kind), _storage=Fake(remote=remote), _view=view)

    assert _local.shares_memory([device("cpu"), device("cpu")])
    assert not _local.shares_memory([device("cpu")])  # one device: nothing to sum
    assert not _local.shares_memory([device("cpu", "node1"), device("cpu", "node1")])
    assert not _local.shares_memory([device("cpu"), device("cpu", "node1")])
    assert not _local.shares_memory([device("cuda"), device("cuda")])
    assert not _local.shares_memory([device("cpu"), device("cuda")])
    assert _local.shared_memory([array("cpu"), array("cpu")])
    assert not _local.shared_memory([array("cpu"), array("cpu", remote=True)])
    assert not _local.shared_memory([array("cuda"), array("cuda")])
    assert not _local.shared_memory([array("cpu"), array("cpu", view=object())])


def test_allreduce_into_arrays_autograd_records_raises_at_the_call_either_way(eng, sums) -> None:  # type: ignore[no-untyped-def]
    """Inside ``autograd.record()`` a sum written into a leaf that requires grad, or into a recorded
    result, would not be recorded: through copies the sum's in-place add refuses it at the call, and so
    must the one-op sum -- not write the sum where backward would not see it. Nothing is written."""
    ap.set_cpu_devices(2)
    try:
        devices = [ap.cpu(0), ap.cpu(1)]
        leaves = [ap.asarray(np.arange(3.0, dtype=np.float32) + d, device=dev) for d, dev in enumerate(devices)]
        for x in leaves:
            x.attach_grad()
        with ap.autograd.record():
            with pytest.raises(RuntimeError, match="in-place operations are not recorded for gradients"):
                parallel.allreduce(leaves)
            results = [x * 2.0 for x in leaves]
            with pytest.raises(RuntimeError, match="in-place operations are not recorded for gradients"):
                parallel.allreduce(results)
        assert [x.numpy().tolist() for x in leaves] == [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]]
        assert [y.numpy().tolist() for y in results] == [[0.0, 2.0, 4.0], [2.0, 4.0, 6.0]]
        parallel.allreduce(leaves)  # outside record: summed
        assert [x.numpy().tolist() for x in leaves] == [[1.0, 3.0, 5.0]] * 2
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_allreduce_of_unsigned_integers_wraps_as_numpy_either_way(sums) -> None:  # type: ignore[no-untyped-def]
    """uint16/32/64, which torch's CPU add does not take: summed on three devices with NumPy's
    wrap-around bits, through copies and in one op alike."""
    ap.set_cpu_devices(3)
    try:
        for dtype in ("uint16", "uint32", "uint64"):
            top = np.iinfo(dtype).max
            values = [np.array([top, top - 5, 7, top // 2 + 1], dtype=dtype) >> np.array(i, dtype=dtype)
                      for i in range(3)]  # fmt: skip
            arrays = [ap.asarray(v, device=ap.cpu(i)) for i, v in enumerate(values)]
            parallel.allreduce(arrays)
            want = values[0] + values[1] + values[2]
            for a in arrays:
                assert a.dtype == dtype and a.numpy().tobytes() == want.tobytes(), (dtype, a.numpy(), want)
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_a_captured_function_may_allreduce_its_arguments_and_its_own_results_either_way(sums) -> None:  # type: ignore[no-untyped-def]
    """``autopar.capture`` records allreduce's copies and sums as kernels, right for any arrays; the
    one-op sum is an engine op bound to its arrays, which a trace may hold only for arrays the function
    closes over -- so a captured function sums its arguments and its results through copies."""
    ap.set_cpu_devices(2)
    try:
        devices = [ap.cpu(0), ap.cpu(1)]

        def summed(a, b):  # type: ignore[no-untyped-def]
            c, d = a * 2.0, b * 2.0
            parallel.allreduce([c, d])
            parallel.allreduce([a, b])
            return c, d

        f = ap.capture(summed, mode="replay")
        for i in range(3):
            a = ap.asarray(np.arange(3.0, dtype=np.float32), device=devices[0])
            b = ap.asarray(np.arange(3.0, dtype=np.float32) + i, device=devices[1])
            c, d = f(a, b)
            want = 2 * np.arange(3.0) + i
            assert a.tolist() == b.tolist() == want.tolist() and c.tolist() == d.tolist() == (2 * want).tolist()
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_a_captured_steps_one_op_sums_are_found_as_traffic_on_whichever_lane_they_run() -> None:
    """A captured data-parallel step's segments that hold the one-op sum count as traffic in the
    profiler, on a copy lane (earlier buckets) and on a compute lane (the bucket backward makes last),
    as in eager execution."""
    ap.set_cpu_devices(2)
    try:
        for capture in (False, "replay"):
            replicas, rng = _replicas()
            trainer = parallel.DataParallel(replicas, parallel.sgd(0.1), capture=capture, bucket_size=10)
            assert len(trainer.buckets) == 3  # w2, b1, w1: the last is w1's
            X, Y = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((6, 2)).astype(np.float32)
            for _ in range(2):
                trainer.step_batch(_loss, X, Y)
            ap.waitall()
            with ap.profile() as prof:
                trainer.step_batch(_loss, X, Y)
                ap.waitall()
            sums_at = {(r.device, r.lane) for r in prof.records if r.kind == "sum" and r.device == "cpu:0"}
            assert sums_at == {("cpu:0", "copy"), ("cpu:0", "compute")}, (capture, prof.records)
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)
