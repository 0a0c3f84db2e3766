"""Arrays on a cluster node's devices (``node1/cpu:0``) behave like local ones (the contract on many machines).

Names and parsing without a cluster; the rest on the session's local 2-node
cluster (``connected``). Oracles: NumPy, and the naive engine on this
machine's own devices running the same program. The test that kills a
node's runtime comes last in this file; the next ``connected`` test starts
it again (``connect`` restarts lost runtimes).
"""

from __future__ import annotations

import gc
import os
import signal

import numpy as np
import pytest
import torch

import autopar as ap
import autopar.cluster
from autopar import engine
from autopar.devices import _device

N0, N1 = "node0/cpu:0", "node1/cpu:0"

# -- without a cluster ------------------------------------------------------------------------


def test_remote_device_names_parse_and_compare_by_node(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def fake(node: str, kind: str, index: int) -> str | None:
        return None if (node, kind, index) in {("node1", "cpu", 0), ("node1", "cuda", 1)} else "node1 has node1/cpu:0"

    monkeypatch.setattr(_device, "_remote_resolver", fake)  # as a connected session registers one
    d = ap.Device("node1/cpu:0")
    assert (d.node, d.kind, d.index, str(d), d.local_name) == ("node1", "cpu", 0, "node1/cpu:0", "cpu:0")
    assert ap.Device(" NODE1/CPU:0 ") is d and ap.Device("node1/gpu:1") == ap.Device("node1/cuda:1")
    assert d != ap.cpu(0) and ap.Device("node1/cuda:1").torch_name == "cuda:1"
    with pytest.raises(ap.DeviceError, match="its data lives on node node1"):
        d.torch_device  # noqa: B018
    with pytest.raises(ap.DeviceError, match=r"node1/cpu:3 does not exist: node1 has node1/cpu:0"):
        ap.Device("node1/cpu:3")
    monkeypatch.setattr(_device, "_remote_resolver", None)  # as without a session
    with pytest.raises(ap.DeviceError, match=r"node1/cpu:0 does not exist: .*connect\(address\) first"):
        ap.Device("node1/cpu:0")
    for bad in ("no de/cpu:0", "/cpu:0", "node1/sim:0", "node1/tpu:0"):
        with pytest.raises(ap.DeviceError, match="cannot parse device"):
            ap.Device(bad)


# -- on the session's local cluster -------------------------------------------------------------


def test_arrays_on_a_node_compute_there_and_read_back(connected) -> None:  # type: ignore[no-untyped-def]
    a = np.arange(12.0).reshape(3, 4)
    x = ap.asarray(a, device=N1)
    assert x.device == ap.Device(N1) and x.shape == (3, 4)
    y = (x @ x.T + 1)[1:, ::2]  # an op, a view as data, an op on the view
    np.testing.assert_array_equal(y.numpy(), (a @ a.T + 1)[1:, ::2])
    x[0] = 5.0  # a write through a view, on the node
    x[:, 1] *= 2
    want = a.copy()
    want[0] = 5.0
    want[:, 1] *= 2
    np.testing.assert_array_equal(x.numpy(), want)
    assert x.sum().item() == want.sum()
    assert "node1/cpu:0" in repr(x)
    nz = ap.nonzero(x > 6)[0]  # data-dependent: its shape comes back from the node
    np.testing.assert_array_equal(nz.numpy(), np.nonzero(want > 6)[0])
    z = ap.call(torch.sin, x, shape=x.shape)  # the user's own function runs on the node
    np.testing.assert_allclose(z.numpy(), np.sin(want))
    e = ap.eye(3, device=N0)
    np.testing.assert_array_equal(ap.linspace(0, 1, 5, device=N0).numpy(), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(e.numpy(), np.eye(3))
    with pytest.raises(ValueError, match="matmul"):  # bad input raises at the call, on the driver
        x @ ap.ones((5, 5), device=N1)


def test_the_naive_engine_runs_remote_ops_too(connected) -> None:  # type: ignore[no-untyped-def]
    engine.set_engine("naive")
    try:
        a = np.arange(6.0).reshape(2, 3)
        x = ap.asarray(a, device=N0)
        y = (x @ x.T).to(N1) + (x[:, :2] @ x[:, 1:].T).to("cpu:0").to(N1)
        np.testing.assert_array_equal(y.numpy(), a @ a.T + a[:, :2] @ a[:, 1:].T)
    finally:
        engine.set_engine("threaded")


def test_seeded_draws_on_a_node_equal_the_same_draws_here(connected) -> None:  # type: ignore[no-untyped-def]
    ap.random.seed(1234)
    there = ap.random.normal(size=(6,), device=N0).numpy()
    ap.random.seed(1234)
    here = ap.random.normal(size=(6,), device="cpu:0").numpy()
    np.testing.assert_array_equal(there, here)  # seed(n) reached the node's generator


def test_copies_go_node_to_node_and_to_the_driver_on_copy_lanes(connected, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from autopar.cluster import _node

    lanes: list[tuple[str, str]] = []
    push_async = engine.push_async

    def spy(fn, reads=(), writes=(), device=None, priority=0, name="", lane="compute"):  # type: ignore[no-untyped-def]
        lanes.append((str(device), lane))
        return push_async(fn, reads, writes, device, priority, name, lane)

    moves: list[str] = []
    submit_move = _node.RemoteNode.submit_move
    monkeypatch.setattr(engine, "push_async", spy)
    monkeypatch.setattr(_node.RemoteNode, "submit_move",
                        lambda self, src, *a: moves.append(f"{src.name}->{self.name}") or submit_move(self, src, *a))
    a = np.arange(10.0)
    x = ap.asarray(a, device=N0)  # driver -> node0
    y = x.to(N1)  # node0 -> node1, through the object store
    z = (y * 2).to("cpu:0")  # node1 -> the driver
    np.testing.assert_array_equal(z.numpy(), a * 2)
    assert moves == ["node0->node1"]
    assert (N0, "copy") in lanes and (N1, "copy") in lanes
    w = ap.zeros(10, device=N1)
    x.copyto(w)  # into an array on another node: moved there, then written there
    np.testing.assert_array_equal(w.numpy(), a)


def _sleepy(x: torch.Tensor) -> torch.Tensor:
    import time

    time.sleep(2)  # a long kernel: what the copy must not wait for (not synchronisation)
    return x + 1


def test_a_copy_between_nodes_overlaps_compute_on_both(connected) -> None:  # type: ignore[no-untyped-def]
    src = ap.arange(5.0, device=N0)
    busy_dst = ap.ones(3, device=N1)
    ap.waitall()
    long0 = ap.call(_sleepy, src, shape=(5,))  # node0's compute lane busy
    long1 = ap.call(_sleepy, busy_dst, shape=(3,))  # node1's too
    moved = src.to(N1)  # read on node0, written on node1 by their copy lanes: neither waits for a product
    np.testing.assert_array_equal(moved.numpy(), np.arange(5.0))
    assert long0._storage.var.pending_writes and long1._storage.var.pending_writes, "the copy waited for compute"
    np.testing.assert_array_equal(long0.numpy(), np.arange(5.0) + 1)
    np.testing.assert_array_equal(long1.numpy(), np.full(3, 2.0))


@pytest.mark.parametrize("seed", [21, 22])
def test_array_programs_over_two_nodes_and_the_driver_equal_the_naive_engine(connected, seed: int) -> None:  # type: ignore[no-untyped-def]
    from test_array_differential import run_program

    devices = [ap.Device(N0), ap.Device(N1), ap.cpu(0)]
    engine.set_engine("naive")
    try:
        want = run_program(seed, 250, use_autopar=True, devices=[ap.cpu(0)] * 3)
    finally:
        engine.set_engine("threaded")
    got = run_program(seed, 250, use_autopar=True, devices=devices)
    numpy = run_program(seed, 250, use_autopar=False, devices=[None] * 3)  # type: ignore[list-item]
    for g, w, n in zip(got, want, numpy):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g, n, rtol=1e-4, atol=1e-5)


def _boom(x: torch.Tensor) -> torch.Tensor:
    raise ArithmeticError("boom on the node")


def test_a_failed_op_on_a_node_fails_its_dependants_with_its_own_error(connected) -> None:  # type: ignore[no-untyped-def]
    x = ap.ones(4, device=N1)
    bad = ap.call(_boom, x, shape=(4,))
    after = (bad + 1).to(N0, non_blocking=True)
    fine = x + 1
    with pytest.raises(ArithmeticError, match=r"^boom on the node \[in autopar operation '_boom' on node1/cpu:0\]$"):
        after.numpy()
    ap.waitall()  # observed by the read: not raised again
    unread = ap.call(_boom, x, shape=(4,)) * 2  # noqa: F841
    with pytest.raises(ArithmeticError, match="boom on the node"):
        ap.waitall()
    ap.waitall()  # raised once
    np.testing.assert_array_equal(fine.numpy(), np.full(4, 2.0))


def test_allreduce_across_nodes_and_the_driver_sums_into_every_array(connected) -> None:  # type: ignore[no-untyped-def]
    from autopar import parallel

    devices = [ap.Device(N0), ap.Device(N1), ap.cpu(0)]
    parts = [np.arange(6.0).reshape(2, 3) * (i + 1) for i in range(3)]
    arrays = [ap.asarray(p, device=d) for p, d in zip(parts, devices)]
    parallel.allreduce(arrays[:2])  # two nodes
    for a in arrays[:2]:
        np.testing.assert_array_equal(a.numpy(), parts[0] + parts[1])
    parallel.allreduce(arrays)  # two nodes and the driver
    for a in arrays:
        np.testing.assert_array_equal(a.numpy(), 2 * (parts[0] + parts[1]) + parts[2])
    assert [a.device for a in arrays] == devices


def test_dropped_remote_arrays_are_freed_on_their_node(connected) -> None:  # type: ignore[no-untyped-def]
    from autopar.cluster import _session

    node = _session.node("node1")
    kept = ap.ones(8, device=N1)
    dropped = [kept + i for i in range(5)]
    ap.waitall()
    keys = {d._storage.key for d in dropped}
    assert keys <= set(node.keys())
    del dropped
    gc.collect()
    held = set(node.keys())  # sends the freed keys first
    assert not keys & held and kept._storage.key in held


def test_the_chapters_experiment_with_one_device_per_node(connected) -> None:  # type: ignore[no-untyped-def]
    from autopar.benchmarks import chapter

    result = chapter.run_chapter(ap.Device(N0), ap.Device(N1), ap.cpu(0), 64, 4, report=lambda line: None, trials=1)
    assert (result.device1, result.device2) == (N0, N1)
    assert min(result.t1, result.t2, result.both, result.run, result.copy, result.run_and_copy) > 0
    x = ap.random.uniform(size=(64, 64), device=N0)
    ys = chapter.products(x, 3)
    np.testing.assert_allclose(ys[2].to("cpu:0").numpy(), x.numpy() @ x.numpy(), rtol=1e-5)


def test_demo_runs_the_chapter_with_one_device_per_node(connected) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "autopar", "demo", "--cluster", connected.address, "--size", "64",
                           "--repeat", "4", "--trials", "1"], capture_output=True, text=True, timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "devices: node0/cpu:0 and node1/cpu:0 -- one device on each of two cluster nodes" in out
    assert "node0/cpu:0 & node1/cpu:0: " in out and "Run on node0/cpu:0 and copy to node1/cpu:0: " in out
    assert "both / max(T1, T2)" in out and "run+copy / max(run, copy)" in out
    assert autopar.cluster.is_connected() and len(autopar.cluster.devices()) == 2  # its own session only


def test_bench_measures_remote_devices_against_plain_ray(connected) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "autopar", "bench", "--cluster", connected.address, "--quick"],
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for line in ("array op round trip", "array ops pipelined", "8 MB from node0 to node1",
                 "x.to('node1/cpu:0'), x on node0/cpu:0", "autopar arrays: both / max(T1, T2)", "load average"):
        assert line in out, out
    from ray._private import state  # the GCS's table (Ray's state API needs the dashboard, off here)

    plain = [a for a in state.actors().values() if a["ActorClassName"].endswith("PlainActor")]
    assert plain and all(a["State"] == "DEAD" for a in plain), plain  # it killed its plain actors


