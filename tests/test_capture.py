"""autopar.capture against eager execution: randomized programs, gradients, re-tracing, the errors
raised at trace time, failures and Ctrl-C inside a captured op (replay: no compiler needed)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import autopar as ap
from autopar import autograd


@pytest.fixture(autouse=True, params=["threaded", "naive"])
def _engine(request):  # type: ignore[no-untyped-def]
    ap.engine.set_engine(request.param)
    yield request.param
    try:
        ap.waitall()
    except BaseException:
        pass
    ap.engine.set_engine("threaded")


# -- randomized programs --------------------------------------------------------------------------


def _program(seed: int):  # type: ignore[no-untyped-def]
    """A random straight-line program over three 4x4 float32 arrays: out-of-place and in-place ops,
    writes through views, reductions, transposes, products; it returns some results."""
    r = random.Random(seed)
    lines = []
    for _ in range(r.randint(4, 12)):
        a, b = r.choice("xyzt"), r.choice("xyz")
        c = r.random()
        if c < 0.15:
            lines.append(f"t = {a} * {b} + {r.choice([1, 2.5, -1])}")
        elif c < 0.30:
            lines.append(f"{r.choice('xyz')} += {a} * 0.5")
        elif c < 0.40:
            lines.append(f"{r.choice('xyz')}[1:] = {b}[:-1] - 1")
        elif c < 0.50:
            lines.append(f"t = ap.tanh({a}.T) - {b}.mean(axis=0)")
        elif c < 0.60:
            lines.append(f"t = ap.matmul({a}, {b}) / 4")
        elif c < 0.70:
            lines.append(f"{r.choice('xyz')} *= ap.exp(-ap.abs({a}))")
        elif c < 0.80:
            lines.append(f"t = {a}.sum(axis=1, keepdims=True) + {b}[::-1]")
        elif c < 0.90:
            lines.append(f"{r.choice('xyz')}[:, 0] = {a}[:, 1]")
        else:
            lines.append(f"t = ap.maximum({a}, {b}) - ap.where({a} > 0, {b}, 0.0)")
    source = "def f(x, y, z):\n    t = x + y\n" + "".join(f"    {line}\n" for line in lines) + "    return t, (x.sum(), z[2])\n"
    namespace: dict = {"ap": ap}
    exec(source, namespace)
    return namespace["f"], source


def _inputs(seed: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    return [ap.asarray(rng.standard_normal((4, 4)).astype(np.float32)) for _ in range(3)]


def _values(tree):  # type: ignore[no-untyped-def]
    flat = [tree[0], *tree[1]]
    return [a.numpy() for a in flat]


@pytest.mark.parametrize("seed", range(8))
def test_random_programs_match_eager_call_after_call(seed: int) -> None:
    f, source = _program(seed)
    captured = ap.capture(f, mode="replay")
    eager_args, captured_args = _inputs(seed), _inputs(seed)
    for call in range(3):
        want = _values(f(*eager_args))
        got = _values(captured(*captured_args))
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, err_msg=f"call {call} of\n{source}")
        for w, g in zip(eager_args, captured_args):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6, err_msg=f"args after {call}\n{source}")
    assert captured.traced == 1 and len(captured.traces) == 1


def test_one_engine_op_per_call_named_after_the_function() -> None:
    @ap.capture(mode="replay")
    def step(x, y):  # type: ignore[no-untyped-def]
        for _ in range(10):
            x += 2 * y
        return x.sum()

    x, y = ap.zeros(8), ap.ones(8)
    step(x, y)  # traced (eager)
    ap.waitall()
    with ap.profile() as prof:
        total = step(x, y)
        ap.waitall()
    names = [r.name for r in prof.records]
    assert names == ["step (captured: 21 ops, replay)"], names
    assert total.item() == 320.0 and x.numpy()[0] == 40.0
    assert "replay" in repr(step) and "1 of at most 8 traces" in repr(step)


def test_closed_over_arrays_are_read_and_written_by_each_call() -> None:
    w = ap.ones(3)
    count = ap.zeros(())

    @ap.capture(mode="replay")
    def f(x):  # type: ignore[no-untyped-def]
        count[...] = count + 1
        return x * w

    x = ap.arange(3.0)
    f(x)
    w[:] = 2.0  # seen by the next call: the captured array is read, not its value at trace time
    np.testing.assert_array_equal(f(x).numpy(), [0.0, 2.0, 4.0])
    f(x)
    assert count.item() == 3.0


def test_random_draws_follow_the_generator_as_eagerly() -> None:
    draw = ap.capture(lambda n: ap.random.uniform(size=(n,)) * 2, mode="replay")
    ap.random.seed(3)
    got = [draw(3).numpy() for _ in range(3)]
    ap.random.seed(3)
    want = [(ap.random.uniform(size=(3,)) * 2).numpy() for _ in range(3)]
    np.testing.assert_array_equal(got, want)


# -- re-tracing ------------------------------------------------------------------------------------


def test_a_new_signature_traces_again_and_the_cache_is_bounded() -> None:
    f = ap.capture(lambda x, k: x * k + 1, mode="replay", max_traces=2)
    a = ap.ones(3)
    f(a, 2)
    f(a, 2)
    assert f.traced == 1
    f(a, 3)  # another value of a non-array argument
    f(ap.ones(4), 3)  # another shape: the first trace is dropped (least recently used)
    f(ap.ones(4, dtype="float64"), 3)  # another dtype
    assert f.traced == 4 and len(f.traces) == 2
    f(a, 2)  # dropped: traced again
    assert f.traced == 5
    np.testing.assert_array_equal(f(a, 2).numpy(), [3.0, 3.0, 3.0])
    assert f(a, 1.0).dtype == ap.float32 and f.traced == 6  # 1.0 is not 1: its own signature


def test_max_traces_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPAR_CAPTURE_TRACES", "3")
    assert ap.capture(lambda x: x).max_traces == 3
    monkeypatch.setenv("AUTOPAR_CAPTURE_TRACES", "0")
    with pytest.raises(ValueError, match="AUTOPAR_CAPTURE_TRACES='0'"):
        ap.capture(lambda x: x)
    with pytest.raises(ValueError, match="max_traces=0"):
        ap.capture(lambda x: x, max_traces=0)
    with pytest.raises(ValueError, match="mode='fast'"):
        ap.capture(lambda x: x, mode="fast")


# -- errors at trace time -------------------------------------------------------------------------


@pytest.mark.parametrize("read", ["float(x.sum())", "bool(x[0] > 0)", "x.numpy()", "x.item() if x.size == 1 else x.tolist()"])
def test_reading_a_value_while_tracing_names_the_line_and_the_fix(read: str) -> None:
    namespace: dict = {}
    exec(f"def f(x):\n    y = x + 1\n    v = {read}\n    return y\n", namespace)
    f = ap.capture(namespace["f"])
    with pytest.raises(ap.CaptureError, match=r"reads the value .* at <string>:3.*autopar.where") as info:
        f(ap.ones(2))
    assert "static" in str(info.value)
    assert f.traces == []


def test_branching_on_a_value_raises_and_a_static_argument_is_the_fix() -> None:
    def relu_or_not(x, flag):  # type: ignore[no-untyped-def]
        if flag:
            return ap.maximum(x, 0.0)
        return x

    def bad(x):  # type: ignore[no-untyped-def]
        if x.sum() > 0:  # this line is named
            return x
        return -x

    with pytest.raises(ap.CaptureError, match=r"test_capture.py:\d+ \(if x.sum\(\) > 0:"):
        ap.capture(bad)(ap.ones(2))
    f = ap.capture(relu_or_not, mode="replay")
    x = ap.asarray([-1.0, 2.0])
    assert f(x, True).tolist() == [0.0, 2.0] and f(x, False).tolist() == [-1.0, 2.0] and f.traced == 2


def test_data_dependent_shapes_and_unhashable_arguments_raise() -> None:
    with pytest.raises(ap.CaptureError, match="nonzero's result shape depends on the values"):
        ap.capture(lambda x: ap.nonzero(x))(ap.ones(3))
    with pytest.raises(ap.CaptureError, match="list.*not hashable|not hashable"):
        ap.capture(lambda x, n: x)(ap.ones(2), np.ones(2))


# -- gradients ------------------------------------------------------------------------------------


def _params(seed: int, style: str):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    w = ap.asarray(rng.standard_normal((3, 2)).astype(np.float32))
    b = ap.zeros(2)
    for p in (w, b):
        p.attach_grad() if style == "mxnet" else p.requires_grad_()
    return w, b


@pytest.mark.parametrize("style", ["mxnet", "torch"])
def test_a_training_step_with_backward_and_update_matches_eager(style: str) -> None:
    def step(w, b, X, y):  # type: ignore[no-untyped-def]
        if style == "mxnet":
            with autograd.record():
                loss = ((ap.tanh(ap.matmul(X, w) + b) - y) ** 2).mean()
            loss.backward()
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        else:
            loss = ((ap.tanh(ap.matmul(X, w) + b) - y) ** 2).mean()
            loss.backward()
            with ap.no_grad():
                w -= 0.1 * w.grad
                b -= 0.1 * b.grad
        return loss

    captured = ap.capture(step, mode="replay")
    rng = np.random.default_rng(1)
    X = ap.asarray(rng.standard_normal((8, 3)).astype(np.float32))
    y = ap.asarray(rng.standard_normal((8, 2)).astype(np.float32))
    eager, mine = _params(0, style), _params(0, style)
    for i in range(4):
        want, got = step(*eager, X, y), captured(*mine, X, y)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
        for e, m in zip(eager, mine):
            np.testing.assert_allclose(m.numpy(), e.numpy(), rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(m.grad.numpy(), e.grad.numpy(), rtol=1e-6, atol=1e-7)
        if style == "torch" and i == 1:  # zero_grad(set_to_none): the captured call makes .grad again
            for p in (*eager, *mine):
                p.grad = None
    assert captured.traced == 1


# -- failures and Ctrl-C inside a captured op ------------------------------------------------------


class Broken(ArithmeticError):
    pass


def test_a_failure_inside_fails_every_array_the_captured_op_writes() -> None:
    fail = [False]

    def maybe(t):  # type: ignore[no-untyped-def]
        if fail[0]:
            raise Broken("the kernel broke")
        return t

    @ap.capture(mode="replay")
    def f(x, y):  # type: ignore[no-untyped-def]
        x += 1
        z = ap.call(maybe, y, shape=y.shape) * 2
        return z, x.sum()

    x, y, other = ap.zeros(2), ap.ones(2), ap.ones(2)
    f(x, y)
    fail[0] = True
    z, s = f(x, y)
    for written in (z, s, x):
        with pytest.raises(Broken, match="the kernel broke"):
            written.numpy()
    assert y.tolist() == [1.0, 1.0] and (other + 1).tolist() == [2.0, 2.0]  # read only / untouched: fine
    fail[0] = False
    x2 = ap.zeros(2)
    z2, s2 = f(x2, y)  # the engine goes on
    assert z2.tolist() == [2.0, 2.0] and s2.item() == 2.0


def test_ctrl_c_inside_a_captured_op_is_stored_on_its_writes_and_the_engine_goes_on(_engine: str) -> None:
    interrupt = [False]

    def maybe(t):  # type: ignore[no-untyped-def]
        if interrupt[0]:
            raise KeyboardInterrupt
        return t + 1

    f = ap.capture(lambda x: ap.call(maybe, x, shape=x.shape) * 3, mode="replay")
    x = ap.ones(2)
    f(x)
    interrupt[0] = True
    try:
        out = f(x)
    except KeyboardInterrupt:  # the naive policy runs the op on this thread: raised here, and stored
        assert _engine == "naive"
    else:
        with pytest.raises(KeyboardInterrupt):
            out.numpy()
    interrupt[0] = False
    assert f(x).tolist() == [6.0, 6.0]


# -- the backends ---------------------------------------------------------------------------------


def test_compile_fuses_a_loop_and_says_so(_engine: str) -> None:
    if _engine == "naive":
        pytest.skip("one compile is enough (torch.compile takes seconds here)")
    pytest.importorskip("torch._inductor")
    from autopar._capture import _backends

    if _backends.compiler_available():
        pytest.skip(_backends.compiler_available())

    def loop(x, y):  # type: ignore[no-untyped-def]
        for _ in range(5):
            x += 2 * y
        return ap.tanh(x) - 1

    f = ap.capture(loop, mode="compile")
    x, y, xe = ap.zeros(16), ap.arange(16.0), ap.zeros(16)
    for _ in range(3):
        got, want = f(x, y), loop(xe, y)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(x.numpy(), xe.numpy(), rtol=1e-6)
    assert f.traces[0].backend == "compile" and "compile" in repr(f)
    with ap.profile() as prof:
        f(x, y)
        ap.waitall()
    assert [r.name for r in prof.records] == ["loop (captured: 12 ops, compile)"]


def test_without_a_compiler_it_replays_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from autopar._capture import _backends

    monkeypatch.setattr(_backends, "compiler_available", lambda: "no C compiler found (inductor needs one on CPU)")
    f = ap.capture(lambda x: ap.exp(x) + x * 2)
    x = ap.ones(3)
    f(x)
    assert f(x).tolist() == pytest.approx([np.e + 2] * 3)
    assert f.traces[0].backend == "replay" and "no C compiler" in repr(f)
    monkeypatch.undo()
    g = ap.capture(lambda n: ap.random.uniform(size=(n,)) + 1)  # random draws: replayed, said
    g(2)
    assert g.traces[0].backend == "replay" and "random" in repr(g)


def test_gradients_through_views_of_leaves_and_of_recorded_results() -> None:
    def loss_of(X, w):  # type: ignore[no-untyped-def]
        h = ap.matmul(X[:, :3], w[1:].T)  # a view of the leaf, a view of an argument
        return (h.reshape(-1) ** 2).sum() + (w[0] * 2).sum()  # a view of a recorded result

    def step(X, w):  # type: ignore[no-untyped-def]
        with autograd.record():
            loss = loss_of(X, w)
        loss.backward()
        return loss

    captured = ap.capture(step, mode="replay")
    X = ap.arange(8.0).reshape(2, 4)
    eager_w, mine = ap.ones((3, 3)) * 0.5, ap.ones((3, 3)) * 0.5
    for w in (eager_w, mine):
        w.attach_grad()
    for _ in range(2):
        np.testing.assert_allclose(captured(X, mine).numpy(), step(X, eager_w).numpy(), rtol=1e-6)
        np.testing.assert_allclose(mine.grad.numpy(), eager_w.grad.numpy(), rtol=1e-6)
    assert np.abs(mine.grad.numpy()).sum() > 0


def test_a_data_parallel_step_is_captured_and_its_backward_cut_at_gradient_buckets() -> None:
    from autopar import parallel
    from autopar.nn import functional as F, models

    ap.set_cpu_devices(2)
    try:
        devices = [ap.cpu(0), ap.cpu(1)]
        rng = np.random.default_rng(0)
        X = ap.asarray(rng.standard_normal((8, 1, 28, 28)).astype(np.float32))
        y = ap.asarray(rng.integers(0, 10, 8))

        def setup():  # type: ignore[no-untyped-def]
            net = models.build("lenet", 0)
            replicas = parallel.replicate(net.params, devices)
            # (the buckets of devices that copy to sum, as GPUs do: on CPU devices of one process a
            # bucket is larger by default, and LeNet one bucket)
            trainer = parallel.DataParallel(replicas, parallel.sgd(lr=0.1), bucket_size=parallel.BUCKET_SIZE)

            def train_batch(X, y):  # type: ignore[no-untyped-def]
                Xs, ys = parallel.split_and_load(X, devices), parallel.split_and_load(y, devices)
                with autograd.record():
                    losses = [F.cross_entropy(net(x, p), t) for x, t, p in zip(Xs, ys, replicas)]
                trainer.step(losses)
                return losses

            return replicas, train_batch

        eager, eager_step = setup()
        mine, step = setup()
        captured = ap.capture(step, mode="replay")
        for _ in range(3):
            want, got = eager_step(X, y), captured(X, y)
            np.testing.assert_array_equal([g.item() for g in got], [w.item() for w in want])
        for e, m in zip(eager, mine):
            for a, b in zip(e, m):
                np.testing.assert_array_equal(b.numpy(), a.numpy())
        # LeNet's three buckets: the fully connected layers' two (fc1's weight and bias fall in two
        # buckets: one piece), then the convolutions' -- two pieces of backward on each device
        with ap.profile() as prof:
            captured(X, y)
            ap.waitall()
        compute = [(r.device, r.name) for r in prof.records if r.lane == "compute" and "captured" in r.name]
        for d in ("cpu:0", "cpu:1"):
            mine_ = [name for dev, name in compute if dev == d]
            assert mine_[:2] == ["train_batch (captured: 18 ops, replay)", "train_batch (captured: 4 ops, replay)"], mine_
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_two_devices_get_one_engine_op_each_and_the_copy_its_own() -> None:
    ap.set_cpu_devices(2)
    try:
        @ap.capture(mode="replay")
        def f(a, b):  # type: ignore[no-untyped-def]
            a += 1
            b *= 2
            return a.to(ap.cpu(1), non_blocking=True) + b

        a, b = ap.ones(4), ap.ones(4, device=ap.cpu(1))
        f(a, b)
        ap.waitall()
        with ap.profile() as prof:
            out = f(a, b)
            ap.waitall()
        ops = sorted((r.device, r.lane) for r in prof.records if "captured" in r.name)
        assert ops == [("cpu:0", "compute"), ("cpu:1", "compute"), ("cpu:1", "compute"), ("cpu:1", "copy")], ops
        assert out.device == ap.cpu(1) and out.tolist() == [7.0] * 4 and b.tolist() == [4.0] * 4
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_fastest_keeps_a_compiled_segment_only_where_it_runs_faster_and_auto_always_keeps_it() -> None:
    import time

    from autopar._capture._backends import Backend

    def quick(*tensors, shared=None, storages=None):  # type: ignore[no-untyped-def]
        return tensors

    def slow(*tensors, shared=None, storages=None):  # type: ignore[no-untyped-def]
        time.sleep(0.01)  # a compiled segment that loses (not synchronisation: a cost)
        return tensors

    fastest = Backend(quick, "compile", lambda: slow, choose=True)
    fastest(1)
    assert fastest.kind == "replay" and "not faster" in fastest.reason
    kept = Backend(quick, "compile", lambda: slow)  # mode="auto" or "compile": fused where a compiler is
    kept(1)
    assert kept.kind == "compile" and kept.reason == ""
    faster = Backend(slow, "compile", lambda: quick, choose=True)
    faster(1)
    assert faster.kind == "compile"


def test_exit_with_captured_calls_pending_finishes_them(_engine: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    if _engine == "naive":
        pytest.skip("the naive policy runs each op at its push: nothing is pending at exit")
    import subprocess
    import sys

    out = tmp_path / "x.npy"
    script = f"""
