"""The engine's interface for the layers above it, on both policies: overlapping and
repeated vars, overwrites (contract, failures rule 2 amended), ops run inline, ops completed later."""

from __future__ import annotations

import threading
import time

import pytest

import autopar
from autopar import engine
from autopar.engine import _failures


class Boom(ValueError):
    pass


def boom() -> None:
    raise Boom("kaput")


def eng_obj():  # type: ignore[no-untyped-def]
    return engine.current_engine()


# -- reads and writes may overlap and repeat ---------------------------------------------


def test_repeated_vars_are_one_access(eng) -> None:  # type: ignore[no-untyped-def]
    a, b = eng.Var(), eng.Var()
    out: list[str] = []
    # a write listed twice would queue behind itself and never run
    eng_obj().push_checked(lambda: out.append("w"), (b, b), (a, a, a), autopar.cpu(0), 0, "twice", "compute", False)
    eng.push(lambda: out.append("r"), reads=[a, a])
    eng.waitall()
    assert out == ["w", "r"] and a.version == 1 and a.pending_writes == 0


def test_a_var_read_and_written_is_ordered_as_a_write(eng) -> None:  # type: ignore[no-untyped-def]
    #  reader1 --> rw (reads and writes a) --> reader2
    a = eng.Var()
    box = [0]
    seen: list[int] = []
    eng.push(lambda: (time.sleep(0.02), seen.append(box[0])), reads=[a], lane="copy")  # a window for a wrong order
    eng_obj().push_checked(lambda: box.__setitem__(0, box[0] + 1), (a,), (a,), autopar.cpu(0), 0, "rw", "compute", False)
    eng.push(lambda: seen.append(box[0]), reads=[a])
    eng.waitall()
    assert seen == [0, 1]


@pytest.mark.parametrize("order", ["written first", "written second"])
def test_a_written_var_among_two_reads_is_a_read_write(eng, order: str) -> None:  # type: ignore[no-untyped-def]
    # x += y's shape (two reads, one of them written): ordered as one write, and a failure on the written var
    # stops the op (contract, failures rule 2). Kept as a read beside the write, the op would wait for itself (WAITING forever);
    # taken for an overwrite, it would run and clear the failure.
    a, w = eng.Var(), eng.Var()
    ran: list[str] = []
    cpu = autopar.cpu(0)
    eng_obj().push_checked(boom, (), (w,), cpu, 0, "first", "compute", True)  # fails on the caller, at once
    reads = (w, a) if order == "written first" else (a, w)
    op = eng_obj().push_checked(lambda: ran.append("update"), reads, (w,), cpu, 0, "update", "compute", True)
    assert op.state is engine.OpState.SKIPPED, op  # decided at push: both vars were free, w had failed
    assert ran == [] and w.failure is not None
    with pytest.raises(Boom, match="'first'"):
        eng.wait_for_var(w)


# -- overwrites (contract, failures rule 2): run on a failed var, and clear it ------------------------------


