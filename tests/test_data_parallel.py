"""autopar.parallel: split_and_load, broadcast, allreduce on copy lanes; the data-parallel step
against the plain-PyTorch reference model; optimizers against torch.optim; overlap and
failures through the engine."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from _helpers import Gate, within

import autopar as ap
import autopar.nn.functional as F
from autopar import autograd, engine, parallel
from autopar.benchmarks.reference_models import build, lenet_forward
from autopar.datasets import synthetic_fashion_mnist


@pytest.fixture
def devices(eng):  # type: ignore[no-untyped-def]
    """Two CPU devices on the engine under test."""
    ap.set_cpu_devices(2)
    yield [ap.cpu(0), ap.cpu(1)]
    ap.waitall()
    ap.set_cpu_devices(1)


def test_split_and_load_and_broadcast(devices) -> None:  # type: ignore[no-untyped-def]
    x = np.arange(24.0, dtype=np.float32).reshape(6, 4)
    parts = parallel.split_and_load(x, devices)
    assert [p.device for p in parts] == devices
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in parts]), x)
    on_device = ap.asarray(x, device=devices[1])
    parts = parallel.split_and_load(on_device, devices, batch_axis=1)
    assert parts[1]._storage is on_device._storage  # the part already there is a view
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in parts], axis=1), x)
    with pytest.raises(ValueError, match="5 samples along axis 0 do not split evenly over 2 devices"):
        parallel.split_and_load(x[:5], devices)
    uneven = parallel.split_and_load(x[:5], devices, even_split=False)
    assert [p.shape[0] for p in uneven] == [2, 3]
    copies = parallel.broadcast(on_device, devices)
    assert copies[1] is on_device and copies[0].device == devices[0]
    np.testing.assert_array_equal(copies[0].numpy(), x)


def test_allreduce_sums_into_each_on_the_copy_lanes(devices, sums) -> None:  # type: ignore[no-untyped-def]
    values = [np.arange(5.0, dtype=np.float32) * (i + 1) for i in range(2)]
    arrays = [ap.asarray(v, device=d) for v, d in zip(values, devices)]
    with ap.profile() as prof:
        parallel.allreduce(arrays)
        ap.waitall()
    for a in arrays:
        np.testing.assert_array_equal(a.numpy(), values[0] + values[1])
    if engine.get_engine() == "threaded":
        lanes = sorted((r.name, r.lane) for r in prof.records)
        if sums == "shared":  # one op, reading both devices' arrays
            assert lanes == [("allreduce sum", "copy")], lanes
        else:  # each device copies the other's array, then sums
            assert lanes == [("allreduce copy", "copy")] * 2 + [("allreduce sum", "copy")] * 2, lanes
    with pytest.raises(ValueError, match="two arrays on one device"):
        parallel.allreduce([arrays[0], arrays[0]])


def test_allreduce_over_three_devices_sums_every_term(eng) -> None:  # type: ignore[no-untyped-def]
    """With more than two devices each sum is a chain of adds: every device's term must be in it."""
    ap.set_cpu_devices(3)
    try:
        values = [np.arange(4.0, dtype=np.float32) * 10**i for i in range(3)]  # 1, 10, 100: a lost term shows
        arrays = [ap.asarray(v, device=ap.cpu(i)) for i, v in enumerate(values)]
        parallel.allreduce(arrays)
        for a in arrays:
            np.testing.assert_array_equal(a.numpy(), values[0] + values[1] + values[2])
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def _reference_steps(batches: list, steps: int, lr: float) -> list[np.ndarray]:  # type: ignore[type-arg]
    """The oracle: the plain-PyTorch LeNet, one device, the whole batch, torch.optim.SGD."""
    torch.manual_seed(0)
    model = build("lenet", seed=4)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for x, y in batches[:steps]:
        opt.zero_grad()
        TF.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        opt.step()
    return [p.detach().numpy() for p in model.parameters()]