import numpy as np, autopar as ap
f = ap.capture(lambda x: x.__iadd__(ap.tanh(x) * 0 + 1), mode="replay")
x = ap.zeros(1000)
for _ in range(50):
    f(x)
ap.call(lambda t: np.save({str(out)!r}, t.numpy()) or t, x, shape=x.shape)
"""  # exits with the calls (and the save) still pending
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert np.load(out).tolist() == [50.0] * 1000


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_module_and_optimizer_step_with_zero_grad_inside_matches_eager(optimizer: str) -> None:
    from autopar import nn

    X = ap.asarray(np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32))
    y = ap.asarray(np.arange(16) % 2)

    def setup():  # type: ignore[no-untyped-def]
        ap.random.seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        opt = ap.optim.SGD(net.parameters(), lr=0.1, momentum=0.9) if optimizer == "sgd" else \
            ap.optim.Adam(net.parameters(), lr=0.01)  # (Adam's step count is array state: captured)

        def step(X, y):  # type: ignore[no-untyped-def]
            opt.zero_grad()  # .grad = None inside the function: each replayed backward writes it afresh
            loss = nn.functional.cross_entropy(net(X), y)
            loss.backward()
            opt.step()
            return loss

        step(X, y)  # one step first: the optimizer makes its momentum buffers (Python state) outside the capture
        return net, step

    (eager_net, eager), (net, step) = setup(), setup()
    captured = ap.capture(step, mode="replay")
    for _ in range(4):
        np.testing.assert_allclose(captured(X, y).numpy(), eager(X, y).numpy(), rtol=1e-6)
    for p, q in zip(eager_net.parameters(), net.parameters()):
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ap.CaptureError, match="assigning an array to .grad"):
        ap.capture(lambda p: setattr(p, "grad", ap.zeros(2)))(ap.ones(2, requires_grad=True))


def test_a_backward_across_devices_inside_the_function_raises_with_the_fix() -> None:
    ap.set_cpu_devices(2)
    try:
        w = ap.ones(3, requires_grad=True)

        def step(x):  # type: ignore[no-untyped-def]
            loss = (w.to(ap.cpu(1)) * x).sum()  # the gradient would flow back from cpu:1 to cpu:0
            loss.backward()
            return loss

        with pytest.raises(ap.CaptureError, match=r"from one device to another .*parallel.DataParallel"):
            ap.capture(step)(ap.ones(3, device=ap.cpu(1)))
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def _mlp_loss(params, x, t):  # type: ignore[no-untyped-def]
    from autopar.nn import functional as F

    return F.cross_entropy(ap.matmul(ap.tanh(ap.matmul(x, params[0])), params[1]), t)


def test_data_parallel_capture_true_captures_step_batch_and_cuts_backward_per_bucket() -> None:
    from autopar import parallel

    ap.set_cpu_devices(2)
    try:
        devices = [ap.cpu(0), ap.cpu(1)]
        rng = np.random.default_rng(3)
        params = [ap.asarray(rng.standard_normal(s).astype(np.float32)) for s in ((8, 6), (6, 4))]
        X = rng.standard_normal((10, 8)).astype(np.float32)
        y = rng.integers(0, 4, 10)
        trainers = [parallel.DataParallel(parallel.replicate(params, devices), parallel.sgd(lr=0.1, momentum=0.9),
                                          bucket_size=30, capture=c) for c in (False, "replay")]  # fmt: skip
        for _ in range(3):
            want, got = (t.step_batch(_mlp_loss, X, y) for t in trainers)
            np.testing.assert_array_equal([g.item() for g in got], [w.item() for w in want])
        for e, m in zip(*(t.replicas for t in trainers)):
            for a, b in zip(e, m):
                np.testing.assert_array_equal(b.numpy(), a.numpy())
        captured = trainers[1]._batch_step
        assert captured.traced == 1
        with ap.profile() as prof:
            trainers[1].step_batch(_mlp_loss, X, y)
            ap.waitall()
        names = [r.name for r in prof.records if r.device == "cpu:0" and r.lane == "compute"]
        # forward and the last layer's backward, then the first layer's: two engine ops of backward per device
        assert names[:2] == ["DataParallel.step_batch (captured: 5 ops, replay)",
                             "DataParallel.step_batch (captured: 1 ops, replay)"], names
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_a_failed_input_fails_what_the_captured_op_writes_and_an_overwrite_clears_it() -> None:
    def explode(t):  # type: ignore[no-untyped-def]
        raise Broken("bad input")

    @ap.capture(mode="replay")
    def f(x, out):  # type: ignore[no-untyped-def]
        out[...] = x * 2  # a whole write: it reads nothing of out
        return x + 1

    good, out = ap.ones(2), ap.zeros(2)
    f(good, out)
    bad = ap.call(explode, good, shape=(2,))
    result = f(bad, out)
    for failed in (result, out):
        with pytest.raises(Broken, match="bad input"):
            failed.numpy()
    assert f(good, out).tolist() == [2.0, 2.0] and out.tolist() == [2.0, 2.0]  # the overwrite clears out's failure


def test_a_cached_trace_keeps_no_intermediate_of_its_eager_run_alive() -> None:
    import gc
    import weakref

    seen = []

    def f(x):  # type: ignore[no-untyped-def]
        h = ap.exp(x) * 2
        seen.append(weakref.ref(h._storage))
        return h.sum()

    captured = ap.capture(f, mode="replay")
    captured(ap.ones(1000))
    ap.waitall()
    gc.collect()
    assert len(captured.traces) == 1 and seen[0]() is None


# -- on a GPU (skipped here: none on the development machine) -------------------------------------


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.cuda
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("mode", ["replay", "compile"])
def test_a_training_step_captured_on_a_gpu_matches_eager(mode: str, _engine: str) -> None:
    if _engine == "naive" and mode == "compile":
        pytest.skip("one compile per mode is enough")
    gpu = ap.gpu(0)

    def step(w, X, y):  # type: ignore[no-untyped-def]
        with autograd.record():
            loss = ((ap.tanh(ap.matmul(X, w)) - y) ** 2).mean()
        loss.backward()
        w -= 0.1 * w.grad
        for _ in range(5):
            X += 0.01  # an elementwise chain on the same stream (compile: CUDA graphs, reduce-overhead)
        return loss

    rng = np.random.default_rng(0)
    host = [rng.standard_normal(s).astype(np.float32) for s in ((3, 2), (8, 3), (8, 2))]
    eager_args = [ap.asarray(h, device=gpu) for h in host]
    mine = [ap.asarray(h, device=gpu) for h in host]
    for w in (eager_args[0], mine[0]):
        w.attach_grad()
    captured = ap.capture(step, mode=mode)
    for _ in range(4):
        np.testing.assert_allclose(captured(*mine).numpy(), step(*eager_args).numpy(), rtol=1e-4, atol=1e-5)
    for e, m in zip(eager_args, mine):
        np.testing.assert_allclose(m.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)
    assert captured.traces[0].backend in ("replay", "compile")