def test_an_overwrite_runs_on_a_failed_var_and_clears_it(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    ran: list[str] = []
    eng.push(boom, writes=[a], name="first")
    eng.push(lambda: ran.append("update"), reads=[a], writes=[a])  # reads what it keeps: skipped
    eng.push(lambda: ran.append("overwrite"), writes=[a])  # replaces the value: runs
    eng.wait_for_var(a)  # no failure left on a
    assert ran == ["overwrite"] and a.failure is None
    with pytest.raises(Boom):
        eng.waitall()  # the failure itself was never observed by a read: still owed once


def test_a_failed_overwrite_stores_its_own_failure(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    eng.push(boom, writes=[a], name="first")
    eng.push(lambda: (_ for _ in ()).throw(KeyError("second")), writes=[a], name="second")
    with pytest.raises(KeyError, match="'second'"):
        eng.wait_for_var(a)


def test_an_overwrite_with_a_failed_input_is_skipped(eng) -> None:  # type: ignore[no-untyped-def]
    a, b = eng.Var(), eng.Var()
    ran: list[str] = []
    eng.push(boom, writes=[a], name="first")
    eng.push(lambda: ran.append("copy"), reads=[a], writes=[b])
    with pytest.raises(Boom, match="'first'"):
        eng.wait_for_var(b)
    assert ran == []


# -- inline: on the calling thread, only when nothing orders it later ----------------------


def test_inline_runs_on_the_caller_when_ready_and_the_lane_is_idle(eng) -> None:  # type: ignore[no-untyped-def]
    where: list[str] = []
    a = eng.Var()
    eng_obj().push_checked(lambda: where.append(threading.current_thread().name), (), (a,), autopar.cpu(0), 0,
                           "tiny", "compute", True)
    assert where == [threading.current_thread().name]  # ran before push returned
    assert a.version == 1


def test_inline_waits_when_its_input_is_pending(threaded) -> None:  # type: ignore[no-untyped-def]
    a, b = engine.Var(), engine.Var()
    gate = threading.Event()
    where: list[str] = []
    engine.push(lambda: gate.wait(5), writes=[a], lane="copy")
    engine.current_engine().push_checked(lambda: where.append(threading.current_thread().name), (a,), (b,),
                                         autopar.cpu(0), 0, "tiny", "compute", True)
    assert where == []  # not ready: queued, not run here
    gate.set()
    engine.wait_for_var(b)
    assert where == ["autopar-cpu:0/compute"]


@pytest.mark.parametrize("failed_before", [False, True])  # the engine's fast path, and its general one
def test_an_inline_op_waits_its_turn_on_a_busy_lane(threaded, no_failure_yet, failed_before) -> None:  # type: ignore[no-untyped-def]
    _failures.seen = failed_before
    gate = threading.Event()
    order: list[str] = []
    engine.push(lambda: (gate.wait(10), order.append("held")), writes=[engine.Var()])
    engine.push(lambda: order.append("queued"), writes=[engine.Var()])
    engine.current_engine().push_checked(lambda: order.append("tiny"), (), (engine.Var(),), autopar.cpu(0), 0,
                                         "tiny", "compute", True)
    assert order == []  # not run on the caller: its lane is busy, and an op is queued before it
    gate.set()
    engine.waitall()
    assert order == ["held", "queued", "tiny"]


def test_an_inline_op_never_holds_the_engine_lock(threaded) -> None:  # type: ignore[no-untyped-def]
    """Issue 7 defect 12 (engine half): while a kernel runs on the caller, every other lane keeps working."""
    other_ran = threading.Event()
    seen: list[bool] = []

    def kernel() -> None:
        # another thread pushes to another lane and waits for it: both need the engine lock
        helper = threading.Thread(target=lambda: (engine.push(other_ran.set, writes=[engine.Var()], lane="copy")))
        helper.start()
        seen.append(other_ran.wait(5))
        helper.join(5)

    engine.current_engine().push_checked(kernel, (), (engine.Var(),), autopar.cpu(0), 0, "tiny", "compute", True)
    assert seen == [True], "the other lane stalled while an inline op ran"


def test_a_base_exception_in_an_inline_op_is_stored_and_reaches_the_caller(eng) -> None:  # type: ignore[no-untyped-def]
    """Issue 7 defect 2: the update is not silently lost, and nothing waits forever."""
    a = eng.Var()

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        eng_obj().push_checked(interrupted, (), (a,), autopar.cpu(0), 0, "tiny", "compute", True)
    with pytest.raises(KeyboardInterrupt, match="'tiny'"):
        eng.wait_for_var(a)
    assert eng.pending() == 0


# -- push_async: ops that complete later ----------------------------------------------------


def test_push_async_keeps_its_vars_until_complete(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    completes: list = []  # type: ignore[type-arg]
    called = threading.Event()
    box = [0]
    op = eng.push_async(lambda complete: (completes.append(complete), called.set()), writes=[a], name="later")
    after = eng.push(lambda: box.__setitem__(0, box[0] + 1), reads=[a], writes=[a])
    assert called.wait(5)
    try:
        time.sleep(0.05)  # a wrong engine would run `after` now
        assert op.state is eng.OpState.ISSUED and not after.finished and eng.pending() == 2 and box == [0]
    finally:
        done = threading.Thread(target=lambda: completes[0]())  # complete from another thread
        done.start()
        done.join(5)
    eng.wait_for_var(a)
    assert box == [1] and op.state is eng.OpState.DONE and a.version == 2


def test_push_async_complete_with_an_error_fails_the_op(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    eng.push_async(lambda complete: complete(Boom("remote")), writes=[a], name="remote")
    with pytest.raises(Boom, match=r"remote \[in autopar operation 'remote'"):
        eng.wait_for_var(a)


def test_push_async_function_that_raises_is_the_failure(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    completes: list = []  # type: ignore[type-arg]

    def fn(complete) -> None:  # type: ignore[no-untyped-def]
        completes.append(complete)
        raise Boom("at once")

    eng.push_async(fn, writes=[a])
    with pytest.raises(Boom, match="at once"):
        eng.wait_for_var(a)
    with pytest.raises(RuntimeError, match="already finished: its function raised"):
        completes[0]()


def test_complete_twice_raises(eng) -> None:  # type: ignore[no-untyped-def]
    completes: list = []  # type: ignore[type-arg]
    called = threading.Event()
    eng.push_async(lambda complete: (completes.append(complete), called.set()), writes=[eng.Var()])
    assert called.wait(5)
    completes[0]()
    with pytest.raises(RuntimeError, match="called twice"):
        completes[0]()
    with pytest.raises(TypeError, match="exception instance or None"):
        completes[0]("oops")
    eng.waitall()


def test_complete_called_inside_the_function_finishes_after_it_returns(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    order: list[str] = []

    def fn(complete) -> None:  # type: ignore[no-untyped-def]
        complete()
        time.sleep(0.02)
        order.append("fn returned")

    eng.push_async(fn, writes=[a])
    eng.push(lambda: order.append("reader"), reads=[a])
    eng.waitall()
    assert order == ["fn returned", "reader"]


def test_waitall_waits_for_an_async_op(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    timer = threading.Timer(0.1, lambda: None)

    def fn(complete) -> None:  # type: ignore[no-untyped-def]
        nonlocal timer
        timer = threading.Timer(0.1, complete)
        timer.start()

    start = time.monotonic()
    eng.push_async(fn, writes=[a])
    eng.waitall()
    assert time.monotonic() - start >= 0.09 and a.version == 1
    timer.join()
