"""A compiled training segment that is a forward and the backward of its loss runs as one graph
(``_capture/_joint.py``): against eager execution, its fallback to the staged compile, and the lock
that keeps a trace away from compiled calls on other threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import autopar as ap
from autopar._capture import _joint
from autopar._capture._backends import compiler_available

from _helpers import trains_as_eagerly


def _mlp_loss(p, x, t):  # type: ignore[no-untyped-def]
    from autopar.nn import functional as F

    return F.cross_entropy(F.linear(F.relu(F.linear(x, p[0], p[1])), p[2], p[3]), t)


def _trainer(capture: bool):  # type: ignore[no-untyped-def]
    from autopar import parallel

    rng = np.random.default_rng(2)
    params = [ap.asarray((rng.standard_normal(s) * 0.3).astype(np.float32)) for s in [(16, 12), (16,), (4, 16), (4,)]]
    replicas = parallel.replicate(params, [ap.cpu(0), ap.cpu(1)])
    return replicas, parallel.DataParallel(replicas, parallel.sgd(lr=0.1), capture=capture)


def _joint_drivers(trainer) -> list[bool]:  # type: ignore[no-untyped-def]
    (program,) = trainer._batch_step.traces
    return [seg.run._compiled.joint() for seg in program.segments
            if seg.run.kind == "compile" and hasattr(seg.run._compiled, "joint")]  # fmt: skip


@pytest.mark.skipif(bool(compiler_available()), reason="torch.compile cannot run here")
@pytest.mark.parametrize("traceable", [True, False])
def test_each_devices_forward_and_backward_run_as_one_graph_as_eagerly(traceable: bool, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import torch._inductor.config
    from torch.fx.experimental import proxy_tensor

    if not traceable:  # make_fx refuses the segment: the staged compile runs it, with the same results
        def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
            raise RuntimeError("make_fx cannot trace this")

        monkeypatch.setattr(proxy_tensor, "make_fx", refuse)
    entered = []
    real_call = _joint.calls.call

    def counted():  # type: ignore[no-untyped-def]
        entered.append(threading.get_ident())
        return real_call()

    monkeypatch.setattr(_joint.calls, "call", counted)
    with torch._inductor.config.patch(compile_threads=1):
        ap.set_cpu_devices(2)
        try:
            mine, trainer = _trainer(True)
            trains_as_eagerly(_trainer(False), (mine, trainer), _mlp_loss)
            assert _joint_drivers(trainer) == [traceable, traceable]  # one per device
            assert len(set(entered)) >= 2  # every compiled call, on each lane, claims the lock
        finally:
            ap.waitall()
            ap.set_cpu_devices(1)


@pytest.mark.skipif(bool(compiler_available()), reason="torch.compile cannot run here")
@pytest.mark.parametrize("twice", [False, True])
def test_a_captured_forward_and_backward_adds_into_grad_views_as_eagerly(twice: bool) -> None:  # type: ignore[no-untyped-def]
    # No update in the step: the segment is the forward and its backward alone (one graph), the
    # gradients added into views of one buffer; with a second backward over the retained graph the
    # segment is not that shape, and the staged compile runs it (both backwards).
    import torch._inductor.config

    from autopar import autograd

    def step(X, w, b):  # type: ignore[no-untyped-def]
        with autograd.record():
            loss = ((ap.tanh(ap.matmul(X, w) + b) * w.sum() - 1) ** 2).mean()
        loss.backward(retain_graph=twice)
        if twice:
            loss.backward()
        return loss

    def params():  # type: ignore[no-untyped-def]
        w = ap.asarray(np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32))
        b = ap.zeros(2)
        for p in (w, b):
            p.attach_grad(grad_req="add")
        buf = ap.ones(12) * 0.5
        w.grad, b.grad = buf[:6].reshape(3, 2), buf[11:7:-2]  # (b's: reversed, strided, at an offset)
        return w, b, buf

    with torch._inductor.config.patch(compile_threads=1):
        captured = ap.capture(step, mode="compile")
        X = ap.asarray(np.random.default_rng(1).standard_normal((8, 3)).astype(np.float32))
        eager, mine = params(), params()
        for _ in range(3):
            np.testing.assert_allclose(captured(X, *mine[:2]).numpy(), step(X, *eager[:2]).numpy(), rtol=1e-5)
            np.testing.assert_allclose(mine[2].numpy(), eager[2].numpy(), rtol=1e-5, atol=1e-6)
        (program,) = captured.traces
        (seg,) = program.segments
        assert seg.run._compiled is not None and getattr(seg.run._compiled, "joint", lambda: False)() is not twice


def test_a_trace_waits_for_the_calls_in_flight_and_holds_new_ones_back() -> None:
    calls = _joint.Calls()
    waiting = threading.Event()
    real_wait = calls._cond.wait

    def wait(*args):  # type: ignore[no-untyped-def]
        waiting.set()  # (this thread is about to wait: what it waits for has not happened)
        return real_wait(*args)

    calls._cond.wait = wait  # type: ignore[method-assign]
    events: list[str] = []

    def tracing() -> None:
        with calls.trace():
            events.append("traced")

    with calls.call():  # a compiled call in flight
        tracer = threading.Thread(target=tracing)
        tracer.start()
        waiting.wait()
        events.append("call ends")
    tracer.join()
    assert events == ["call ends", "traced"]

    waiting.clear()
    events.clear()
    in_trace, done = threading.Event(), threading.Event()

    def long_trace() -> None:
        with calls.trace():
            in_trace.set()
            done.wait()
            events.append("trace ends")

    def calling() -> None:
        with calls.call():
            events.append("called")

    tracer = threading.Thread(target=long_trace)
    tracer.start()
    in_trace.wait()
    caller = threading.Thread(target=calling)
    caller.start()
    waiting.wait()  # the call waits for the trace
    done.set()
    tracer.join()
    caller.join()
    assert events == ["trace ends", "called"]


_FIRST_COMPILE = """
import numpy as np
import autopar as ap
from autopar import parallel
from autopar.nn import functional as F, models
ap.set_cpu_devices(2)
rng = np.random.default_rng(0)
net = models.build("lenet", 0)
replicas = parallel.replicate(net.params, [ap.cpu(0), ap.cpu(1)])
trainer = parallel.DataParallel(replicas, parallel.sgd(lr=0.1), capture=True)
X = ap.asarray(rng.standard_normal((8, 1, 28, 28)).astype(np.float32))
y = ap.asarray(rng.integers(0, 10, 8))
loss = lambda p, x, t: F.cross_entropy(net(x, p), t)
for _ in range(2):
    trainer.step_batch(loss, X, y)
