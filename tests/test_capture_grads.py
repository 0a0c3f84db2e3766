"""autopar.capture with gradients at its edges, against eager execution: several backwards in one
function, .grad dropped or replaced outside, parameters frozen or unfrozen after the trace, gradient
records crossing the function's edge, a data-parallel backward cut across a skip connection."""

from __future__ import annotations

import numpy as np
import pytest

import autopar as ap
from autopar import autograd
from autopar._capture._backends import compiler_available


@pytest.mark.parametrize("req", ["write", "add"])
def test_two_backwards_in_one_function_write_or_add_as_eagerly(req: str) -> None:
    def step(w, X):  # type: ignore[no-untyped-def]
        with autograd.record():
            first = (X * w).sum()
        first.backward()
        with autograd.record():
            second = (X * w * 3).sum()
        second.backward()  # grad_req "write": this backward's gradient replaces the first's
        return first + second

    captured = ap.capture(step, mode="replay")
    X = ap.arange(3.0)
    eager, mine = ap.ones(3), ap.ones(3)
    for w in (eager, mine):
        w.attach_grad(grad_req=req)
    for _ in range(3):
        np.testing.assert_array_equal(captured(mine, X).numpy(), step(eager, X).numpy())
        np.testing.assert_array_equal(mine.grad.numpy(), eager.grad.numpy())
    assert captured.traced == 1


def test_zero_grad_outside_with_an_optimizer_that_pushes_its_own_update() -> None:
    from autopar import nn

    X = ap.asarray(np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32))
    y = ap.asarray(np.arange(16) % 2)

    def setup():  # type: ignore[no-untyped-def]
        ap.random.seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        opt = ap.optim.Adam(net.parameters(), lr=0.01)

        def step(X, y):  # type: ignore[no-untyped-def]
            loss = nn.functional.cross_entropy(net(X), y)
            loss.backward()
            opt.step()
            return loss

        step(X, y)
        return net, opt, step

    (eager_net, eager_opt, eager), (net, opt, step) = setup(), setup()
    captured = ap.capture(step, mode="replay")
    for _ in range(3):
        for o in (eager_opt, opt):
            o.zero_grad()  # .grad = None outside: the call that finds it so traces again, on a .grad made whole
        np.testing.assert_allclose(captured(X, y).numpy(), eager(X, y).numpy(), rtol=1e-6)
    for p, q in zip(eager_net.parameters(), net.parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-6)


def test_the_gradient_mode_is_part_of_the_signature() -> None:
    f = ap.capture(lambda w: w.__isub__(1), mode="replay")
    w = ap.ones(3, requires_grad=True)
    with ap.no_grad():
        f(w)  # allowed under no_grad
    with pytest.raises(RuntimeError, match="leaf that requires grad"):
        f(w)  # not outside it, as eagerly
    assert w.tolist() == [0.0] * 3


def _weighted_sum_step(w, X):  # type: ignore[no-untyped-def]
    loss = (w * X).sum()
    loss.backward()
    return loss


def test_a_grad_assigned_outside_as_a_view_is_written_through_its_view() -> None:
    f = ap.capture(_weighted_sum_step, mode="replay")
    w, X = ap.ones(3, requires_grad=True), ap.arange(3.0)
    f(w, X)
    f(w, X)
    big = ap.zeros((2, 3))
    w.grad = big[1]  # another layout of .grad: traced again
    f(w, X)
    assert big.tolist() == [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]] and f.traced == 2


def test_a_grad_replaced_by_one_of_the_same_layout_gets_the_next_gradients_and_the_old_keeps_its_own() -> None:
    f = ap.capture(_weighted_sum_step, mode="replay")
    w, X = ap.ones(3, requires_grad=True), ap.arange(3.0)
    f(w, X)
    first = w.grad
    for scale in (2.0, 3.0):
        w.grad = ap.zeros(3)  # the same layout: the trace holds, and must write into the new array
        f(w, X * scale)
        assert w.grad.tolist() == [0.0, scale, 2 * scale]
    assert first.tolist() == [0.0, 1.0, 2.0] and f.traced == 1


@pytest.mark.parametrize("first, second", [("write", "add"), ("add", "write"), ("write", "write")])
def test_gradients_written_and_added_into_overlapping_views_land_in_eager_order(first: str, second: str) -> None:
    def step(w1, w2, X):  # type: ignore[no-untyped-def]
        with autograd.record():
            loss = (w1 * X).sum() + (w2 * X * 10).sum()
        loss.backward()
        return loss

    results = []
    for f in (step, ap.capture(step, mode="replay")):
        w1, w2, X = ap.ones(3), ap.ones(3), ap.arange(1.0, 4.0)
        w1.attach_grad(grad_req=first)
        w2.attach_grad(grad_req=second)
        big = ap.zeros(4)
        w1.grad, w2.grad = big[0:3], big[1:4]  # one gradient's writes land in the other's view
        for _ in range(2):
            f(w1, w2, X)
        results.append(big.tolist())
    assert results[1] == results[0]


