"""Stream lanes through the simulated stream device: ops finish when their device work
does, device faults become failures, watchers do not block each other, the profile shows
device time, and external device work (push_event) is waited for -- on both policies.

The CUDA path is the same engine code with torch streams underneath (``test_cuda.py``).
"""

from __future__ import annotations

import threading
import time

import pytest

import autopar as ap
from _helpers import wait_for, within
from autopar import devices, engine
from autopar.devices import launch
from autopar.devices._sim import SimEvent, SimStream


class Boom(RuntimeError):
    pass


def boom() -> None:
    raise Boom("device fault")


@pytest.fixture(autouse=True)
def _sim():  # type: ignore[no-untyped-def]
    devices.set_sim_devices(2)
    yield
    devices.set_sim_devices(0)


def issued_or_done(op: engine.Op) -> bool:
    return op.state.value in ("issued", "done")


# -- an op on a stream lane is pending until its device work has finished (defect 16) ------


def test_a_stream_op_is_pending_until_its_kernels_finish(threaded) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    a = engine.Var()
    op = engine.push(lambda: launch(lambda: gate.wait(10)), writes=[a], device="sim:0", name="slow kernel")
    try:
        wait_for(lambda: issued_or_done(op))  # the function returned: the kernel is queued
        assert engine.pending() == 1 and a.version == 0 and not op.finished
        assert not engine.current_engine().drain(0.2), "waitall would return before the device finished"
    finally:
        gate.set()
    engine.waitall()
    assert op.state is engine.OpState.DONE and a.version == 1


def test_back_pressure_counts_device_work(threaded) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    engine.set_max_pending(4)
    try:
        for _ in range(4):
            engine.push(lambda: launch(lambda: gate.wait(10)), writes=[engine.Var()], device="sim:0")
        blocked = threading.Thread(target=lambda: engine.push(lambda: None, writes=[engine.Var()]), daemon=True)
        blocked.start()
        blocked.join(0.3)
        assert blocked.is_alive(), "push did not block while four kernels were still running"
    finally:
        gate.set()
        engine.set_max_pending(None)
    blocked.join(10)
    assert not blocked.is_alive()


# -- device faults (defect 4, contract, failures rule 7) --------------------------------------------------------


def test_a_failing_kernel_fails_its_op_and_what_reads_it(eng) -> None:  # type: ignore[no-untyped-def]
    #  kernel (fails on sim:0/compute) --> a --> copy on sim:0/copy_d2h (already issued) --> b
    #                                        \-> host op on cpu:0 --> c
    a, b, c = eng.Var(), eng.Var(), eng.Var()
    host: list[int] = []
    eng.push(lambda: launch(boom), writes=[a], device="sim:0", name="kernel")
    eng.push(lambda: launch(lambda: None), reads=[a], writes=[b], device="sim:0", lane="copy_d2h")
    eng.push(lambda: host.append(1), reads=[a], writes=[c])
    for var in (a, b, c):
        with pytest.raises(Boom, match=r"device fault \[in autopar operation 'kernel' on sim:0"):
            within(10, lambda var=var: eng.wait_for_var(var))
    assert host == []


def test_an_overwrite_after_a_failing_kernel_is_clean(threaded) -> None:  # type: ignore[no-untyped-def]
    a = engine.Var()
    engine.push(lambda: launch(boom), writes=[a], device="sim:0", name="kernel")
    engine.push(lambda: launch(lambda: None), writes=[a], device="sim:0", lane="copy_h2d", name="fresh")
    within(10, lambda: engine.wait_for_var(a))  # the later overwrite has the last word on a
    with pytest.raises(Boom):
        engine.waitall()  # the kernel's failure is still owed once


@pytest.mark.parametrize("method", ["record_event", "wait_event"])
def test_a_failing_stream_call_fails_the_op_and_nothing_hangs(eng, monkeypatch, method) -> None:  # type: ignore[no-untyped-def]
    original = getattr(SimStream, method)
    armed = [True]

    def broken(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if armed and threading.current_thread().name.startswith(("autopar-sim", "MainThread", "test-within")):
            armed.clear()
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SimStream, method, broken)
    a, b = eng.Var(), eng.Var()
    if method == "wait_event":  # only an op that waits for another stream calls it
        eng.push(lambda: launch(lambda: None), writes=[b], device="sim:0", lane="copy_h2d")
    eng.push(lambda: launch(lambda: None), reads=[b], writes=[a], device="sim:0", name="victim")
    if method == "wait_event" and eng.get_engine() == "naive":
        armed.clear()  # the naive engine runs step by step: it never waits for another stream
        within(10, lambda: eng.wait_for_var(a))
        return
    with pytest.raises(RuntimeError, match=rf"illegal memory access.*'victim'.*\({method}\)"):
        within(10, lambda: eng.wait_for_var(a))
    eng.push(lambda: None, writes=[a])  # the engine keeps working
    within(10, lambda: eng.wait_for_var(a))


