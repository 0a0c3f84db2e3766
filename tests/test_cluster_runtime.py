"""The node runtimes on the session's local 2-node cluster: calls, moves, cores, node loss.

Oracles: NumPy and torch run here on the driver.
"""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest
import torch

import autopar
import autopar.cluster
from autopar.cluster import _node, _session
from autopar.cluster._kernels import UserFunction, lookup
from autopar.cluster._runtime import pick_cores

_next_key = iter(range(1_000_000, 2_000_000))


def key() -> int:
    return next(_next_key)


def node(name: str) -> _node.RemoteNode:
    return _session.node(name)


# -- without a cluster --------------------------------------------------------------------------


def test_pick_cores_wraps_around_the_allowed_cores() -> None:
    assert pick_cores([0, 1], 0, 1) == [0]
    assert pick_cores([0, 1], 1, 1) == [1]
    assert pick_cores([0, 1], 2, 1) == [0]  # a third 1-CPU node on a 2-core machine shares core 0
    assert pick_cores([4, 5, 6], 2, 2) == [4, 6]
    assert pick_cores([0, 1], 0, 8) == [0, 1]  # more CPUs than cores: every core once


def test_lookup_names_only_autopar_ops() -> None:
    assert lookup("add").fn(torch.ones(2), torch.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(KeyError, match="'os.system' is not an autopar op; known: add"):
        lookup("os.system")
    with pytest.raises(TypeError, match="a node runs no other code"):
        lookup(print)  # type: ignore[arg-type]
    assert lookup(UserFunction(abs, "mine")).fn is abs


# -- calls -----------------------------------------------------------------------------------


def test_write_run_read_match_numpy(connected) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 7), dtype=np.float32), rng.standard_normal((7, 3), dtype=np.float32)
    n = node("node1")
    ka, kb, kc, kd, ke = key(), key(), key(), key(), key()
    n.write(ka, "cpu:0", a)
    n.write(kb, "cpu:0", b)
    n.run("matmul", (ka, kb), (kc,), "cpu:0")
    n.run("subtract", (kc, kc), (kd,), "cpu:0")
    n.run("sum", (kc,), (ke,), "cpu:0")
    np.testing.assert_allclose(n.read(kc), a @ b, rtol=1e-5)
    np.testing.assert_array_equal(n.read(kd), np.zeros((5, 3), np.float32))
    np.testing.assert_allclose(n.read(ke), (a @ b).sum(), rtol=1e-4)
    n.run("split", (ka,), (kd, ke), "cpu:0", {"parts": 2})  # several outputs; overwrites kd, ke
    np.testing.assert_array_equal(n.read(ke), a[3:])
    n.free((ka, kb, kc, kd, ke))
    assert not {ka, kb, kc, kd, ke} & set(n.keys())