def test_disconnect_with_ops_in_flight_fails_them_and_nothing_hangs(connected) -> None:  # type: ignore[no-untyped-def]
    x = ap.ones(4, device=N1)
    running = ap.call(_sleepy, x, shape=(4,))
    uploads = [ap.asarray(np.full(3, float(i)), device=N0 if i % 2 else N1) for i in range(20)]
    autopar.cluster.disconnect()
    assert engine.current_engine().drain(10.0), f"{engine.pending()} op(s) still pending after disconnect"
    with pytest.raises((autopar.cluster.ClusterError, ap.NodeLostError), match="disconnect"):
        running.numpy()
    for u in uploads:  # each finished before the disconnect, or failed naming it: none hangs
        try:
            u.wait_to_read()
        except (autopar.cluster.ClusterError, ap.NodeLostError) as error:
            assert "disconnect" in str(error)
    ap.waitall()


def _slow(x: torch.Tensor) -> torch.Tensor:
    import time

    time.sleep(30)  # a kernel still running when its node is killed (not synchronisation)
    return x


def test_a_killed_runtime_fails_its_arrays_with_node_lost_error_and_connect_recovers(connected) -> None:  # type: ignore[no-untyped-def]
    from autopar.cluster import _session

    node = _session.node("node1")
    done = ap.arange(4.0, device=N1)
    done.wait_to_read()
    running = ap.call(_slow, done, shape=(4,))
    after = running + 1
    elsewhere = ap.arange(4.0, device=N0)
    assert node.info is not None
    os.kill(node.info.pid, signal.SIGKILL)
    with pytest.raises(ap.NodeLostError, match="node1") as lost:
        after.numpy()
    assert lost.value.node == "node1"
    np.testing.assert_array_equal((elsewhere * 2).numpy(), np.arange(4.0) * 2)  # the other node works
    with pytest.raises(ap.NodeLostError, match="node1"):
        ap.waitall()  # the arrays node1 held failed too, unread so far: owed to waitall
    ap.waitall()  # returns: nothing hangs, the loss was raised once
    with pytest.raises(ap.NodeLostError, match="node1"):
        done.numpy()  # finished there before the loss: its value is gone too
    with pytest.raises(ap.DeviceError, match="node1 was lost.*connect"):
        ap.ones(2, device=N1)
    autopar.cluster.connect(connected.address)  # starts a fresh runtime on node1
    np.testing.assert_array_equal((ap.arange(3.0, device=N1) + 1).numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(ap.NodeLostError):
        done.numpy()  # the old runtime's arrays stay lost


def test_numpy_draws_on_a_node_follow_seed_and_generators_stay_local(connected) -> None:  # type: ignore[no-untyped-def]
    """The legacy draws of NumPy's distributions run on a node's generator (seed(n) reaches it); a Generator
    is a stream of this process, and says so for a node's device."""
    ap.random.seed(77)
    there = ap.random.standard_normal(6, device=N0).numpy()
    ap.random.seed(77)
    here = ap.random.standard_normal(6, device="cpu:0").numpy()
    np.testing.assert_array_equal(there, here)
    with pytest.raises(ValueError, match="a Generator draws on this process's devices"):
        ap.random.default_rng(1).normal(size=3, device=N0)