def lenet_data_parallel(devices, steps: int, batch: int, lr: float = 0.1):  # type: ignore[no-untyped-def]
    """LeNet trained ``steps`` steps with DataParallel on ``devices``: its replicas, and the reference's parameters."""
    data = synthetic_fashion_mnist(1, n_train=steps * batch, n_test=0)
    batches = list(data.train_iter(batch, seed=1))
    start = [ap.asarray(p.detach().numpy()) for p in build("lenet", seed=4).parameters()]
    replicas = parallel.replicate(start, devices)
    trainer = parallel.DataParallel(replicas, parallel.sgd(lr=lr))
    for x, y in batches[:steps]:
        xs, ys = parallel.split_and_load(x, devices), parallel.split_and_load(y, devices)
        with autograd.record():
            losses = [F.cross_entropy(lenet_forward(a, p, nnf=F), t) for a, t, p in zip(xs, ys, replicas)]
        trainer.step(losses)
    return replicas, _reference_steps(batches, steps, lr)


def test_lenet_on_two_devices_equals_one_device_on_the_whole_batch(devices, sums) -> None:  # type: ignore[no-untyped-def]
    replicas, want = lenet_data_parallel(devices, steps=3, batch=32)
    for replica in replicas:
        for ours, theirs in zip(replica, want):
            np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["sgd-momentum", "adam"])
