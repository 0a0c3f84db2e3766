"""The profiler against workloads of known structure, and its output formats."""

from __future__ import annotations

import json
import struct
import time

import pytest

import autopar as ap
from autopar import engine


def sleeper(seconds: float):  # type: ignore[no-untyped-def]
    def sleep() -> None:
        time.sleep(seconds)

    return sleep


def test_two_sleeps_on_two_devices_overlap(two_cpus) -> None:  # type: ignore[no-untyped-def]
    with ap.profile() as prof:
        engine.push(sleeper(0.2), writes=[engine.Var()], device="cpu:0", name="a")
        engine.push(sleeper(0.2), writes=[engine.Var()], device="cpu:1", name="b")
    s = prof.summary()
    assert [(x.device, x.lane, x.ops) for x in s.lanes] == [("cpu:0", "compute", 1), ("cpu:1", "compute", 1)]
    assert s.overlap_share > 0.8
    assert all(x.busy_s >= 0.19 for x in s.lanes)


def test_chained_ops_do_not_overlap(two_cpus) -> None:  # type: ignore[no-untyped-def]
    v = engine.Var()
    with ap.profile() as prof:
        for i in range(4):
            engine.push(sleeper(0.03), writes=[v], device=f"cpu:{i % 2}", lane="copy" if i == 2 else "compute")
    s = prof.summary()
    assert s.overlap_share < 0.2
    assert sum(x.ops for x in s.lanes) == 4 and len(s.lanes) == 3
    text = str(s)
    assert "cpu:0" in text and "copy" in text and "of the time" in text


def test_failures_are_recorded(two_cpus) -> None:  # type: ignore[no-untyped-def]
    def bad() -> None:
        raise KeyError("nope")

    v = engine.Var()
    with ap.profile() as prof:
        engine.push(bad, writes=[v], name="bad")
        engine.push(sleeper(0), reads=[v], name="after")
    states = {r.name: r.state for r in prof.records}
    assert states == {"bad": "failed", "after": "skipped"}
    assert "KeyError" in next(r.error for r in prof.records if r.name == "bad")
    assert prof.summary().failed == 1 and prof.summary().skipped == 1
    with pytest.raises(KeyError):
        ap.waitall()


