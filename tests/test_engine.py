"""One conformance suite for both engine policies (fixture ``eng``), then the
threaded policy's own properties: overlap, lanes, priorities, threads, bounds."""

from __future__ import annotations

import threading
import time

import pytest

import autopar
from autopar import engine
from autopar.errors import BlockingCallError

# -- conformance: both engines ---------------------------------------------------


def test_read_after_write(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    box: list[int] = []
    eng.push(lambda: (time.sleep(0.02), box.append(1)), writes=[a])
    got: list[list[int]] = []
    eng.push(lambda: got.append(list(box)), reads=[a])
    eng.waitall()
    assert got == [[1]]


def test_write_after_read(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    box = [0]
    seen: list[int] = []
    eng.push(lambda: (time.sleep(0.02), seen.append(box[0])), reads=[a])
    eng.push(lambda: box.__setitem__(0, 1), writes=[a], device=autopar.cpu(0), lane="copy")
    eng.waitall()
    assert seen == [0] and box == [1]


def test_writes_keep_push_order_across_lanes(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    out: list[int] = []
    for i in range(200):
        eng.push(lambda i=i: out.append(i), writes=[a], lane="copy" if i % 3 else "compute", priority=i % 5)
    eng.waitall()
    assert out == list(range(200))


def test_var_in_reads_and_writes_counts_as_written(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    out: list[str] = []
    eng.push(lambda: (time.sleep(0.02), out.append("rw")), reads=[a], writes=[a])
    eng.push(lambda: out.append("r"), reads=[a], lane="copy")
    eng.waitall()
    assert out == ["rw", "r"]


def test_version_counts_finished_writes(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    for _ in range(5):
        eng.push(lambda: None, writes=[a])
    eng.push(lambda: None, reads=[a])
    eng.wait_for_var(a)
    assert a.version == 5 and a.pending_writes == 0


def test_wait_for_var_waits_for_writes_only(eng) -> None:  # type: ignore[no-untyped-def]
    #  write a --> read a (blocked on `release`, copy lane): wait_for_var(a) returns meanwhile
    from _helpers import within

    a, b = eng.Var(), eng.Var()
    release = threading.Event()
    box: list[int] = []
    eng.push(lambda: box.append(1), writes=[a])
    if eng.get_engine() == "threaded":
        eng.push(lambda: release.wait(10), reads=[a], writes=[b], lane="copy")
    try:
        within(5, lambda: eng.wait_for_var(a))  # not for the reader, not until the engine is idle
    finally:
        release.set()
    assert box == [1]
    eng.waitall()


def test_wait_for_var_returns_when_the_write_it_waits_for_finishes(threaded) -> None:  # type: ignore[no-untyped-def]
    #  write a (blocked on `go`) --> read a (blocked on `release`, copy lane)
    #  wait_for_var(a) is waiting when `go` is set: it must return while the reader still runs.
    #  Catches wait_for_var waiting for more than the var's writes (until idle, or for the reader).
    from _helpers import wait_for

    a, b = threaded.Var(), threaded.Var()
    go, release, returned = threading.Event(), threading.Event(), threading.Event()
    threaded.push(lambda: go.wait(10), writes=[a])
    threaded.push(lambda: release.wait(10), reads=[a], writes=[b], lane="copy")
    waiter = threading.Thread(target=lambda: (threaded.wait_for_var(a), returned.set()), daemon=True)
    try:
        waiter.start()
        wait_for(lambda: a._waiters == 1)  # the waiter is in the wait, the write not finished
        assert not returned.is_set()
        go.set()
        assert returned.wait(5), "wait_for_var(a) did not return after a's only write finished"
        assert not release.is_set() and b.version == 0  # the reader was still running
    finally:
        go.set()
        release.set()
    waiter.join(5)
    threaded.waitall()


def test_push_returns_op_with_state_in_repr(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var("a")
    op = eng.push(lambda: None, writes=[a], name="hello")
    eng.waitall()
    assert op.state is eng.OpState.DONE
    assert repr(op) == "<Op 'hello' on cpu:0/compute state=done>"
    assert "version=1" in repr(a)


def test_bad_arguments_raise_at_push(eng) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match="callable"):
        eng.push(42)
    with pytest.raises(TypeError, match="engine.Var"):
        eng.push(lambda: None, reads=["a"])
    with pytest.raises(ValueError, match="no lane 'dma'.*compute, copy"):
        eng.push(lambda: None, lane="dma")
    with pytest.raises(autopar.DeviceError, match="cpu:7 does not exist"):
        eng.push(lambda: None, device="cpu:7")
    with pytest.raises(TypeError, match="priority"):
        eng.push(lambda: None, priority="high")


# -- failures (the contract's failure rules) ----------------------------------------------------------


class Boom(ValueError):
    pass


def boom() -> None:
    raise Boom("kaput")


def test_a_failures_cause_keeps_the_frames_of_the_code_that_raised(eng) -> None:  # type: ignore[no-untyped-def]
    """The error raised at the read chains the original as ``__cause__``, with its traceback: the
    lines of the op's function that raised (their locals are dropped, the frames kept) -- for an
    engine op and for a small array op run at once. Without them the user cannot find the line."""
    import traceback

    import autopar as ap

    a = eng.Var()
    eng.push(boom, writes=[a], name="exploder")

    b = eng.Var()

    def small() -> None:
        raise ValueError("small")

    eng.current_engine().push_small(small, (), (), (b,), ap.cpu(0), "small")  # run now, on this thread

    def user(t):  # type: ignore[no-untyped-def]
        return t[[5]]  # out of range: raised by torch inside this function

    results = [(lambda: eng.wait_for_var(a), "boom"), (lambda: eng.wait_for_var(b), "small"),
               (lambda: ap.call(user, ap.ones(3), shape=(1,)).numpy(), "user")]
    for read, where in results:
        with pytest.raises(Exception) as info:
            read()
        cause = info.value.__cause__
        assert cause is not None and cause.__traceback__ is not None, info.value
        names = [frame.name for frame in traceback.extract_tb(cause.__traceback__)]
        assert where in names, names
        frame = [tb for tb in _frames(cause.__traceback__) if tb.tb_frame.f_code.co_name == where][0].tb_frame
        assert not frame.f_locals, frame.f_locals  # the locals are dropped (the frames' tensors freed)


def _frames(tb):  # type: ignore[no-untyped-def]
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_failure_is_stored_on_writes_and_raised_by_every_read(eng) -> None:  # type: ignore[no-untyped-def]
    a = eng.Var()
    eng.push(boom, writes=[a], name="exploder")
    for _ in range(3):
        with pytest.raises(Boom, match=r"kaput \[in autopar operation 'exploder' on cpu:0\]") as info:
            eng.wait_for_var(a)
        assert isinstance(info.value.__cause__, Boom)
    eng.waitall()  # already observed by a read: not raised again


def test_failure_flows_to_dependants_which_do_not_run(eng) -> None:  # type: ignore[no-untyped-def]
    #  first (fails) --> a --> reader --> b
    #                      \--> updater (reads and writes a) --> c
    a, b, c = eng.Var(), eng.Var(), eng.Var()
    ran: list[str] = []
    eng.push(boom, writes=[a], name="first")
    eng.push(lambda: ran.append("b"), reads=[a], writes=[b])
    eng.push(lambda: ran.append("c"), reads=[a], writes=[a, c])  # updates a failed var: does not run either
    with pytest.raises(Boom, match="'first'"):
        eng.wait_for_var(b)
    with pytest.raises(Boom, match="'first'"):
        eng.wait_for_var(c)
    with pytest.raises(Boom, match="'first'"):
        eng.wait_for_var(a)
    assert ran == []


def test_waitall_raises_each_unobserved_failure_once(eng) -> None:  # type: ignore[no-untyped-def]
    a, b = eng.Var(), eng.Var()
    eng.push(boom, writes=[a], name="one")
    eng.push(lambda: (_ for _ in ()).throw(KeyError("two")), writes=[b], name="two")
    with pytest.raises(Boom, match="'one'"):
        eng.waitall()
    eng.waitall()  # the other was cleared
    with pytest.raises(KeyError):
        eng.wait_for_var(b)  # but reads still raise it


def test_synchronize_raises_failures_of_its_device_only(eng) -> None:  # type: ignore[no-untyped-def]
    eng.set_cpu_devices(2)
    try:
        eng.push(boom, writes=[eng.Var()], device="cpu:1", name="on1")
        eng.synchronize(autopar.cpu(0))  # a failure on cpu:1 is not cpu:0's
        with pytest.raises(Boom, match="'on1' on cpu:1"):
            eng.synchronize(autopar.cpu(1))
        eng.synchronize()  # raised once: cleared
        eng.waitall()
    finally:
        eng.set_cpu_devices(1)


def test_engine_keeps_working_after_a_failure(eng) -> None:  # type: ignore[no-untyped-def]
    a, b = eng.Var(), eng.Var()
    eng.push(boom, writes=[a])
    with pytest.raises(Boom):
        eng.waitall()
    out: list[int] = []
    eng.push(lambda: out.append(1), writes=[b])
    eng.wait_for_var(b)
    assert out == [1]


def test_blocking_inside_an_op_raises(eng) -> None:  # type: ignore[no-untyped-def]
    a, b = eng.Var(), eng.Var()
    eng.push(eng.waitall, writes=[a], name="waits")
    eng.push(lambda: eng.wait_for_var(a), writes=[b], name="reads")
    with pytest.raises(BlockingCallError, match="waitall\\(\\) was called inside engine operation 'waits'"):
        eng.wait_for_var(a)
    # b's failure is its own call's, not a's re-raised: a wait_for_var inside an op raises
    # even when the var it names is already written (catches the check dropped there)
    with pytest.raises(BlockingCallError, match="wait_for_var\\(\\) was called inside engine operation 'reads'"):
        eng.wait_for_var(b)


def test_push_from_inside_an_op(eng) -> None:  # type: ignore[no-untyped-def]
    a, b = eng.Var(), eng.Var()
    out: list[str] = []
    eng.push(lambda: (out.append("outer"), eng.push(lambda: out.append("inner"), writes=[b])), writes=[a])
    eng.wait_for_var(a)
    eng.wait_for_var(b)
    assert out == ["outer", "inner"]


def test_differential_small_program_with_failures(eng) -> None:  # type: ignore[no-untyped-def]
    from _workloads import random_program, run_program

    steps = random_program(7, 400, 12, ["cpu:0"], fail_rate=0.03)
    got = run_program(steps, 12)
    engine.set_engine("naive")
    want = run_program(steps, 12)
    assert got == want


# -- threaded engine: parallelism, lanes, threads ----------------------------------


def test_two_reads_overlap(threaded) -> None:  # type: ignore[no-untyped-def]
    a = engine.Var()
    both = threading.Barrier(2, timeout=10)
    results: list[bool] = []

    def reader() -> None:
        both.wait()  # passes only if the two reads run at the same time
        results.append(True)

    engine.push(reader, reads=[a], lane="compute")
    engine.push(reader, reads=[a], lane="copy")
    engine.waitall()
    assert results == [True, True]


def test_copy_lane_does_not_wait_behind_compute(threaded) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    copied = threading.Event()
    engine.push(lambda: gate.wait(10), writes=[engine.Var()], lane="compute")
    engine.push(copied.set, writes=[engine.Var()], lane="copy")
    assert copied.wait(10), "the copy waited behind an unrelated compute op"
    gate.set()
    engine.waitall()


@pytest.fixture(params=["no failure yet", "after a failure"])
def failure_path(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Both push paths of the threaded engine: the inlined one real programs take until something
    fails, and the general one (``_advance_locked``) taken once any failure was ever stored."""
    from autopar.engine import _failures

    before = _failures.seen
    _failures.seen = request.param == "after a failure"
    yield request.param
    _failures.seen = before or _failures.seen


def test_priority_orders_ready_ops_on_a_lane(threaded, failure_path) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    engine.push(lambda: gate.wait(10), lane="compute")  # hold the lane while we queue
    order: list[int] = []
    for prio in [0, 3, 1, 3, -2, 2]:
        engine.push(lambda p=prio: order.append(p), priority=prio, writes=[engine.Var()])
    gate.set()
    engine.waitall()
    assert order == [3, 3, 2, 1, 0, -2]


def test_eight_threads_pushing_at_once(threaded) -> None:  # type: ignore[no-untyped-def]
    shared = engine.Var("shared")
    counter = [0]
    per_thread: dict[int, list[int]] = {t: [] for t in range(8)}
    own = {t: engine.Var(f"own{t}") for t in range(8)}

    def producer(t: int) -> None:
        for i in range(500):
            engine.push(lambda: counter.__setitem__(0, counter[0] + 1), writes=[shared])
            engine.push(lambda i=i: per_thread[t].append(i), writes=[own[t]], lane="copy")

    threads = [threading.Thread(target=producer, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    engine.waitall()
    assert counter[0] == 4000
    assert all(per_thread[t] == list(range(500)) for t in range(8))


def test_back_pressure_bounds_pending_work(threaded) -> None:  # type: ignore[no-untyped-def]
    engine.set_max_pending(50)
    try:
        gate = threading.Event()
        high = [0]
        engine.push(lambda: gate.wait(10), writes=[engine.Var()])
        pushed = [0]

        def producer() -> None:
            for _ in range(500):
                engine.push(lambda: None, writes=[engine.Var()])
                pushed[0] += 1
                high[0] = max(high[0], engine.pending())

        th = threading.Thread(target=producer)
        th.start()
        th.join(0.5)
        assert th.is_alive(), "push did not block at the bound"
        assert pushed[0] < 60
        gate.set()
        th.join(10)
        assert not th.is_alive() and pushed[0] == 500
        assert high[0] <= 50
    finally:
        engine.set_max_pending(None)
        engine.waitall()


def test_set_max_pending_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="whole number >= 1"):
        engine.set_max_pending(0)


def test_set_cpu_devices_needs_no_pending_work(threaded) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    engine.push(lambda: gate.wait(10))
    with pytest.raises(autopar.AutoparError, match="waitall"):
        engine.set_cpu_devices(2)
    gate.set()
    engine.waitall()


def test_each_cpu_device_runs_on_its_share_of_the_cores(threaded) -> None:  # type: ignore[no-untyped-def]
    import os

    import torch

    cores = len(os.sched_getaffinity(0))
    engine.set_cpu_devices(2)
    try:
        seen: dict[str, int] = {}
        for dev in ("cpu:0", "cpu:1"):
            engine.push(lambda dev=dev: seen.__setitem__(dev, torch.get_num_threads()), device=dev)
        engine.push(lambda: seen.__setitem__("copy", torch.get_num_threads()), lane="copy")
        engine.waitall()
        # cores split evenly, the lowest-numbered device taking the remainder; a copy lane: one thread
        assert seen == {"cpu:0": max(1, cores - cores // 2), "cpu:1": max(1, cores // 2), "copy": 1}
    finally:
        engine.set_cpu_devices(1)


def test_set_cpu_devices_joins_the_replaced_workers(threaded) -> None:  # type: ignore[no-untyped-def]
    """Issue 7 defect 7: a replaced worker still alive at interpreter exit can abort it."""
    engine.set_cpu_devices(2)
    try:
        engine.push(lambda: None, device="cpu:1")
        engine.push(lambda: None, device="cpu:1", lane="copy")
        engine.waitall()
    finally:
        engine.set_cpu_devices(1)
    alive = [t.name for t in threading.enumerate() if t.name.startswith("autopar-cpu:1/")]
    assert alive == [], f"replaced workers still running: {alive}"


def test_two_cpu_devices_have_own_workers(threaded) -> None:  # type: ignore[no-untyped-def]
    engine.set_cpu_devices(2)
    try:
        both = threading.Barrier(2, timeout=10)
        names: list[str] = []

        def meet() -> None:
            both.wait()
            names.append(threading.current_thread().name)

        engine.push(meet, device="cpu:0", writes=[engine.Var()])
        engine.push(meet, device="cpu:1", writes=[engine.Var()])
        engine.waitall()
        assert sorted(names) == ["autopar-cpu:0/compute", "autopar-cpu:1/compute"]
    finally:
        engine.set_cpu_devices(1)


def test_set_engine_rejects_unknown() -> None:
    with pytest.raises(ValueError, match="threaded, naive"):
        engine.set_engine("fast")



# -- the paths the mutation audit found untested (issue 16) ------------------------------------------


def _push_inline(fn, writes):  # type: ignore[no-untyped-def]
    """Push ``fn`` as a trusted kernel may be pushed: allowed to run on the caller when its lane is idle."""
    eng = engine.current_engine()
    return eng.push_checked(fn, (), tuple(writes), autopar.cpu(0), 0, "tiny", "compute", True)


def test_an_op_never_runs_on_the_caller_while_its_lane_runs_another(threaded, failure_path) -> None:  # type: ignore[no-untyped-def]
    from _helpers import within

    gate, started = threading.Event(), threading.Event()
    ran_on: list[threading.Thread] = []
    try:
        engine.push(lambda: (started.set(), gate.wait()), writes=[engine.Var()], name="holder")
        assert started.wait(30)  # the lane's worker runs it
        _push_inline(lambda: ran_on.append(threading.current_thread()), [engine.Var()])
        assert ran_on == [], "ran on the caller while the lane's worker ran another op"
    finally:
        gate.set()
    within(30, engine.waitall)
    assert ran_on and ran_on[0] is not threading.current_thread()


def test_a_push_from_another_thread_while_an_op_runs_on_the_caller_is_run(threaded, failure_path) -> None:  # type: ignore[no-untyped-def]
    """Another thread pushes to the lane while an op runs on the caller: the worker, woken, finds
    the lane busy and sleeps again; the caller must ring it once its op is done."""
    from _helpers import wait_for, within

    lane_of = engine.current_engine()
    engine.push(lambda: None, writes=[engine.Var()])  # make the lane (and its worker)
    engine.waitall()
    lane = lane_of._lanes[autopar.cpu(0)]["compute"]
    later = engine.Var()
    ran_on: list[threading.Thread] = []

    def on_the_caller() -> None:
        ran_on.append(threading.current_thread())
        pushed = threading.Event()
        threading.Thread(target=lambda: (engine.push(lambda: None, writes=[later]), pushed.set())).start()
        assert pushed.wait(30)
        wait_for(lambda: lane.waiting, 30)  # the worker woke, found the lane busy, and sleeps again

    _push_inline(on_the_caller, [engine.Var()])
    assert ran_on == [threading.current_thread()]
    within(30, lambda: engine.wait_for_var(later))  # hangs if nobody rings the worker


def test_pushes_made_inside_an_op_never_wait_for_back_pressure(threaded) -> None:  # type: ignore[no-untyped-def]
    """The op pushing is itself pending work: if its pushes waited for room, nothing would make room."""
    from _helpers import within

    engine.set_max_pending(2)
    try:
        done: list[int] = []

        def producer() -> None:
            for i in range(6):
                engine.push(lambda i=i: done.append(i), writes=[engine.Var()])

        engine.push(producer, writes=[engine.Var()])
        within(30, engine.waitall)
    finally:
        engine.set_max_pending(None)
    assert sorted(done) == list(range(6))


UNPROTECTED = r"""
import signal, sys, threading, time
from autopar import engine
from autopar.engine._op import OpState

engine.set_engine(sys.argv[1])
main = threading.main_thread().ident
threading.Timer(0.3, lambda: signal.pthread_kill(main, signal.SIGINT)).start()
box = []
start = time.monotonic()
try:
    eng = engine.current_engine()
    # a trusted kernel run on the caller (threaded), or any op (naive): interrupted like Python code
    eng.push_checked(lambda: time.sleep(3), (), (engine.Var(),), engine.Device("cpu:0"), 0, "slow", "compute", True)
except KeyboardInterrupt:
    pass
print(round(time.monotonic() - start, 2))
"""


@pytest.mark.parametrize("policy", ["threaded", "naive"])
def test_ctrl_c_interrupts_an_op_running_on_the_caller_at_once(policy: str) -> None:
    """The frame that calls an op's function is unprotected: a Ctrl-C there is raised at once (and
    stored as the op's failure), not deferred until the op ends (3 s) by the protected push."""
    from _helpers import run_python

    proc = run_python(f"import sys; sys.argv = ['unprotected', {policy!r}]\n" + UNPROTECTED, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert float(proc.stdout.split()[-1]) < 2.0, proc.stdout