def test_creation_in_place_and_user_functions(connected) -> None:  # type: ignore[no-untyped-def]
    n = node("node0")
    kx, ky, kz = key(), key(), key()
    n.run("randn", (), (kx,), "cpu:0", {"shape": (4, 4), "dtype": "float64", "seed": 7})
    expected = torch.randn((4, 4), dtype=torch.float64, generator=torch.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(n.read(kx), expected)
    n.run("full", (), (ky,), "cpu:0", {"shape": (4, 4), "value": 2.5, "dtype": "float64"})
    n.run("add_", (kx, ky), (kx,), "cpu:0")
    np.testing.assert_array_equal(n.read(kx), expected + 2.5)
    n.run(UserFunction(lambda t, u: torch.tanh(t) * u, "tanh_times"), (kx, ky), (kz,), "cpu:0")
    np.testing.assert_allclose(n.read(kz), np.tanh(expected + 2.5) * 2.5)
    n.free((kx, ky, kz))


def test_kernel_errors_come_back_with_their_type_and_the_node_keeps_working(connected) -> None:  # type: ignore[no-untyped-def]
    n = node("node1")
    ka, kb = key(), key()
    n.write(ka, "cpu:0", np.ones((2, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"cannot be multiplied.*'matmul'"):
        n.run("matmul", (ka, ka), (kb,), "cpu:0")
    with pytest.raises(RuntimeError, match="cannot be multiplied"):  # a failed output has no value
        n.read(kb)
    with pytest.raises(KeyError, match="is not an autopar op"):
        n.run("eval", (ka,), (kb,), "cpu:0")
    with pytest.raises(KeyError, match=f"node node1 holds no data under key {ka + 10**6}"):
        n.run("copy", (ka + 10**6,), (kb,), "cpu:0")
    with pytest.raises(autopar.DeviceError, match=r"node1/cuda:0: no such device; node node1 has node1/cpu:0"):
        n.run("copy", (ka,), (kb,), "cuda:0")
    with pytest.raises(ValueError, match=r"'add_' updates its first input in place: its outputs must be"):
        n.run("add_", (ka, ka), (kb,), "cpu:0")
    n.run("add", (ka, ka), (kb,), "cpu:0")  # writing kb again clears its failure
    np.testing.assert_array_equal(n.read(kb), np.full((2, 3), 2, np.float32))
    n.free((ka, kb))


def test_move_between_nodes(connected) -> None:  # type: ignore[no-untyped-def]
    src, dst = node("node0"), node("node1")
    data = np.arange(3 * 1024 * 1024, dtype=np.float32).reshape(1024, -1)  # 12 MiB: through the object store
    ks, kd, kr = key(), key(), key()
    src.write(ks, "cpu:0", data)
    _node.move(src, ks, dst, kd, "cpu:0")
    dst.run("add", (kd, kd), (kr,), "cpu:0")
    np.testing.assert_array_equal(dst.read(kr), data * 2)
    assert ks not in dst.keys() and kd not in src.keys()
    src.free((ks,))
    dst.free((kd, kr))


def test_runtimes_pin_their_cores_and_use_their_nodes_cpus(connected) -> None:  # type: ignore[no-untyped-def]
    infos = [node(name).info for name in ("node0", "node1")]
    assert all(info is not None for info in infos)
    assert [info.torch_threads for info in infos] == [1, 1]  # type: ignore[union-attr]  # 1 CPU per node
    assert [len(info.cores) for info in infos] == [1, 1]  # type: ignore[union-attr]
    if len(os.sched_getaffinity(0)) >= 2:
        assert infos[0].cores != infos[1].cores  # type: ignore[union-attr]  # side by side, not on one core
    assert [str(d) for d in autopar.cluster.devices()] == ["node0/cpu:0", "node1/cpu:0"]
    assert all(d.threads == 1 for d in autopar.cluster.devices())


def test_calls_in_flight_run_side_by_side_on_a_node(connected) -> None:  # type: ignore[no-untyped-def]
    """A quick upload is not queued behind a long product on the same node (threaded actor, two lanes)."""
    import ray

    n = node("node0")
    kx, ky, kq = key(), key(), key()
    n.run("randn", (), (kx,), "cpu:0", {"shape": (1200, 1200), "dtype": "float64"})

    def long_product(x: torch.Tensor) -> torch.Tensor:
        for _ in range(6):
            x = x @ x / 1200
        return x

    slow = n.submit_run(UserFunction(long_product), (kx,), (ky,), "cpu:0")
    quick = n.submit_write(kq, "cpu:0", np.ones(4))
    ready, _ = ray.wait([slow, quick], num_returns=1, timeout=120)
    assert ready == [quick]
    n.wait(slow, "long product")
    n.free((kx, ky, kq))


def test_a_wait_with_a_deadline_fails_with_a_message_instead_of_hanging(connected) -> None:  # type: ignore[no-untyped-def]
    import time

    n = node("node1")
    kx, ky = key(), key()
    n.write(kx, "cpu:0", np.ones(4))

    def slow(x: torch.Tensor) -> torch.Tensor:
        time.sleep(3)  # a slow kernel, not synchronisation
        return x

    ref = n.submit_run(UserFunction(slow, "slow"), (kx,), (ky,), "cpu:0")
    with pytest.raises(autopar.cluster.ClusterError, match=r"slow on node1: no answer within 0.5 s"):
        n.wait(ref, "slow", timeout=0.5)
    assert not n.lost  # a slow node is not a lost one
    n.wait(ref, "slow")  # without a deadline: as long as the node lives
    np.testing.assert_array_equal(n.read(ky), np.ones(4))
    n.free((kx, ky))


# -- losing a node's runtime --------------------------------------------------------------------


def _in_thread(fn):  # type: ignore[no-untyped-def]
    """Run ``fn`` on a thread; return (thread, outcome list) to join with a bound."""
    outcome: list[BaseException | object] = []

    def body() -> None:
        try:
            outcome.append(fn())
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("how", ["ray.kill", "SIGKILL"])
def test_a_lost_runtime_raises_node_lost_error_promptly_and_the_other_node_works(connected, how) -> None:  # type: ignore[no-untyped-def]
    import ray

    lost, other = node("node1"), node("node0")
    kx, ky, ko = key(), key(), key()
    lost.run("randn", (), (kx,), "cpu:0", {"shape": (1500, 1500), "dtype": "float64"})
    other.write(ko, "cpu:0", np.arange(4.0))

    def forever(x: torch.Tensor) -> torch.Tensor:
        while True:  # runs until the node's runtime dies under it
            x = x @ x / 1500

    thread, outcome = _in_thread(lambda: lost.run(UserFunction(forever), (kx,), (ky,), "cpu:0"))
    if how == "ray.kill":
        ray.kill(lost.actor)
    else:
        os.kill(lost.info.pid, signal.SIGKILL)  # type: ignore[union-attr]  # as a crash would
    thread.join(60)
    assert not thread.is_alive(), "the wait on a dead node's call hung"
    error = outcome[0]
    assert isinstance(error, autopar.NodeLostError) and isinstance(error, autopar.cluster.NodeLostError)
    assert error.node == "node1" and "node node1 was lost" in str(error) and "connect()" in str(error)

    with pytest.raises(autopar.NodeLostError, match="node node1 was lost"):  # at once, remembered
        lost.read(kx)
    np.testing.assert_array_equal(other.read(ko), np.arange(4.0))  # the other node keeps working
    assert [str(d) for d in autopar.cluster.devices()] == ["node0/cpu:0"]

    devices = autopar.cluster.connect()  # connect again: a fresh runtime on node1
    assert [str(d) for d in devices] == ["node0/cpu:0", "node1/cpu:0"]
    fresh = node("node1")
    assert fresh is not lost and fresh.info.pid != lost.info.pid  # type: ignore[union-attr]
    with pytest.raises(KeyError, match="holds no data"):  # the data held there is gone
        fresh.read(kx)
    other.free((ko,))


def test_a_move_from_a_dead_runtime_names_the_source(connected) -> None:  # type: ignore[no-untyped-def]
    import ray

    src, dst = node("node0"), node("node1")
    ks, kd = key(), key()
    src.write(ks, "cpu:0", np.ones(8))
    ray.kill(src.actor)  # behind the handle's back: the move's own error must tell which node died
    with pytest.raises(autopar.NodeLostError) as caught:
        _node.move(src, ks, dst, kd, "cpu:0")
    assert caught.value.node == "node0"
    assert src.lost and not dst.lost
    autopar.cluster.connect()
    assert [str(d) for d in autopar.cluster.devices()] == ["node0/cpu:0", "node1/cpu:0"]
