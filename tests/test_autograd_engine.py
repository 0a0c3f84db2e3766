"""Backward through the engine: it returns at once, a gradient is readable (and copied) while
the rest of backward has not run, and failures follow the contract's failure rules."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _helpers import Gate, within

import autopar as ap
from autopar import engine

RNG = np.random.default_rng(1)


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


class Events:
    """An engine listener: the ops that started, by name, in order."""

    def __init__(self) -> None:
        self.started: list[engine.Op] = []
        self.lock = threading.Lock()

    def op_pushed(self, op: engine.Op) -> None:
        pass

    def op_started(self, op: engine.Op) -> None:
        with self.lock:
            self.started.append(op)

    def op_finished(self, op: engine.Op) -> None:
        pass


@pytest.fixture
def two_devices(threaded):  # type: ignore[no-untyped-def]
    ap.set_cpu_devices(2)
    yield ap.cpu(0), ap.cpu(1)
    ap.waitall()
    ap.set_cpu_devices(1)


def test_last_layers_gradient_is_read_and_copied_while_the_first_layers_waits(two_devices) -> None:  # type: ignore[no-untyped-def]
    """Layer 1's gradient op reads x, which a gate holds after the forward: backward cannot
    finish. Layer 3's gradient must still become readable, and its copy to cpu:1 run."""
    x = ap.asarray(data(8, 4))
    ws = [ap.array(data(4, 4), requires_grad=True) for _ in range(3)]
    h = x
    for w in ws:
        h = ap.tanh(h @ w)
    loss = h.sum()
    gate = Gate(reads=[x._storage.var], writes=[x._storage.var])
    events = Events()
    engine.add_listener(events)
    returned, ready = threading.Event(), threading.Event()
    copied: list[ap.NDArray] = []

    def driver() -> None:  # off the test's thread, so that a backward that waited could not hang the test
        loss.backward()  # must return although layer 1's gradient cannot run
        returned.set()
        copied.append(ws[2].grad.copyto(ap.cpu(1)))
        copied[0].wait_to_read()
        ready.set()

    thread = threading.Thread(target=driver)
    try:
        thread.start()
        readable = ready.wait(60)  # the test fails below if the gradient waited for the gate
        with events.lock:
            started = list(events.started)
        gate.open()  # now the rest of backward may run
        thread.join()
        ap.waitall()
    finally:
        engine.remove_listener(events)
    assert returned.is_set(), "backward() did not return while its first layer waited"
    assert readable, "the last layer's gradient waited for the first layer's backward"
    names = [op.name for op in started]
    # layer 3's ran (its gradient was copied); layer 2's may or may not have started by then (it is
    # free to, but nothing waits for it); layer 1's, which reads the gated x, had not
    assert 1 <= names.count("backward matmul") <= 2, names
    gated = x._storage.var
    assert not any(gated in op.reads or gated in op.rw for op in started if op.name == "backward matmul"), names
    with events.lock:  # (and layer 1's is the one op of them that reads x: the check above can fail)
        everything = list(events.started)
    assert sum(gated in op.reads or gated in op.rw for op in everything if op.name == "backward matmul") == 1
    assert any(op.lane == "copy" and op.device == ap.cpu(1) for op in started), names
    np.testing.assert_allclose(copied[0].numpy(), ws[2].grad.numpy())


def test_a_write_pushed_before_backward_counts_even_if_it_runs_after(threaded) -> None:  # type: ignore[no-untyped-def]
    """The gradient op reads its inputs' vars: it waits for a write pushed before backward()."""
    w = ap.array([1.0, 2.0], requires_grad=True)
    x = ap.array([3.0, 4.0])
    y = (w * x).sum()
    gate = Gate(reads=[x._storage.var], writes=[x._storage.var])
    x[0] = 10.0  # queued behind the gate
    y.backward()
    gate.open()
    with pytest.raises(RuntimeError, match="modified in place"):
        w.grad.numpy()


def test_dropout_waits_for_the_generator(threaded) -> None:  # type: ignore[no-untyped-def]
    """A mask is a draw: its op reads and writes the device's generator, like every draw."""
    import autopar.nn.functional as F
    from autopar.arrays import _random

    x = ap.ones(64)
    x.wait_to_read()
    var, _ = _random._generator(x.device)
    gate = Gate(writes=[var])
    pushed: list[engine.Op] = []
    listener = type("Pushed", (), {"op_pushed": lambda self, op: pushed.append(op), "op_started": lambda self, op: None,
                                   "op_finished": lambda self, op: None})()  # fmt: skip
    engine.add_listener(listener)
    try:
        F.dropout(x, 0.5)
    finally:
        engine.remove_listener(listener)
    (op,) = [o for o in pushed if o.name == "dropout"]
    assert op.state is engine.OpState.WAITING  # held by the generator's gate, not run at push
    gate.open()
    ap.waitall()


def _chain() -> tuple[list[ap.NDArray], ap.NDArray]:
    w1, w2, w3 = (ap.array(data(3), requires_grad=True) for _ in range(3))
    x = ap.asarray(data(3))
    h = x * w1
    y = (h * w2).sum() + (x * w3).sum()  # w3 on a branch of its own
    return [w1, w2, w3], y


def test_a_failed_gradient_fails_the_updates_that_read_it(eng) -> None:  # type: ignore[no-untyped-def]
    (w1, w2, w3), y = _chain()
    with ap.no_grad():
        w2[0] = 7.0  # h * w2 saved w2: its gradient op fails
    y.backward()
    with ap.no_grad():
        for w in (w1, w2, w3):
            w -= 0.1 * w.grad
    for failed in (w1, w2):  # w2's gradient op wrote both gradients; the updates read them
        with pytest.raises(RuntimeError, match="backward of multiply"):
            within(60, failed.numpy)  # raises, and never hangs
    assert np.isfinite(within(60, w3.numpy)).all()
    within(60, ap.waitall)  # both failures were raised by reads already


def test_a_failed_forward_fails_every_gradient_below_it_and_nothing_hangs(eng) -> None:  # type: ignore[no-untyped-def]
    def broken(t):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("no data today")

    w = ap.array(data(3), requires_grad=True)
    v = ap.array(data(3), requires_grad=True)
    x = ap.call(broken, ap.ones(3), shape=(3,))
    y = (w * x).sum() + v.sum()
    y.backward()
    with pytest.raises(ZeroDivisionError, match="no data today"):
        within(60, w.grad.numpy)
    with pytest.raises(ZeroDivisionError):
        within(60, v.grad.numpy)  # the sum's gradient op read the failed head: v's gradient fails too
    within(60, ap.waitall)  # one failure, carried by every array below it, and raised already by a read