def test_chrome_trace_is_valid_trace_event_format(tmp_path, two_cpus) -> None:  # type: ignore[no-untyped-def]
    with ap.profile() as prof:
        x = ap.random.uniform(size=(200, 200), device="cpu:0")
        y = [x.dot(x) for _ in range(3)]
        z = [t.copyto(ap.cpu(1)) for t in y]
        ap.ones((200, 200), device="cpu:1") @ z[0]
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    spans = [e for e in events if e["ph"] == "X"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    assert sorted(processes.values()) == ["cpu:0", "cpu:1"]
    assert len(set(threads)) == len(threads)  # one row per lane
    assert ("copy" in threads.values()) and ("compute" in threads.values())
    assert {e["name"] for e in spans} >= {"random.uniform", "dot", "copyto", "matmul"}
    for e in spans:
        assert set(e) >= {"name", "ph", "pid", "tid", "ts", "dur"}
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert (e["pid"], e["tid"]) in threads
    starts = [e["ts"] for e in spans]
    assert starts == sorted(starts)


def test_plot_writes_a_png(tmp_path, two_cpus) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    with ap.profile() as prof:
        engine.push(sleeper(0.02), writes=[engine.Var()], device="cpu:0", name="a")
        engine.push(sleeper(0.02), writes=[engine.Var()], device="cpu:1", lane="copy", name="b")
    path = tmp_path / "timeline.png"
    prof.plot(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 600 and height >= 150


def test_no_listener_after_the_block() -> None:
    from autopar.engine import _hooks

    with ap.profile():
        pass
    assert _hooks.listeners == ()
    op = engine.push(lambda: None)
    ap.waitall()
    assert op.t_start == 0  # no timestamps are taken with nobody listening


@pytest.mark.parametrize("policy", ["threaded", "naive"])
def test_a_profile_block_inside_an_op_raises_instead_of_waiting_for_itself(policy: str) -> None:
    from autopar.errors import BlockingCallError

    engine.set_engine(policy)
    errors: list[BaseException] = []

    def profiled() -> None:
        try:
            with ap.profile():
                pass
        except BlockingCallError as error:
            errors.append(error)

    engine.push(profiled, name="profiled")
    ap.waitall()
    assert len(errors) == 1
    assert "profile() (leaving its block) was called inside engine operation 'profiled'" in str(errors[0])
    engine.set_engine("threaded")


def test_gradient_traffic_hidden_behind_compute_is_measured() -> None:
    """Records of a known timeline: a sum half under a backward op, a copy wholly under it."""
    from autopar.profiler import OpRecord, Profile

    prof = Profile()
    ms = 1_000_000
    prof.records += [
        OpRecord("backward conv2d", "cpu:0", "compute", 0, 1 * ms, 100 * ms, "done"),
        OpRecord("allreduce copy", "cpu:1", "copy", 0, 20 * ms, 40 * ms, "done", kind="copy"),
        OpRecord("add", "cpu:0", "compute", 0, 80 * ms, 120 * ms, "done", kind="sum"),
        OpRecord("allreduce sum", "cpu:1", "copy", 0, 150 * ms, 160 * ms, "done"),  # not traffic: its kind says
    ]
    summary = prof.summary()
    assert summary.traffic_s == pytest.approx(0.060)
    assert summary.traffic_hidden_s == pytest.approx(0.040)  # 20-40 and 80-100
    assert summary.traffic_hidden_share == pytest.approx(2 / 3)
    assert ("traffic between devices (copies, and sums of copied data) 0.0600 s, 66.7% of it while a compute lane "
            "was busy") in str(summary)  # fmt: skip


def test_a_real_steps_gradient_traffic_is_found_and_measured_under_a_busy_compute_lane(sums) -> None:  # type: ignore[no-untyped-def]
    """A data-parallel step on cpu:0 and cpu:1, profiled while an op on cpu:2's compute lane runs from
    before the step until its updates are read: every allreduce copy and sum the step pushed counts as
    gradient traffic, and all of it as hidden -- both ways of summing ("copies": as for GPUs, forced on
    CPU devices). A rename of the step's ops, or a summary that missed traffic, would show."""
    import threading

    import numpy as np

    from autopar import autograd, parallel

    engine.set_engine("threaded")
    ap.set_cpu_devices(3)
    try:
        busy, release = threading.Event(), threading.Event()

        def hold(t):  # type: ignore[no-untyped-def]
            busy.set()
            assert release.wait(60), "the test never released the busy op"
            return t

        rng = np.random.default_rng(0)
        devices = [ap.cpu(0), ap.cpu(1)]
        # two parameters: one bucket, which plain SGD updates in one kernel (one parameter: its own op)
        replicas = parallel.replicate([ap.asarray(rng.standard_normal(s).astype(np.float32)) for s in ((6, 4), (4,))],
                                      devices)  # fmt: skip
        trainer = parallel.DataParallel(replicas, parallel.sgd(0.1))
        xs = [ap.asarray(rng.standard_normal((5, 6)).astype(np.float32), device=d) for d in devices]
        with ap.profile() as prof:
            held = ap.call(hold, ap.ones(2, device=ap.cpu(2)), shape=(2,), name="busy")
            assert busy.wait(60), "the busy op never started"
            with autograd.record():
                losses = [ap.tanh(x @ p[0] + p[1]).sum() for x, p in zip(xs, replicas)]
            trainer.step(losses)
            for row in replicas:
                row[0].wait_to_read()  # summed and updated while cpu:2's compute lane is busy
            release.set()
            held.wait_to_read()
    finally:
        release.set()
        ap.waitall()
        ap.set_cpu_devices(1)
    traffic = [r for r in prof.records if r.name.startswith("allreduce")]
    if sums == "shared":  # one op reads both CPU devices' gradients, sums, updates both
        assert [(r.name, r.kind) for r in traffic] == [("allreduce sum and update", "sum")], traffic
    else:
        assert {r.name for r in traffic} == {"allreduce copy", "allreduce sum"} and len(traffic) == 4, traffic
        assert {(r.name, r.kind) for r in traffic} == {("allreduce copy", "copy"), ("allreduce sum", "sum")}
    assert {r.name for r in prof.records if r.kind} == {r.name for r in traffic}  # nothing else
    summary = prof.summary()
    spans = [(r.end_ns - r.start_ns) / 1e9 for r in traffic]  # merged: at least the longest, at most the sum
    assert max(spans) - 1e-9 <= summary.traffic_s <= sum(spans) + 1e-9 and summary.traffic_s > 0, (summary, spans)
    assert summary.traffic_hidden_share == pytest.approx(1.0)
    assert "of it while a compute lane was busy" in str(summary)


def test_an_error_that_holds_the_failed_array_does_not_deadlock_the_lane(threaded) -> None:  # type: ignore[no-untyped-def]
    """The profiler formatted a failed op's error under the engine lock: ``ValueError("msg", out)``
    formats ``repr(out)``, which waits for the op being recorded -- the lane deadlocked. Now the
    error is formatted when the records are read."""
    from _helpers import within

    x = ap.ones(3)
    box: list[ap.NDArray] = []

    def bad(t):  # type: ignore[no-untyped-def]
        raise ValueError("bad value", box[0])

    def profiled():  # type: ignore[no-untyped-def]
        with ap.profile() as prof:
            box.append(ap.call(bad, x, shape=(3,), name="holder"))
            with pytest.raises(ValueError):
                ap.waitall()
        return prof

    prof = within(30, profiled)  # the whole block, leaving it included: a deadlock fails here
    (record,) = [r for r in prof.records if r.name == "holder"]
    assert record.state == "failed" and record.error == "ValueError: bad value, <NDArray>", record.error
    assert (x + 1).tolist() == [2.0] * 3  # the lanes still work


def test_a_failed_ops_error_is_formatted_off_the_engine_lock(threaded) -> None:  # type: ignore[no-untyped-def]
    """An error's message is user code (``__str__``), which may need the engine -- as a repr of an
    array does: the profiler formats it when the records are read, never while the engine lock is
    held (the lane's worker holds it while an op is recorded). Here the message itself says whether
    another thread could take the engine lock while it was made."""
    import threading

    from _helpers import within

    lock = ap.engine.current_engine()._lock

    class Telling(Exception):
        def __str__(self) -> str:
            got: list[bool] = []
            probe = threading.Thread(target=lambda: got.append(lock.acquire(timeout=2) and (lock.release() or True)))
            probe.start()
            probe.join()
            return "made off the lock" if got == [True] else "made under the engine lock"

    def bad(t):  # type: ignore[no-untyped-def]
        raise Telling()

    def profiled():  # type: ignore[no-untyped-def]
        with ap.profile() as prof:
            ap.call(bad, ap.ones(3), shape=(3,), name="teller")
            with pytest.raises(Telling):
                ap.waitall()
        return prof

    prof = within(60, profiled)
    (record,) = [r for r in prof.records if r.name == "teller"]
    assert record.error == "Telling: made off the lock", record.error


def test_the_books_hand_written_allreduce_counts_as_traffic() -> None:
    """d2l's from-scratch allreduce: copies with .to(), sums with +=, the broadcast back with [:] =.
    Counted by what the ops do: every copy and sum, and not the forward op that reads a copied shard."""
    import numpy as np

    ap.set_cpu_devices(2)
    try:
        devices = [ap.cpu(0), ap.cpu(1)]
        grads = [ap.asarray(np.full((3, 3), d + 1.0, dtype=np.float32), device=dev) for d, dev in enumerate(devices)]
        with ap.profile() as prof:
            shard = ap.ones((2, 3)).to(devices[1], non_blocking=True)
            out = shard @ grads[1]  # forward on a copied shard: new work, not traffic
            for i in range(1, len(grads)):
                grads[0][:] += grads[i].to(grads[0].device)
            for i in range(1, len(grads)):
                grads[i][:] = grads[0].to(grads[i].device)
            out.wait_to_read()
        ap.waitall()
    finally:
        ap.set_cpu_devices(1)
    kinds = [(r.name, r.device, r.kind) for r in sorted(prof.records, key=lambda r: r.push_ns)]
    copies = [k for k in kinds if k[2] == "copy"]
    sums = [k for k in kinds if k[2] == "sum"]
    assert len(copies) == 3 and len(sums) == 2, kinds  # the shard's copy, two gradient copies; += and [:] =
    assert not any(k[2] for k in kinds if k[0] in ("matmul", "dot")), kinds
    assert np.array_equal(grads[1].numpy(), np.full((3, 3), 3.0))
    assert prof.summary().traffic_s > 0


def test_plot_zooms_on_slivers_and_shades_phases(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("matplotlib")
    from autopar.profiler import OpRecord, Profile
    from autopar.profiler._plot import _detail_window
    from autopar.profiler._profile import Phase

    ms = 1_000_000
    prof = Profile()
    prof.records += [OpRecord("conv2d", "cpu:0", "compute", 0, 0, 1000 * ms, "done"),
                     OpRecord("copyto", "cpu:1", "copy", 0, 400 * ms, 401 * ms, "done", kind="copy")]  # fmt: skip
    prof.phases.append(Phase("apart", 0, 500 * ms))
    lo, hi = _detail_window(prof._ran(), 0, 1000 * ms)  # type: ignore[misc]
    assert lo < 400 < 401 < hi and hi - lo < 50  # a window around the 1 ms copy, not the whole second
    prof.plot(tmp_path / "t.png")
    prof.plot(tmp_path / "w.png", window=(390.0, 410.0))
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG" and (tmp_path / "w.png").exists()
    trace = prof.chrome_trace()["traceEvents"]
    assert any(e.get("cat") == "phase" and e["name"] == "apart" for e in trace)
    assert any(e.get("args", {}).get("traffic") == "copy" for e in trace)


def test_copied_data_overwritten_by_local_work_is_no_longer_traffic() -> None:
    """A var stops being 'arrived' when other work overwrites it: adding it afterwards is not a sum of copied data."""
    ap.set_cpu_devices(2)
    try:
        a, acc = ap.ones(3, device=ap.cpu(0)), ap.zeros(3, device=ap.cpu(1))
        ap.waitall()
        with ap.profile() as prof:
            b = a.to(ap.cpu(1))
            b[...] = 5.0  # local work writes it
            acc += b
            acc += a.to(ap.cpu(1))  # a true sum of copied data
        ap.waitall()
    finally:
        ap.set_cpu_devices(1)
    kinds = [r.kind for r in sorted(prof.records, key=lambda r: r.push_ns)]
    assert kinds == ["copy", "", "", "copy", "sum"], kinds
    assert acc.tolist() == [6.0, 6.0, 6.0]


def test_a_copyto_into_an_existing_array_on_its_own_device_is_not_traffic() -> None:
    """Restoring parameters from a snapshot (``copyto`` on one device) runs on a copy lane and writes an
    existing array -- or part of one, reading what it keeps -- but moves nothing between devices: not a
    sum. The one-op sum of CPU devices of one process (reads and writes every device's array, on a copy
    lane) still is."""
    import numpy as np

    from autopar import parallel

    ap.set_cpu_devices(2)
    try:
        kept, param = ap.ones(3, device=ap.cpu(0)), ap.zeros(3, device=ap.cpu(0))
        grads = [ap.ones(3, device=ap.cpu(0)), ap.ones(3, device=ap.cpu(1))]
        ap.waitall()
        with ap.profile() as prof:
            param += 1.0  # seen: an existing array
            kept.copyto(param)
            kept[:2].copyto(param[1:])
            parallel.allreduce(grads)
            ap.waitall()
    finally:
        ap.set_cpu_devices(1)
    kinds = [(r.name, r.lane, r.kind) for r in sorted(prof.records, key=lambda r: r.push_ns)]
    assert [k for k in kinds if k[0] == "copyto"] == [("copyto", "copy", "")] * 2, kinds
    assert [k[2] for k in kinds if k[0].startswith("allreduce")] in (["sum"], ["copy", "copy", "sum", "sum"]), kinds
    assert np.array_equal(param.numpy(), np.ones(3)) and np.array_equal(grads[1].numpy(), np.full(3, 2.0))
