"""Faults outside the user's function become failures; no engine thread dies (contract, failures rule 7).

And the other faults issue 7 found around running an op: a Ctrl-C inside an op run on the
caller (defect 2), a kernel run under the engine lock (12), a failure the fast path missed
(9), a lane that keeps its last op alive (10).
"""

from __future__ import annotations

import sys
import threading
import weakref

import pytest
import torch

import autopar as ap
from _helpers import wait_for, within
from autopar import devices, engine
from autopar.engine import _failures, _outcome
from autopar.errors import BlockingCallError


# -- listeners that raise (defect 3) ------------------------------------------------------------


class Raising:
    def __init__(self, where: str) -> None:
        self.where = where

    def _maybe(self, where: str) -> None:
        if where == self.where:
            raise RuntimeError("listener broke")

    def op_pushed(self, op: engine.Op) -> None:
        self._maybe("op_pushed")

    def op_started(self, op: engine.Op) -> None:
        self._maybe("op_started")

    def op_finished(self, op: engine.Op) -> None:
        self._maybe("op_finished")


@pytest.mark.parametrize("where", ["op_pushed", "op_started", "op_finished"])
def test_a_raising_listener_fails_the_op_and_kills_no_thread(eng, where) -> None:  # type: ignore[no-untyped-def]
    fails_the_watched_op(eng, Raising(where), RuntimeError,
                         rf"listener broke \[in autopar operation 'watched' on cpu:0; raised by engine listener .* in {where}\(\)\]")


def fails_the_watched_op(eng, listener, error, match) -> None:  # type: ignore[no-untyped-def]
    """With ``listener`` attached, an op named "watched" fails with ``error``; then the lane still works."""
    engine.add_listener(listener)
    try:
        a = eng.Var()
        eng.push(lambda: None, writes=[a], name="watched")
        with pytest.raises(error, match=match):
            within(10, lambda: eng.wait_for_var(a))
    finally:
        engine.remove_listener(listener)
    b = eng.Var()
    eng.push(lambda: None, writes=[b])
    within(10, lambda: eng.wait_for_var(b))  # the lane still works



class Blocking:
    """A listener that waits, under the engine lock, for the var of the op it is told about."""

    def op_pushed(self, op: engine.Op) -> None:
        pass

    def op_started(self, op: engine.Op) -> None:
        pass

    def op_finished(self, op: engine.Op) -> None:
        engine.wait_for_var(op.writes[0])  # the op being finished: it would wait for itself


def test_a_listener_that_blocks_gets_a_clear_error_instead_of_a_deadlock(eng) -> None:  # type: ignore[no-untyped-def]
    fails_the_watched_op(eng, Blocking(), BlockingCallError, "inside an engine listener's op_finished .*'watched'")

def test_an_internal_error_fails_the_op_and_the_worker_goes_on(threaded, monkeypatch, capfd) -> None:  # type: ignore[no-untyped-def]
    original = _outcome.record
    armed = [True]

    def broken(op, state, failure):  # type: ignore[no-untyped-def]
        if armed and op.name == "unlucky":
            armed.clear()
            raise AssertionError("an engine bug")
        original(op, state, failure)

    monkeypatch.setattr(_outcome, "record", broken)
    a = engine.Var()
    engine.push(lambda: None, writes=[a], name="unlucky")
    with pytest.raises(AssertionError, match=r"an engine bug \[.*'unlucky'.*internal error"):
        within(10, lambda: engine.wait_for_var(a))
    assert "internal error while handling" in capfd.readouterr().err
    b = engine.Var()
    engine.push(lambda: None, writes=[b])
    within(10, lambda: engine.wait_for_var(b))


# -- ops run on the caller (inline) -------------------------------------------------------------


