"""Faults a Ray user expects a cluster to survive, or to fail cleanly on (the contract on many machines; docs/design/cluster.md §6).

Each test that kills or stops a node starts its own small cluster on
127.0.0.1 (the session's ``ray_cluster`` must stay whole), and stops it even
when the test fails: ``LocalCluster`` in a ``with`` block, ``autopar cluster
stop`` in a ``finally``, and every process a test stopped is killed by it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import autopar as ap
import autopar.cluster

from autopar.cluster._local import kill, node_processes, processes

psutil = pytest.importorskip("psutil")

N0, N1 = "node0/cpu:0", "node1/cpu:0"


def _runtimes(procs) -> list:  # type: ignore[no-untyped-def,type-arg]
    """autopar's runtime actors among ``procs`` (Ray names an actor's process after its class)."""
    out = []
    for p in procs:
        try:
            if "NodeRuntime" in " ".join(p.cmdline()):
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.fixture
def alone() -> Iterator[None]:
    """Not connected to the session's cluster while a test uses a cluster of its own (Ray imported only now)."""
    pytest.importorskip("ray")
    autopar.cluster.disconnect()
    yield
    autopar.cluster.disconnect()


# -- a hung node (SIGSTOP): lost after the bound set at start, the others keep working ----------------


def test_a_hung_node_is_lost_after_node_timeout_and_joining_without_a_token_warns(alone) -> None:  # type: ignore[no-untyped-def]
    from autopar.cluster import LocalCluster

    with LocalCluster(nodes=2, cpus=1, object_store_memory=80 * 2**20, node_timeout=3, token=False) as cluster:
        with pytest.warns(autopar.cluster.InsecureClusterWarning, match="does not use token authentication.*RAY_AUTH_MODE=token"):
            autopar.cluster.connect(cluster.address, timeout=30)
        x, y = ap.ones(4, device=N0), ap.ones(4, device=N1)
        (x + y.to(N0)).wait_to_read()
        stopped = node_processes(cluster.worker_nodes[0])
        assert _runtimes(stopped), "node1's runtime is among the processes stopped"
        try:
            for p in stopped:
                p.suspend()  # SIGSTOP: the node answers nothing, as behind a partition
            start = time.monotonic()
            with pytest.raises(ap.NodeLostError, match="node1"):
                (y + 1).numpy()
            took = time.monotonic() - start
            # Ray's default health check takes about 65 s; node_timeout=3 makes it about 3 s (plus Ray's start-up
            # delay): half the default is a wide margin either way.
            assert took < 30, f"a hung node was declared lost after {took:.1f} s with node_timeout=3"
            np.testing.assert_array_equal((x * 2).numpy(), [2.0] * 4)  # the other node keeps working
            with pytest.raises(ap.NodeLostError, match="node1"):
                ap.waitall()
        finally:
            autopar.cluster.disconnect()
            kill(stopped)
    assert not processes(cluster.tmpdir), "a process of the cluster outlived it"


# -- a dead raylet: its arrays fail, and connecting again goes on with the nodes that remain ---------


