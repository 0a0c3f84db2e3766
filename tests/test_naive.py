"""The naive engine is the reference, so it must be right by construction (issue 7 defect 8):
one op at a time whatever thread pushes, and an op pushed from inside an op runs after it."""

from __future__ import annotations

import threading
import time

from autopar import engine


def test_naive_runs_one_op_at_a_time_whatever_thread_pushes() -> None:
    engine.set_engine("naive")
    try:
        running = [0]
        overlaps = [0]

        def op() -> None:
            running[0] += 1
            if running[0] > 1:
                overlaps[0] += 1
            time.sleep(0.0002)  # a window in which another thread's op could start
            running[0] -= 1

        def producer() -> None:
            own = engine.Var()
            for _ in range(100):
                engine.push(op, writes=[own])

        threads = [threading.Thread(target=producer) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        engine.waitall()
        assert overlaps == [0]
    finally:
        engine.set_engine("threaded")


def test_an_op_pushed_inside_an_op_sees_what_the_outer_op_writes(eng) -> None:  # type: ignore[no-untyped-def]
    #  outer (writes a; pushes inner, then writes) --> inner (reads a, writes b)
    a, b = eng.Var(), eng.Var()
    box = [0]
    seen: list[int] = []

    def outer() -> None:
        eng.push(lambda: seen.append(box[0]), reads=[a], writes=[b])
        box[0] = 1  # written after the inner op was pushed: the inner op must still see it

    eng.push(outer, writes=[a])
    eng.waitall()
    assert seen == [1]


def test_a_write_pushed_inside_an_op_is_not_lost(eng) -> None:  # type: ignore[no-untyped-def]
    #  outer (writes a) --> inner (writes a): pushed later, so it has the last word
    a = eng.Var()
    box = ["none"]

    def outer() -> None:
        eng.push(lambda: box.__setitem__(0, "inner"), writes=[a])
        box[0] = "outer"

    eng.push(outer, writes=[a])
    eng.wait_for_var(a)
    assert box == ["inner"] and a.version == 2


def test_naive_runs_an_independent_op_pushed_inside_an_op_after_it() -> None:
    engine.set_engine("naive")
    try:
        log: list[str] = []

        def outer() -> None:
            engine.push(lambda: log.append("inner"), writes=[engine.Var()])  # ready at once, but not run yet
            log.append("outer ends")

        engine.push(outer, writes=[engine.Var()])
        assert log == ["outer ends", "inner"]  # step by step: one op at a time, in push order
    finally:
        engine.set_engine("threaded")


def test_naive_ops_behind_an_async_op_run_when_it_completes() -> None:
    engine.set_engine("naive")
    try:
        a = engine.Var()
        completes: list = []  # type: ignore[type-arg]
        ran: list[str] = []
        engine.push_async(completes.append, writes=[a])
        engine.push(lambda: ran.append(threading.current_thread().name), reads=[a])
        assert ran == []  # held by the op that has not completed
        done = threading.Thread(target=lambda: completes[0](), name="completer")
        done.start()
        done.join(10)
        assert ran == ["completer"]  # run by the thread that completed what it waited for
    finally:
        engine.set_engine("threaded")
