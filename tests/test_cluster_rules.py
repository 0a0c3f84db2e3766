"""The cluster layer's decisions, tested fast: fakes stand in for Ray's calls, no cluster is started.

What is resent after a transient fault and on what schedule, when a node
counts as gone, which nodes a reconnect skips, how big a local cluster's
stores are, when joining warns, which processes belong to a cluster. The
cluster tests (test_cluster*.py) check the same paths end to end on real
clusters; these pin each rule so that a wrong one fails here in a second.
Every address is on the loopback.
"""

from __future__ import annotations

import os
import re

import pytest

from autopar.cluster import _kernels

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src", "autopar")


# -- which calls may be sent twice ------------------------------------------------------------------


def _bind(name: str) -> tuple[object, ...]:
    return ("bind", name, (), {}, (1,), "cpu:0", "compute", name, None)


def test_only_calls_that_set_a_key_to_a_value_are_idempotent() -> None:
    for call in [("read", (1, None)), ("write", 1, "cpu:0"), ("copy", (1, None), 2, "cpu:0"), ("seed", "cpu:0", 3),
                 _bind("add"), _bind("matmul"), _bind("call")]:  # fmt: skip
        assert _kernels.idempotent(call), call
    into = ("into", "assign", (1, None, (2,), None), (), {}, "w", "unsafe", "cpu:0", "compute")
    grad = ("grad", 1, (), (), False, "cpu:0", "compute", "g")
    for call in [into, grad, _bind("random"), _bind("random.choice"), _bind("dropout")]:
        assert not _kernels.idempotent(call), call


def test_every_op_bound_with_a_generator_state_is_a_draw_that_is_never_resent() -> None:
    """A second run of an op that draws from the device's generator advances it again (other numbers, a seeded
    program no longer reproducible): every op the array layer binds with ``state=`` must be in DRAWS."""
    stateful = set()
    for root, _, files in os.walk(SRC):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(root, name), encoding="utf-8") as fh:
                    stateful.update(re.findall(r'bind\(TABLE\["([\w.]+)"\][^\n]*\bstate=', fh.read()))
    assert {"random", "dropout"} <= stateful  # the scan finds them
    assert stateful <= _kernels.DRAWS, stateful - _kernels.DRAWS
    assert not any(_kernels.idempotent(_bind(name)) for name in stateful)


# -- which processes belong to a local cluster (what `disconnect` and `autopar cluster stop` kill) ------


class _FakeProcess:
    def __init__(self, pid: int, argv: list[str], env: dict[str, str] | None = None,
                 children: list[_FakeProcess] | None = None) -> None:  # fmt: skip
        self.pid, self.info, self._env, self._children = pid, {"cmdline": argv}, env or {}, children or []

    def environ(self) -> dict[str, str]:
        return self._env

    def children(self, recursive: bool = False) -> list[_FakeProcess]:
        return self._children