def test_optimizers_equal_torch_optim(eng, kind: str) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    xs = [rng.standard_normal((6, 4)).astype(np.float32) for _ in range(4)]
    tw = torch.tensor(w0, requires_grad=True)
    if kind == "adam":
        opt, ours = torch.optim.Adam([tw], lr=0.05, weight_decay=0.01), parallel.adam(lr=0.05, weight_decay=0.01)
    else:
        opt, ours = torch.optim.SGD([tw], lr=0.1, momentum=0.9, weight_decay=0.01), parallel.sgd(0.1, 0.9, 0.01)
    (replica,) = parallel.replicate([ap.asarray(w0)], [ap.cpu(0)])
    trainer = parallel.DataParallel([replica], ours)
    for x in xs:
        opt.zero_grad()
        torch.tanh(torch.from_numpy(x) @ tw).pow(2).sum().backward()
        opt.step()
        with autograd.record():
            loss = (ap.tanh(ap.asarray(x) @ replica[0]) ** 2).sum()
        trainer.step([loss])
    np.testing.assert_allclose(replica[0].numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_plain_sgd_updates_a_bucket_in_one_op_per_device_as_torch_optim_does(devices, sums) -> None:  # type: ignore[no-untyped-def]
    # One fused op per bucket and device (Optimizer.update_bucket), with weight decay and the
    # average over devices -- on CPU devices of one process, one op sums the bucket and updates
    # both devices; the oracle is torch.optim.SGD on the sum of both devices' losses / 2.
    replicas, xs = _two_layer(devices)
    trainer = parallel.DataParallel(replicas, parallel.sgd(0.1, weight_decay=0.05))  # one bucket of 72
    assert trainer.buckets == [[1, 0]]
    tp = [torch.tensor(p.numpy(), requires_grad=True) for p in replicas[0]]
    opt = torch.optim.SGD(tp, lr=0.1, weight_decay=0.05)
    tx = [torch.from_numpy(x.numpy()) for x in xs]
    for _ in range(2):
        with autograd.record():
            losses = [ap.tanh(ap.tanh(x @ p[0]) @ p[1]).sum() for x, p in zip(xs, replicas)]
        with ap.profile() as prof:
            trainer.step(losses)
            ap.waitall()
        if sums == "shared":
            named = [(r.name, r.device, r.lane) for r in prof.records if r.name.startswith(("sgd", "allreduce"))]
            # (the bucket backward makes last -- the only one here -- sums on a compute lane: nothing left to overlap)
            assert named == [("allreduce sum and update", "cpu:0", "compute")], named
        else:
            updates = sorted(r.device for r in prof.records if r.name == "sgd update")
            assert updates == sorted(str(d) for d in devices), updates  # not one per parameter
        opt.zero_grad()
        (sum(torch.tanh(torch.tanh(x @ tp[0]) @ tp[1]).sum() for x in tx) / 2).backward()  # type: ignore[misc]
        opt.step()
    for row in replicas:
        for p, t in zip(row, tp):
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


class _Started:
    def __init__(self, into: list[tuple[str, str]]) -> None:
        self.into = into

    def op_pushed(self, op: engine.Op) -> None:
        pass

    def op_started(self, op: engine.Op) -> None:
        self.into.append((op.name, str(op.device)))

    def op_finished(self, op: engine.Op) -> None:
        pass


def _two_layer(devices):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(6)
    params = [ap.asarray(rng.standard_normal(s).astype(np.float32)) for s in ((8, 6), (6, 4))]
    replicas = parallel.replicate(params, devices)
    xs = [ap.asarray(rng.standard_normal((5, 8)).astype(np.float32), device=d) for d in devices]
    return replicas, xs


def test_the_last_layers_sum_and_update_run_while_the_first_layers_backward_waits(devices, sums) -> None:  # type: ignore[no-untyped-def]
    if engine.get_engine() != "threaded":
        pytest.skip("the gate needs a threaded engine")
    replicas, xs = _two_layer(devices)
    trainer = parallel.DataParallel(replicas, parallel.sgd(0.1), bucket_size=30)  # a bucket per layer (48, 24)
    assert trainer.buckets == [[1], [0]]
    with autograd.record():
        losses = [ap.tanh(ap.tanh(x @ p[0]) @ p[1]).sum() for x, p in zip(xs, replicas)]
    gate = Gate(reads=[xs[0]._storage.var], writes=[xs[0]._storage.var])  # holds x on cpu:0: layer 1's gradient op waits
    ready = threading.Event()

    def driver() -> None:  # off the test's thread: a step that waited could not hang the test
        trainer.step(losses)
        replicas[1][1].wait_to_read()  # layer 2 on cpu:1: summed with cpu:0's gradient, updated
        ready.set()

    started: list[tuple[str, str]] = []
    listener = _Started(started)
    engine.add_listener(listener)
    thread = threading.Thread(target=driver)
    try:
        thread.start()
        done = ready.wait(60)  # fails the test below if the sum waited for the gate
        before = list(started)
        gate.open()
        thread.join()
        ap.waitall()
    finally:
        engine.remove_listener(listener)
    assert done, "the last layer's sum and update waited for the first layer's backward"
    assert before.count(("backward matmul", "cpu:0")) == 1, before  # layer 2's ran on cpu:0, layer 1's had not
    if sums == "shared":  # one op sums; a bucket of one parameter: each device's own update, as through copies
        assert ("allreduce sum", "cpu:0") in before and ("sgd update", "cpu:1") in before, before
    else:  # (cpu:1's update waits for cpu:1's sum, not for cpu:0's: that one may start later)
        assert ("allreduce sum", "cpu:1") in before and ("sgd update", "cpu:1") in before, before


def test_gradients_are_views_of_buckets_and_hold_the_sums_after_a_step(devices, sums) -> None:  # type: ignore[no-untyped-def]
    replicas, xs = _two_layer(devices)
    trainer = parallel.DataParallel(replicas, parallel.sgd(0.1), average=False)  # one bucket of 72
    assert trainer.buckets == [[1, 0]]
    assert all(p.grad._storage is trainer.flats[d][0]._storage for d, row in enumerate(replicas) for p in row)
    before = [p.numpy() for p in replicas[0]]
    with autograd.record():  # p[1] used twice: its second contribution adds through the bucket's view
        losses = [ap.tanh(ap.tanh(x @ p[0]) @ p[1]).sum() + (p[1] * p[1]).sum() for x, p in zip(xs, replicas)]
    trainer.step(losses)
    tx = [torch.from_numpy(x.numpy()) for x in xs]
    tp = [torch.tensor(b, requires_grad=True) for b in before]
    sum(torch.tanh(torch.tanh(x @ tp[0]) @ tp[1]).sum() + (tp[1] * tp[1]).sum() for x in tx).backward()  # type: ignore[misc]
    for row in replicas:
        for p, t, b in zip(row, tp, before):
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(p.numpy(), b - 0.1 * t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_failed_gradient_on_one_device_fails_every_replica_it_is_summed_into(devices, sums) -> None:  # type: ignore[no-untyped-def]
    replicas, xs = _two_layer(devices)
    trainer = parallel.DataParallel(replicas, parallel.sgd(0.1))

    def broken(t):  # type: ignore[no-untyped-def]
        raise FloatingPointError("bad batch")

    bad = ap.call(broken, xs[1], shape=xs[1].shape)  # device 1's input fails
    with autograd.record():
        losses = [ap.tanh(ap.tanh(x @ p[0]) @ p[1]).sum() for x, p in zip((xs[0], bad), replicas)]
    trainer.step(losses)
    for replica in replicas:  # the sums read device 1's failed gradients: both replicas' updates fail
        for p in replica:
            with pytest.raises(FloatingPointError, match="bad batch"):
                within(60, p.numpy)  # raises, and never hangs
    within(60, ap.waitall)


def test_a_failed_gradient_in_a_bucket_is_not_cleared_by_another_parameters_write(eng, sums) -> None:  # type: ignore[no-untyped-def]
    """Two parameters on independent branches share one bucket. p1's gradient op fails (a value it
    saved was modified in place); p0's, pushed after, writes only its part of the bucket, so it must
    read the rest (the contract's failure rules: a partial write keeps the failure): both updates fail, none runs on a
    gradient that was never written."""
    rng = np.random.default_rng(8)
    (replica,) = parallel.replicate([ap.asarray(rng.standard_normal((4, 3)).astype(np.float32)),
                                     ap.asarray(rng.standard_normal(3).astype(np.float32))], [ap.cpu(0)])  # fmt: skip
    trainer = parallel.DataParallel([replica], parallel.sgd(0.1))
    assert trainer.buckets == [[1, 0]]
    x, c = ap.asarray(rng.standard_normal((2, 4)).astype(np.float32)), ap.asarray(np.ones(3, np.float32))
    with autograd.record():
        loss = (x @ replica[0]).sum() + (replica[1] * c).sum()  # p1's branch recorded last: its gradient is pushed first
    c[0] = 5.0  # multiply saved c for p1's gradient
    trainer.step([loss])
    for p in replica:
        with pytest.raises(RuntimeError, match="modified in place"):
            within(60, p.numpy)
    within(60, ap.waitall)


# -- trust: unused parameters, failed steps, optimizer state per device (issue 16) ---------------


def test_two_sixteen_element_parameters_fill_one_bucket_of_thirty_two() -> None:
    from autopar.parallel._step import _buckets

    params = [ap.zeros(16), ap.zeros(16), ap.zeros(1)]
    assert _buckets(params, 32) == [[2, 1], [0]]  # a bucket holds up to, and including, 32 elements
    assert _buckets(params[:2], 32) == [[1, 0]]
    assert _buckets(params[:2], 31) == [[1], [0]]


def _torch_optimizer(kind: str, params: list[torch.Tensor]) -> torch.optim.Optimizer:
    if kind == "adam":
        return torch.optim.Adam(params, lr=0.05, weight_decay=0.01)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.01)
    return torch.optim.SGD(params, lr=0.1, weight_decay=0.05)


def _ours(kind: str) -> parallel.Optimizer:
    if kind == "adam":
        return parallel.adam(lr=0.05, weight_decay=0.01)
    if kind == "momentum":
        return parallel.sgd(0.1, momentum=0.9, weight_decay=0.01)
    return parallel.sgd(0.1, weight_decay=0.05)


@pytest.mark.parametrize("kind", ["sgd-weight-decay", "momentum", "adam"])
def test_a_parameter_no_loss_reaches_is_not_moved_and_replicas_match_torch_optim(devices, kind: str, sums) -> None:  # type: ignore[no-untyped-def]
    """the contract on data parallelism: a parameter a step's loss does not reach is not moved (torch.optim skips a .grad of
    None: no weight decay, momentum or Adam step for it). It moved by a stale gradient that doubled
    each step (the bucket was summed again). Reached on one device only, it moves everywhere by that
    device's gradient. Oracle: torch.optim on the whole batch; replicas equal bit for bit."""
    rng = np.random.default_rng(9)
    w0 = [rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)]
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(2)]
    replicas = parallel.replicate([ap.asarray(w) for w in w0], devices)
    trainer = parallel.DataParallel(replicas, _ours(kind))
    assert trainer.buckets == [[1, 0]]  # both in one bucket: the unused one's slot is summed too
    tp = [torch.tensor(w, requires_grad=True) for w in w0]
    opt = _torch_optimizer(kind, tp)
    xd = [ap.asarray(x, device=d) for x, d in zip(xs, devices)]
    uses = [(True, True), (False, False), (True, True), (False, False), (True, False)]  # p1 per device, per step
    for step, use in enumerate(uses):
        with autograd.record():
            losses = [ap.tanh(x @ p[0]).sum() + ((p[1] * p[1]).sum() if u else 0.0) for x, p, u in zip(xd, replicas, use)]
        trainer.step(losses)
        opt.zero_grad()  # set_to_none: an unused parameter has no gradient, and torch.optim skips it
        total = sum(torch.tanh(torch.from_numpy(x) @ tp[0]).sum() + ((tp[1] * tp[1]).sum() if u else 0.0)
                    for x, u in zip(xs, use))
        (total / 2).backward()  # type: ignore[union-attr]
        opt.step()
        if not any(use):
            np.testing.assert_array_equal(replicas[0][1].grad.numpy(), np.zeros(3, np.float32))
        for p, t in zip(replicas[0], tp):
            np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
    for a, b in zip(replicas[0], replicas[1]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the replicas never diverge


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
def test_after_a_failed_step_the_next_good_step_succeeds(devices, kind: str, sums) -> None:  # type: ignore[no-untyped-def]
    """the contract on data parallelism/§4.2: a step with a bad label fails the parameters (and optimizer state) it would write;
    once they are restored, the next good step succeeds. The gradient buckets kept the failure
    (every .grad is a partial write of its bucket), so every later step failed, forever. Adam: the
    step count is state too (restored with it), so the failed step does not count: a count kept in
    Python went on counting, and the next good step's bias correction was off torch's."""
    rng = np.random.default_rng(10)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(2)]
    good = [np.array([0, 1]), np.array([2, 0])]
    replicas = parallel.replicate([ap.asarray(w0)], devices)
    ours = parallel.adam(0.05) if kind == "adam" else parallel.sgd(0.1, momentum=0.9 if kind == "momentum" else 0.0)
    trainer = parallel.DataParallel(replicas, ours)
    xd = [ap.asarray(x, device=d) for x, d in zip(xs, devices)]

    def step(labels):  # type: ignore[no-untyped-def]
        ys = [ap.asarray(y, device=d) for y, d in zip(labels, devices)]
        with autograd.record():
            losses = [F.cross_entropy(x @ p[0], y) for x, p, y in zip(xd, replicas, ys)]
        trainer.step(losses)

    step(good)
    kept = [[p.numpy().copy() for p in row] for row in replicas]
    kept_states = [[[s.numpy().copy() for s in state] for state in states] for states in trainer.states]
    step([good[0], np.array([0, 7])])  # device 1's label is out of range
    for row in replicas:
        with pytest.raises(IndexError):
            within(60, row[0].numpy)
    within(60, ap.waitall)  # the one failure was raised by the reads above: not again (contract, failures rule 4)
    for row, values, states, saved in zip(replicas, kept, trainer.states, kept_states):  # restore
        for p, v in zip(row, values):
            ap.asarray(v, device=p.device).copyto(p)
        for state, arrays in zip(states, saved):
            for s, v in zip(state, arrays):
                ap.asarray(v, device=s.device).copyto(s)
    step(good)
    within(60, ap.waitall)
    # the oracle: torch.optim with the two good steps only
    tw = torch.tensor(w0, requires_grad=True)
    opt = torch.optim.Adam([tw], lr=0.05) if kind == "adam" else torch.optim.SGD([tw], lr=0.1, momentum=0.9 if kind == "momentum" else 0.0)
    for _ in range(2):
        opt.zero_grad()
        (sum(TF.cross_entropy(torch.from_numpy(x) @ tw, torch.from_numpy(y)) for x, y in zip(xs, good)) / 2).backward()  # type: ignore[union-attr]
        opt.step()
    for row in replicas:
        np.testing.assert_allclose(row[0].numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_the_next_good_step_succeeds_even_when_pushed_before_the_failure_is_recorded(devices, sums) -> None:  # type: ignore[no-untyped-def]
    """the contract on data parallelism: after a failed step (parameters restored), the next good step succeeds -- also when it
    is pushed before the failure was recorded (here a gate holds the failing op until the good step is
    pushed; on the threaded policy any slow failing op does it). Whether a step clears its buckets
    was decided at push time, from the failure stored *then*: the naive policy (failure recorded
    first) succeeded, the threaded one failed every parameter. Oracle: torch.optim, good steps only."""
    rng = np.random.default_rng(11)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in devices]
    replicas = parallel.replicate([ap.asarray(w0)], devices)
    trainer = parallel.DataParallel(replicas, parallel.sgd(0.1))
    xd = [ap.asarray(x, device=d) for x, d in zip(xs, devices)]

    def step(inputs):  # type: ignore[no-untyped-def]
        with autograd.record():
            trainer.step([ap.tanh(x @ p[0]).sum() for x, p in zip(inputs, replicas)])

    def broken(t):  # type: ignore[no-untyped-def]
        raise FloatingPointError("bad batch")

    step(xd)
    kept = [row[0].numpy().copy() for row in replicas]
    held = ap.asarray(xs[1], device=devices[1])
    gate = Gate(reads=[held._storage.var], writes=[held._storage.var])
    step([xd[0], ap.call(broken, held, shape=held.shape)])  # fails once the gate opens
    for row, value in zip(replicas, kept):  # restored without reading the failure first
        ap.asarray(value, device=row[0].device).copyto(row[0])
    step(xd)
    gate.open()
    with pytest.raises(FloatingPointError, match="bad batch"):
        within(60, ap.waitall)
    tw = torch.tensor(w0, requires_grad=True)
    opt = torch.optim.SGD([tw], lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        (sum(torch.tanh(torch.from_numpy(x) @ tw).sum() for x in xs) / 2).backward()  # type: ignore[union-attr]
        opt.step()
    for row in replicas:
        np.testing.assert_allclose(within(60, row[0].numpy), tw.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [2, 3])
def test_one_op_sums_of_shared_memory_give_the_bits_of_sums_through_copies(eng, n: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """CPU devices of one process sum with one op reading every device's array, no copies: the same
    additions, in device order, as through copies -- the same bits, and NumPy's ``a_0 + a_1 + ...``
    -- for every kind of dtype; parts of arrays (views) sum through copies."""
    from autopar.parallel import _local

    ap.set_cpu_devices(n)
    try:
        rng = np.random.default_rng(n)
        for dtype in ("float16", "float32", "float64", "int8", "int64", "complex64"):
            if dtype.startswith("int"):
                values = [rng.integers(-100, 100, 9).astype(dtype) for _ in range(n)]  # int8: sums wrap
            else:
                values = [(rng.standard_normal(9) * 1e3 + (1j * rng.standard_normal(9) if dtype == "complex64" else 0))
                          .astype(dtype) for _ in range(n)]  # fmt: skip
            want = values[0]
            for v in values[1:]:
                want = want + v
            for sums in ("shared", "copies"):
                arrays = [ap.asarray(v, device=ap.cpu(i)) for i, v in enumerate(values)]
                with monkeypatch.context() as m:
                    if sums == "copies":
                        m.setattr(_local, "shared_memory", lambda arrays: False)
                    with ap.profile() as prof:
                        parallel.allreduce(arrays)
                        ap.waitall()
                for a in arrays:
                    assert a.numpy().tobytes() == want.tobytes(), (dtype, sums, a.numpy(), want)
                if engine.get_engine() == "threaded":
                    ops = [r.name for r in prof.records]
                    assert (ops == ["allreduce sum"]) == (sums == "shared"), (dtype, sums, ops)
        whole = [ap.asarray(np.arange(8.0, dtype=np.float32) * (i + 1), device=ap.cpu(i)) for i in range(n)]
        parts = [a[2:6] for a in whole]
        assert not _local.shared_memory(parts)  # a part of an array: through copies
        parallel.allreduce(parts)
        total = sum(np.arange(8.0, dtype=np.float32) * (i + 1) for i in range(n))
        for i, a in enumerate(whole):
            expect = np.arange(8.0, dtype=np.float32) * (i + 1)
            expect[2:6] = total[2:6]
            np.testing.assert_array_equal(a.numpy(), expect)
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_default_buckets_are_larger_on_cpu_devices_of_one_process(sums) -> None:  # type: ignore[no-untyped-def]
    """LeNet: one bucket where the devices share memory (a bucket's sum is one op of adds there),
    three where a sum goes through copies; an explicit size is kept either way."""
    from autopar.nn import models

    ap.set_cpu_devices(2)
    try:
        devices = [ap.cpu(0), ap.cpu(1)]
        net = models.build("lenet", 0)
        trainer = parallel.DataParallel(parallel.replicate(net.params, devices), parallel.sgd(0.1))
        assert len(trainer.buckets) == (1 if sums == "shared" else 3), trainer.buckets
        trainer = parallel.DataParallel(parallel.replicate(net.params, devices), parallel.sgd(0.1),
                                        bucket_size=parallel.BUCKET_SIZE)  # fmt: skip
        assert len(trainer.buckets) == 3
        single = parallel.DataParallel(parallel.replicate(net.params, devices[:1]), parallel.sgd(0.1))
        assert len(single.buckets) == 3  # one device: nothing to sum
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)