@pytest.mark.parametrize("req", ["write", "add"])
def test_a_grad_assigned_as_a_reversed_view_gets_its_gradients_in_the_view_order(req: str) -> None:
    def step(w, X):  # type: ignore[no-untyped-def]
        with autograd.record():
            loss = (w * X).sum()
        loss.backward()
        return loss

    results = []
    for f in (step, ap.capture(step, mode="replay")):
        w, X = ap.ones(3), ap.arange(1.0, 4.0)
        w.attach_grad(grad_req=req)
        f(w, X)
        big = ap.zeros(4)
        w.grad = big[::-1][0:3]  # negative strides: the gradient lands in big backwards
        f(w, X)
        f(w, X * 2)
        results.append(big.tolist())
    assert results[1] == results[0] == ([0.0, 6.0, 4.0, 2.0] if req == "write" else [0.0, 9.0, 6.0, 3.0])


def test_overwritten_gradients_in_overlapping_views_never_meet_in_one_foreach_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # torch._foreach_copy_ on a GPU copies all its tensors in one kernel, in no order (its fast route checks
    # devices, dtypes, sizes and strides, not whether two targets overlap); on a CPU it copies one by one.
    # So two targets that share elements must be copied by two calls, in order; disjoint ones by one.
    import torch

    calls: list[list[tuple[int, int]]] = []
    real = torch._foreach_copy_

    def spy(targets, values):  # type: ignore[no-untyped-def]
        calls.append([(t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in targets])
        return real(targets, values)

    def step(w1, w2, w3, w4, X):  # type: ignore[no-untyped-def]
        with autograd.record():
            loss = (w1 * X).sum() + (w2 * X * 10).sum() + (w3 * X * 100).sum() + (w4 * X * 1000).sum()
        loss.backward()
        return loss

    monkeypatch.setattr(torch, "_foreach_copy_", spy)
    results = []
    for f in (step, ap.capture(step, mode="replay")):
        ws, X = [ap.ones(3) for _ in range(4)], ap.arange(1.0, 4.0)
        for w in ws:
            w.attach_grad()
        big, flat = ap.zeros(4), ap.zeros(6)
        ws[0].grad, ws[1].grad = big[0:3], big[1:4]  # overlapping
        ws[2].grad, ws[3].grad = flat[0:3], flat[3:6]  # disjoint (a bucket's gradients)
        calls.clear()
        for _ in range(2):
            f(*ws, X)
        results.append((big.tolist(), flat.tolist()))
    assert results[1] == results[0]
    for spans in calls:
        for i, (lo, hi) in enumerate(spans):
            assert all(hi2 <= lo or hi <= lo2 for lo2, hi2 in spans[:i]), "overlapping targets in one foreach copy"
    assert max(len(spans) for spans in calls) >= 2  # the disjoint ones still go together


def _two_weight_step(w1, w2, X):  # type: ignore[no-untyped-def]
    loss = (w1 * X + w2 * X * 2).sum()
    loss.backward()
    return loss


def test_an_argument_that_starts_to_require_grad_traces_again() -> None:
    f = ap.capture(_two_weight_step, mode="replay")
    w1, w2, X = ap.ones(3, requires_grad=True), ap.ones(3), ap.arange(3.0)
    f(w1, w2, X)
    w2.requires_grad_()
    f(w1, w2, X)
    assert w2.grad is not None and w2.grad.tolist() == [0.0, 2.0, 4.0] and f.traced == 2


@pytest.mark.parametrize("change", ["freeze", "unfreeze"])
def test_a_closed_over_parameter_frozen_or_unfrozen_after_the_trace_is_seen(change: str) -> None:
    w1, w2, X = ap.ones(3, requires_grad=True), ap.ones(3, requires_grad=change == "freeze"), ap.arange(3.0)
    f = ap.capture(lambda X: _two_weight_step(w1, w2, X), mode="replay")
    f(X)
    f(X)
    old = w2.grad
    if change == "freeze":
        old[...] = 0
    w2.requires_grad_(change == "unfreeze")
    f(X)
    if change == "freeze":
        assert w2.grad is None and old.tolist() == [0.0] * 3  # no longer written, as eagerly
    else:
        assert w2.grad is not None and w2.grad.tolist() == [0.0, 2.0, 4.0]
    assert w1.grad.tolist() == [0.0, 3.0, 6.0]  # (three backwards added into the first's)


def test_arrays_with_a_gradient_record_from_outside_are_refused() -> None:
    w = ap.ones(3, requires_grad=True)
    h = w * 2  # recorded outside
    with pytest.raises(ap.CaptureError, match="made by a recorded operation outside the function"):
        ap.capture(lambda x: x + h)(ap.ones(3))
    with pytest.raises(ap.CaptureError, match="computed by a recorded operation"):
        ap.capture(lambda x: x + 1)(h)


def test_a_direct_update_of_an_argument_is_refused() -> None:
    w, X = ap.ones(3, requires_grad=True), ap.arange(3.0)
    opt = ap.optim.Adam([w], lr=0.1)

    def step(w, X):  # type: ignore[no-untyped-def]
        loss = (w * X).sum()
        loss.backward()
        opt.step()  # its update is an engine op of its own, bound to w
        return loss

    step(w, X)
    with pytest.raises(ap.CaptureError, match="adam update is an engine op bound to this call's arrays"):
        ap.capture(step)(w, X)


def _skip_loss(params, x, t):  # type: ignore[no-untyped-def]
    from autopar.nn import functional as F

    x0 = ap.matmul(x, params[0])
    h1 = ap.matmul(ap.tanh(x0), params[1])
    out = ap.matmul(ap.tanh(h1), params[2]) + ap.matmul(x0, params[3])  # x0 skips over the cut before params[1]
    return F.cross_entropy(out, t)


def test_a_data_parallel_backward_with_a_skip_connection_over_a_bucket_cut() -> None:
    from autopar import parallel

    ap.set_cpu_devices(2)
    try:
        devices = [ap.cpu(0), ap.cpu(1)]
        rng = np.random.default_rng(3)
        params = [ap.asarray(rng.standard_normal(s).astype(np.float32)) for s in ((8, 6), (6, 5), (5, 4), (6, 4))]
        X, y = rng.standard_normal((10, 8)).astype(np.float32), rng.integers(0, 4, 10)
        trainers = [parallel.DataParallel(parallel.replicate(params, devices), parallel.sgd(lr=0.1), bucket_size=25,
                                          capture=c) for c in (False, "replay")]  # fmt: skip
        for _ in range(3):
            want, got = (t.step_batch(_skip_loss, X, y) for t in trainers)
            np.testing.assert_array_equal([g.item() for g in got], [w.item() for w in want])
        for e, m in zip(*(t.replicas for t in trainers)):
            for a, b in zip(e, m):
                np.testing.assert_array_equal(b.numpy(), a.numpy())
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_the_tracing_call_returns_results_without_a_gradient_record_like_every_later_call() -> None:
    fwd = ap.capture(lambda w, X: (w * X).sum(), mode="replay")
    w, X = ap.ones(3), ap.arange(3.0)
    w.attach_grad()
    for _ in range(2):  # the first call traces; both return what the contract says: no record
        with autograd.record():
            loss = fwd(w, X)
        with pytest.raises(RuntimeError, match="does not require grad"):
            loss.backward()
        assert loss.item() == 3.0


def test_a_leaf_alias_is_kept_with_its_array_while_the_array_keeps_its_tensor() -> None:
    import torch

    from autopar._capture._leaves import kept_alias

    w = ap.ones(3)
    storage = w._storage
    ap.waitall()
    env = [storage.tensor]
    first = kept_alias(env, {}, [storage], 0)
    assert first.requires_grad and first.data_ptr() == storage.tensor.data_ptr() and first.grad_fn is None
    assert kept_alias(env, {}, [storage], 0) is first  # the next call: the same leaf, no new detach
    storage.tensor = torch.zeros(3)  # (a tensor of its own: what a leaf alias must follow)
    again = kept_alias([storage.tensor], {}, [storage], 0)
    assert again is not first and again.data_ptr() == storage.tensor.data_ptr()
    assert kept_alias(env, {}, None, 0) is not first  # no storages (a compiled segment's warm-up): fresh


@pytest.mark.skipif(bool(compiler_available()), reason="torch.compile cannot run here")
def test_a_compiled_leaf_follows_its_tensor_set_to_other_memory_between_calls_as_eagerly() -> None:
    # w.torch() is the array's own tensor: set_ points it (and so the array) at other memory, which the next
    # call reads eagerly -- a leaf alias kept from the call before still sees the old memory
    import torch
    import torch._inductor.config

    def step(w, X):  # type: ignore[no-untyped-def]
        with autograd.record():
            loss = (X * w * w).sum()
        loss.backward()
        return loss

    results = []
    with torch._inductor.config.patch(compile_threads=1):
        for f in (step, ap.capture(step, mode="compile")):
            w, X = ap.ones(3), ap.arange(1.0, 4.0)
            w.attach_grad()
            f(w, X)
            f(w, X)
            ap.waitall()  # (nothing pending reads the old memory)
            w.torch().set_(torch.full((3,), 5.0))
            results.append((f(w, X).item(), w.grad.tolist()))
    assert results[1] == results[0] == (150.0, [10.0, 20.0, 30.0])
    assert f.traces[0].backend == "compile"