def _cli(*args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "autopar", "cluster", *args], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def test_cluster_start_joins_with_its_token_and_reconnecting_after_a_node_died_keeps_the_others(alone, capsys) -> None:  # type: ignore[no-untyped-def]
    from autopar.cli import main
    from autopar.cluster import _started

    started = _cli("start", "--nodes", "2", "--cpus", "1", "--object-store-mb", "80")  # the cluster outlives it
    assert started.returncode == 0, started.stderr
    address = next(line.split()[-1] for line in started.stdout.splitlines() if line.strip().startswith("address:"))
    record = _started.find(address)
    try:
        assert record is not None and address.startswith("127.0.0.1:")
        assert os.stat(record["tmpdir"]).st_mode & 0o077 == 0
        capsys.readouterr()
        assert main(["cluster", "list"]) == 0 and f"{address}  2 node(s)  running" in capsys.readouterr().out
        with warnings.catch_warnings():
            warnings.simplefilter("error", autopar.cluster.InsecureClusterWarning)  # token on: no warning
            devices = autopar.cluster.connect(address, timeout=20)
        assert [str(d) for d in devices] == [N0, N1]
        x, y = ap.ones(4, device=N0), ap.ones(4, device=N1)
        y.wait_to_read()
        raylets = [p for p in processes(record["tmpdir"]) if p.name() == "raylet"]
        node1 = next(n for n in autopar.cluster.nodes() if n.name == "node1")
        raylet = next(p for p in raylets
                      if any(c.status == psutil.CONN_LISTEN and c.laddr.port == node1.port for c in p.net_connections("tcp")))
        kill([raylet, *raylet.children(recursive=True)])  # node1 crashes: its raylet, agents and runtime
        with pytest.raises(ap.NodeLostError, match="node1"):
            (y + 1).numpy()
        import ray

        assert any(n["NodeID"] == node1.node_id and n["Alive"] for n in ray.nodes()), \
            "Ray still lists the dead node (its health check takes about a minute): the case to recover from"
        with pytest.warns(autopar.cluster.ClusterWarning, match=r"skipped node1: its raylet is gone .*refused"):
            again = autopar.cluster.connect(timeout=20)
        assert [str(d) for d in again] == [N0]
        np.testing.assert_array_equal((x + 1).numpy(), [2.0] * 4)
        with pytest.raises(ap.NodeLostError):
            ap.waitall()
    finally:
        autopar.cluster.disconnect()
        capsys.readouterr()
        assert main(["cluster", "stop", address]) == 0
    assert f"stopped the cluster at {address}" in capsys.readouterr().out
    assert not os.path.exists(record["tmpdir"]) and _started.find(address) is None
    assert not processes(record["tmpdir"])


# -- losing the head: Ray ends the driver; autopar fails the head's arrays first, leaves no runtime --


_DRIVER = """
    import sys, time
    import autopar as ap, autopar.cluster
    autopar.cluster.connect(sys.argv[1])
    head, other = ap.ones(4, device="node0/cpu:0"), ap.ones(4, device="node1/cpu:0")
    (head + other.to("node0/cpu:0")).wait_to_read()
    print("READY", flush=True)
    while True:  # a program using both nodes until Ray ends this process
        try:
            head = head + 1
            head.wait_to_read()
        except ap.NodeLostError as error:
            print("HEAD LOST:", error, flush=True)
            break
    for i in range(1000):
        other = other + 1
        print("OTHER", other.sum().item(), flush=True)
        time.sleep(0.05)  # pacing the output only
"""


def test_losing_the_head_fails_its_arrays_then_ray_ends_the_driver_and_no_runtime_remains(alone) -> None:  # type: ignore[no-untyped-def]
    from autopar.cluster import LocalCluster

    # Ray ends a driver that cannot reach the GCS after gcs_rpc_server_reconnect_timeout_s (60 s by default).
    config = {"gcs_rpc_server_reconnect_timeout_s": 6}
    with LocalCluster(nodes=2, cpus=1, object_store_memory=80 * 2**20, system_config=config) as cluster:
        driver = subprocess.Popen([sys.executable, "-c", textwrap.dedent(_DRIVER), cluster.address],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
        try:
            assert driver.stdout is not None
            head_out = []
            for line in driver.stdout:
                head_out.append(line)
                if line.startswith("READY"):
                    break
            assert head_out and head_out[-1].startswith("READY"), "".join(head_out)[-3000:]
            runtimes = _runtimes(node_processes(cluster.worker_nodes[0]))
            assert len(runtimes) == 1
            cluster.remove_node(cluster.head_node)  # every process of the head, killed at once
            out, _ = driver.communicate(timeout=120)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        lines = out.splitlines()
        lost = next(i for i, line in enumerate(lines) if line.startswith("HEAD LOST:"))
        assert "node node0 was lost" in lines[lost] and "the head node is gone" in lines[lost]
        assert any(line.startswith("OTHER") for line in lines[lost:]), "node1 kept working after the head was lost"
        assert driver.returncode == 1, out[-3000:]  # Ray ended the process (no Python exception)
        assert "GCS" in out[out.index(lines[lost]):]  # Ray says why: it lost the GCS
        _, alive = psutil.wait_procs(runtimes, timeout=60)
        assert not alive, "node1's runtime outlived the cluster's head"
    assert not processes(cluster.tmpdir), "a process of the cluster outlived it"