ap.waitall()
(program,) = trainer._batch_step.traces
for seg in program.segments:
    print(seg.device, seg.lane, seg.run.kind, seg.run.reason)
"""


@pytest.mark.skipif(bool(compiler_available()), reason="torch.compile cannot run here")
def test_the_first_compiles_of_a_process_on_several_lanes_at_once_all_compile() -> None:
    # In a fresh process nothing of torch.compile is imported: lanes compiling their first segments
    # together imported it on several threads at once, got partially initialized modules and replayed.
    import os
    import subprocess
    import sys

    env = dict(os.environ, TORCHINDUCTOR_COMPILE_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _FIRST_COMPILE], capture_output=True, text=True, env=env,
                         timeout=600, check=True).stdout  # fmt: skip
    lines = [line for line in out.splitlines() if line.startswith("cpu:")]
    assert lines and all(" compile " in line or "engine op pushed directly" in line for line in lines), out
    assert sum(" compute compile " in line for line in lines) == 2, out  # each device's forward and backward


def test_a_capture_that_only_replays_does_not_import_the_compiler() -> None:
    # The compiler's stack is imported where a segment will compile: importing it costs over a second,
    # which a captured function that replays (here: it draws random numbers) does not pay.
    import os
    import subprocess
    import sys

    script = ("import sys, autopar as ap\n"
              "g = ap.capture(lambda n: ap.random.uniform(size=(n,)) + 1)\n"
              "g(4).numpy()\n"
              "print([s.run.kind for s in g.traces[0].segments], 'torch._dynamo' in sys.modules)\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=dict(os.environ),
                         timeout=300, check=True).stdout  # fmt: skip
    assert out.split() == ["['replay']", "False"], out