@pytest.mark.parametrize("method", ["synchronize", "query"])
def test_an_event_that_raises_fails_its_op_and_nothing_hangs(eng, monkeypatch, method) -> None:  # type: ignore[no-untyped-def]
    original = getattr(SimEvent, method)

    def broken(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("CUDA error: unspecified launch failure")

    a, b = eng.Var(), eng.Var()
    host: list[int] = []
    monkeypatch.setattr(SimEvent, method, broken)
    eng.push(lambda: launch(lambda: None), writes=[a], device="sim:0", name="kernel")
    eng.push(lambda: host.append(1), reads=[a], writes=[b])
    if method == "query":  # the engine waits with synchronize(); a broken query changes nothing
        within(10, lambda: eng.wait_for_var(b))
        assert host == [1]
    else:
        for var in (a, b):
            with pytest.raises(RuntimeError, match="unspecified launch failure.*'kernel'"):
                within(10, lambda var=var: eng.wait_for_var(var))
        assert host == []
    monkeypatch.setattr(SimEvent, method, original)


# -- watchers: one per stream, no head-of-line blocking (defect 11) ---------------------------


def test_a_stream_op_whose_input_fails_late_fails_too(threaded) -> None:  # type: ignore[no-untyped-def]
    """B read a on the device and its kernels finished, but the op that wrote a has not been
    seen to finish (its watcher is behind): B must wait for it and inherit its failure,
    not finish clean (catches device_done no longer parking an op behind its upstream).

    external lane of sim:0 (one watcher, in order): [held: done when set] [A: failed] --> a
    sim:0/compute: B reads a (its stream waits for A's event, which is reached) --> b
    """
    held, failed = SimEvent(), SimEvent()
    failed._reach(Boom("device fault"))  # A's device work ended in a fault
    a, b = engine.Var(), engine.Var()
    engine.push_event(held, writes=[engine.Var()], device="sim:0", name="held")
    engine.push_event(failed, writes=[a], device="sim:0", name="A")
    op_b = engine.push(lambda: launch(lambda: None), reads=[a], writes=[b], device="sim:0", name="B")
    try:
        wait_for(lambda: op_b.finished or op_b.blockers > 0)  # B's watcher has seen its kernels finish
        assert not op_b.finished, f"B finished ({op_b.state}) before A, whose output it read"
    finally:
        held._reach(None)
    with pytest.raises(Boom):
        within(10, lambda: engine.wait_for_var(b))
    assert op_b.state is engine.OpState.FAILED


def test_a_host_op_waits_only_for_the_device_work_it_reads(threaded) -> None:  # type: ignore[no-untyped-def]
    #  long kernel (sim:0/compute) --> a --> host op A (cpu:0/compute)
    #  short kernel (sim:0/copy_h2d) --> b --> host op B (cpu:0/copy): must not wait for the long one
    gate = threading.Event()
    a, b = engine.Var(), engine.Var()
    ran_b = threading.Event()
    long_op = engine.push(lambda: launch(lambda: gate.wait(10)), writes=[a], device="sim:0", name="long")
    wait_for(lambda: issued_or_done(long_op))
    engine.push(lambda: None, reads=[a], writes=[engine.Var()], name="after long")
    engine.push(lambda: launch(lambda: None), writes=[b], device="sim:0", lane="copy_h2d", name="short")
    engine.push(ran_b.set, reads=[b], lane="copy", name="after short")
    try:
        assert ran_b.wait(5), "a host op waited behind another op's long kernel"
    finally:
        gate.set()
    engine.waitall()


# -- device times in the profile ----------------------------------------------------------------


def test_the_profile_shows_when_device_work_ran(eng) -> None:  # type: ignore[no-untyped-def]
    with ap.profile() as prof:
        pushed = time.perf_counter_ns()
        eng.push(lambda: launch(lambda: time.sleep(0.2)), writes=[eng.Var()], device="sim:0", name="kernel")
    (record,) = [r for r in prof.records if r.name == "kernel"]
    assert record.duration_s >= 0.19, "the profile shows when the op was issued, not when its kernel ran"
    assert record.start_ns >= pushed and record.state == "done"


# -- push_async on a stream lane ------------------------------------------------------------------


def test_an_async_op_on_a_stream_lane_finishes_when_its_stream_gets_there(eng) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    box = [0]
    a = eng.Var()

    def fn(complete) -> None:  # type: ignore[no-untyped-def]
        launch(lambda: (gate.wait(10), box.__setitem__(0, 7)))  # device work queued by the op
        threading.Thread(target=complete).start()  # complete() comes from elsewhere, before the kernel ends

    release = threading.Timer(0.2, gate.set)
    release.start()
    op = eng.push_async(fn, writes=[a], device="sim:0", name="async kernel")
    got: list[int] = []
    eng.push(lambda: got.append(box[0]), reads=[a])
    within(10, eng.waitall)
    release.join()
    assert got == [7] and op.state is eng.OpState.DONE and a.version == 1


# -- external device work (push_event) ------------------------------------------------------------


def test_ops_wait_for_external_device_work(eng) -> None:  # type: ignore[no-untyped-def]
    user = SimStream("user")  # a stream autopar does not own, like a user's torch stream
    gate = threading.Event()
    box = [0]
    user.launch(lambda: (gate.wait(10), box.__setitem__(0, 42)))
    a = eng.Var()
    release = threading.Timer(0.05, gate.set)  # the user's kernel ends a little later
    release.start()
    eng.push_event(user.record_event(), writes=[a], device="sim:0", name="from_torch")
    got: list[int] = []
    eng.push(lambda: got.append(box[0]), reads=[a])
    eng.push(lambda: launch(lambda: got.append(box[0])), reads=[a], device="sim:1")
    eng.waitall()
    release.join()
    user.close()
    assert got == [42, 42]


def test_simulated_stream_threads_stop_with_their_engine(threaded) -> None:  # type: ignore[no-untyped-def]
    """Defect 14: 20 engine switches must not leave simulated stream threads behind, nor
    the lanes' event watchers (catches Lane.stop no longer stopping its watcher)."""

    def alive() -> int:
        return sum(t.name.startswith(("autopar-simstream", "autopar-events")) for t in threading.enumerate())

    before = alive()
    for _ in range(5):
        engine.push(lambda: launch(lambda: None), writes=[engine.Var()], device="sim:0")
        engine.waitall()
        engine.set_engine("naive")
        engine.push(lambda: launch(lambda: None), writes=[engine.Var()], device="sim:0")
        engine.set_engine("threaded")
    wait_for(lambda: alive() <= before)  # the last engine has pushed nothing yet: it has no stream lanes


# -- a sticky device fault (CUDA's device-side assert) fails the device, not the process (issue 16) --


def test_a_sticky_device_fault_fails_everything_on_that_device_and_nothing_else(eng) -> None:  # type: ignore[no-untyped-def]
    """After a sticky fault (simulated: DeviceLost) every op on the device fails -- those in flight
    with the fault, those pushed later with a DeviceError saying the device is unusable, without
    running -- the lanes' streams are abandoned, and other devices keep working."""
    from autopar.devices import _sim
    from autopar.errors import DeviceError

    def lost() -> None:
        raise _sim.DeviceLost("device-side assert triggered")

    try:
        a, b, c, d = (eng.Var() for _ in range(4))
        eng.push(lambda: launch(lost), writes=[a], device="sim:0", name="assert")
        with pytest.raises(_sim.DeviceLost, match="device-side assert"):
            within(30, lambda: eng.wait_for_var(a))
        ran: list[str] = []
        eng.push(lambda: ran.append("compute"), writes=[b], device="sim:0", name="after")
        eng.push(lambda: ran.append("copy"), writes=[c], device="sim:0", lane="copy_h2d", name="new lane")
        for v in (b, c):
            with pytest.raises(DeviceError, match="sim:0 is unusable: DeviceLost in 'assert'.*restart the process"):
                within(30, lambda v=v: eng.wait_for_var(v))
        assert ran == []  # nothing ran on the lost device
        eng.push(lambda: launch(lambda: None), writes=[d], device="sim:1")  # another device: fine
        within(30, lambda: eng.wait_for_var(d))
        host = eng.Var()
        eng.push(lambda: None, writes=[host])
        within(30, lambda: eng.wait_for_var(host))
        policy, sim0 = eng.current_engine(), devices.Device("sim:0")
        if eng.get_engine() == "threaded":
            streams = [lane.stream for lane in policy._lanes[sim0].values() if lane.stream is not None]
        else:
            streams = [policy._streams[sim0]]
        assert streams and all(s.abandoned for s in streams)  # told to keep what it must not free
    finally:
        _sim._lost.clear()
        engine.current_engine().drain(10.0)
        current = engine.get_engine()  # a fresh engine: this one has sim:0 lost for good
        engine.set_engine("naive" if current == "threaded" else "threaded")
        engine.set_engine(current)