def test_a_clusters_processes_are_rays_programs_naming_its_directory_and_nothing_else(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import types

    from autopar.cluster import _local

    tmp = "/tmp/autopar-ray-abcd1234"
    ray = "/venv/lib/python3.11/site-packages/ray"
    worker = _FakeProcess(12, ["ray::IDLE"], {"RAY_TMPDIR": tmp})
    procs = [
        _FakeProcess(1, [f"{ray}/core/src/ray/gcs/gcs_server", f"--log_dir={tmp}/ray/session_1/logs"]),
        _FakeProcess(2, [f"{ray}/core/src/ray/raylet/raylet", f"--raylet_socket_name={tmp}/ray/s/raylet"],
                     children=[worker]),  # fmt: skip
        _FakeProcess(3, ["/venv/bin/python", "-u", f"{ray}/autoscaler/_private/monitor.py", f"--logs-dir={tmp}/ray"]),
        _FakeProcess(4, ["ray::NodeRuntime"], {"RAY_TMPDIR": tmp}),  # titled by Ray: found by its environment
        # not the cluster's:
        _FakeProcess(5, ["tail", "-f", f"{tmp}/ray/session_latest/logs/raylet.out"]),  # the user reading its logs
        _FakeProcess(6, ["/venv/bin/python", "train.py"], {"RAY_TMPDIR": tmp}),  # the driver's own subprocess
        _FakeProcess(7, ["/venv/bin/python", f"{tmp}/ray/session_1/x.py"]),  # a script in the directory: not Ray's
        _FakeProcess(8, ["ray::NodeRuntime"], {"RAY_TMPDIR": "/tmp/autopar-ray-other"}),  # another cluster's
        _FakeProcess(9, [f"{ray}/core/src/ray/raylet/raylet", "--raylet_socket_name=/tmp/autopar-ray-other/s"]),
        _FakeProcess(os.getpid(), ["ray::NodeRuntime"], {"RAY_TMPDIR": tmp}),  # never this process
    ]
    fake = types.SimpleNamespace(process_iter=lambda attrs: iter(procs), Error=OSError)
    monkeypatch.setattr(_local, "_psutil", lambda: fake)
    assert sorted(p.pid for p in _local.processes(tmp)) == [1, 2, 3, 4, 12]


# -- connect("auto"): which cluster ----------------------------------------------------------------


def test_auto_is_ray_address_then_rays_record_then_the_one_cluster_autopar_started_never_any_found(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    import types

    from autopar.cluster import _join, _started
    from autopar.errors import ClusterError

    recorded: list[str | None] = [None]
    scanned = ["127.0.0.1:9"]  # a GCS process of someone else's cluster on this machine: never chosen
    services = types.SimpleNamespace(find_bootstrap_address=lambda temp_dir: recorded[0],
                                     find_gcs_addresses=lambda: scanned,
                                     get_ray_address_from_environment=lambda addr, temp_dir: scanned[0])  # fmt: skip
    ray = types.SimpleNamespace(_private=types.SimpleNamespace(services=services))
    started = [{"address": "127.0.0.1:7001", "tmpdir": "a"}, {"address": "127.0.0.1:7002", "tmpdir": "b"}]
    running = {"a"}
    monkeypatch.setattr(_started, "records", lambda: started)
    monkeypatch.setattr(_started, "running", lambda record: record["tmpdir"] in running)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    assert _join.resolve(ray, "127.0.0.1:5") == "127.0.0.1:5"  # only "auto" is looked up
    assert _join.resolve(ray, "auto") == "127.0.0.1:7001"  # the one autopar started that runs
    recorded[0] = "127.0.0.1:6379"  # `ray start` recorded its cluster
    assert _join.resolve(ray, "auto") == "127.0.0.1:6379"
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6380")
    assert _join.resolve(ray, "auto") == "127.0.0.1:6380"
    monkeypatch.delenv("RAY_ADDRESS")
    recorded[0] = None
    running.add("b")
    with pytest.raises(ClusterError, match=r"autopar cluster start runs 2 \(127\.0\.0\.1:7001, 127\.0\.0\.1:7002\)"):
        _join.resolve(ray, "auto")
    running.clear()
    with pytest.raises(ClusterError, match=r"no running Ray cluster found .* runs 0; pass the address"):
        _join.resolve(ray, "auto")


# -- joining: what was tried, said plainly -----------------------------------------------------------


def _listening() -> object:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    return listener


def test_a_cluster_that_refuses_the_drivers_token_says_so_not_that_nothing_answered(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Ray says only "Failed to connect"; the reason -- its AuthenticationError, as Ray 2.60 raises it within a
    second for a token cluster joined without the token -- is in the causes."""
    ray = pytest.importorskip("ray")
    import autopar.cluster
    from autopar.errors import ClusterError

    def refused(**kwargs: object) -> None:
        try:
            raise RuntimeError("Failed to connect to GCS. Last connection error: ray.exceptions.AuthenticationError: "
                               "RPC error: InvalidAuthToken: Authentication token is missing or incorrect.")
        except RuntimeError as cause:
            raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:1") from cause

    autopar.cluster.disconnect()
    monkeypatch.setattr(ray, "init", refused)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with _listening() as listener:  # type: ignore[attr-defined]
        address = "127.0.0.1:%d" % listener.getsockname()[1]
        with pytest.raises(ClusterError, match=r"requires Ray's token authentication and refused this driver's "
                                               r"token \(it has none: RAY_AUTH_MODE is not 'token'\); .*RAY_AUTH_TOKEN_PATH"):  # fmt: skip
            autopar.cluster.connect(address, timeout=5)
        monkeypatch.setattr(ray, "init", lambda **kwargs: (_ for _ in ()).throw(ConnectionError("Failed to connect")))
        with pytest.raises(ClusterError, match="something listens at .* but no Ray cluster answered"):
            autopar.cluster.connect(address, timeout=5)  # no cause naming a token: the other message
    assert not autopar.cluster.is_connected()