class Trap(torch.Tensor):
    """A tensor whose additions call ``Trap.action`` first: a tiny array kernel we can steer."""

    action = None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if Trap.action is not None and getattr(func, "__name__", "") in ("add", "add_"):
            Trap.action()
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.fixture
def trapped():  # type: ignore[no-untyped-def]
    x = ap.from_torch(torch.ones(1).as_subclass(Trap))
    (x + 1).wait_to_read()  # the lane exists: the next tiny op may run on the caller
    yield x
    Trap.action = None


def test_ctrl_c_in_a_tiny_in_place_op_is_stored_not_lost(eng, trapped) -> None:  # type: ignore[no-untyped-def]
    """Defect 2: the update neither happened silently nor vanished: the array carries the interrupt."""
    x = trapped

    def interrupt() -> None:
        raise KeyboardInterrupt

    Trap.action = interrupt
    with pytest.raises(KeyboardInterrupt):
        x += 1
    Trap.action = None
    with pytest.raises(KeyboardInterrupt, match="in autopar operation 'add"):
        within(10, x.numpy)


def test_a_tiny_kernel_never_runs_under_the_engine_lock(threaded, trapped, no_failure_yet) -> None:  # type: ignore[no-untyped-def]
    """Defect 12, engine half: while a kernel runs on the caller, other lanes keep working."""
    other = threading.Event()
    seen: list[bool] = []

    def meanwhile() -> None:
        helper = threading.Thread(target=lambda: engine.push(other.set, writes=[engine.Var()], lane="copy"))
        helper.start()
        seen.append(other.wait(3))
        helper.join(10)

    Trap.action = meanwhile
    (trapped + 1).wait_to_read()
    assert seen == [True], "another lane could not even queue work while a tiny kernel ran"


def test_a_tiny_op_never_runs_on_an_input_that_just_failed(threaded, no_failure_yet) -> None:
    """Defect 9: the failure check and the failure store are under one lock (a race: the old
    fast path read the failure flag before the lock and lost a few failures in thousands)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        def fail() -> None:
            raise ValueError("input failed")

        (ap.ones(1) + 1).wait_to_read()
        silent = 0
        for _ in range(4000):
            _failures.seen = False
            a = ap.zeros(1)
            a.wait_to_read()
            engine.push(fail, writes=[a._storage.var], lane="copy")
            y = a + 1
            try:
                y.numpy()
                silent += 1
            except ValueError:
                pass
        assert silent == 0, f"{silent} tiny ops produced a value from a failed input"
    finally:
        sys.setswitchinterval(previous)


# -- nothing keeps a finished op's function alive (defect 10) -----------------------------------


class Payload:
    pass


@pytest.mark.parametrize("device", ["cpu:0", "sim:0"])
def test_a_finished_op_keeps_nothing_alive(threaded, device) -> None:  # type: ignore[no-untyped-def]
    devices.set_sim_devices(1)
    payload = Payload()
    ref = weakref.ref(payload)

    def holding(p: Payload):  # type: ignore[no-untyped-def]
        if device == "cpu:0":
            return lambda: p
        return lambda: devices.launch(lambda: p)

    op = engine.push(holding(payload), writes=[engine.Var()], device=device)
    op_ref = weakref.ref(op)
    del payload, op
    engine.waitall()
    wait_for(lambda: ref() is None, 5)  # not kept by a sleeping worker, watcher or stream, nor by the op
    wait_for(lambda: op_ref() is None, 5)  # nor the op itself


def test_an_op_kept_by_the_caller_drops_its_function_once_it_has_run(eng) -> None:  # type: ignore[no-untyped-def]
    """The op ``push`` returns may be kept (for its state, by a profiler): it must not keep
    what its function captured alive. Catches ``_outcome.record`` no longer dropping ``op.fn``."""
    payload = Payload()
    ref = weakref.ref(payload)
    op = eng.push(lambda p=payload: None, writes=[eng.Var()])
    del payload
    eng.waitall()
    wait_for(lambda: ref() is None, 5)
    assert op.state is eng.OpState.DONE  # the op itself is still here
