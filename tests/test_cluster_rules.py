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


# -- a transient fault: probed, resent on a schedule, then the node is lost ---------------------------


class _FakeNode:
    """What ``_ray`` asks of a node handle: its name, its actor's id, and whether it is certainly gone."""

    def __init__(self, name: str, gone: str | None = None) -> None:
        self.name, self._gone, self.actor_id_hex = name, gone, "ab" * 14

    def gone(self) -> str | None:
        return self._gone


@pytest.fixture
def transient():  # type: ignore[no-untyped-def]
    """Ray's "actor temporarily unavailable", as Ray raises it."""
    ray = pytest.importorskip("ray")
    return ray.exceptions.ActorUnavailableError("the actor is temporarily unavailable: injected", None)


def test_an_idempotent_call_is_resent_after_growing_pauses_then_its_node_counts_as_lost(transient) -> None:  # type: ignore[no-untyped-def]
    """Three more sends after 0.25, 0.5 and 1 s (what README promises: 3 times over about 2 s), then NodeLostError,
    told to on_lost once."""
    from autopar import NodeLostError
    from autopar.cluster import _ray

    node, told = _FakeNode("node1"), []
    pauses = [_ray.after_transient(transient, [node], "add on node1/cpu:0", attempt, True, lambda n, e: told.append(n))
              for attempt in range(_ray.RETRIES)]  # fmt: skip
    assert pauses == [0.25, 0.5, 1.0] and not told
    lost = _ray.after_transient(transient, [node], "add on node1/cpu:0", _ray.RETRIES, True, lambda n, e: told.append(n))
    assert isinstance(lost, NodeLostError) and told == [node]
    assert "node1 was lost" in str(lost) and "unreachable after 3 retries over 1.75 s" in str(lost)


def test_a_call_that_may_not_run_twice_fails_alone_and_a_gone_node_is_lost_at_once(transient) -> None:  # type: ignore[no-untyped-def]
    from autopar import NodeLostError
    from autopar.cluster import _ray
    from autopar.errors import ClusterError

    told: list[object] = []
    failed = _ray.after_transient(transient, [_FakeNode("node1")], "x += 1", 0, False, lambda n, e: told.append(n))
    assert type(failed) is ClusterError and "may or may not have run there and is not sent again" in str(failed)
    assert not told  # the node and its other arrays stay
    # A refused connection proves the node gone: lost at once, whether or not the call could be sent again,
    # and whichever node of a move it was.
    source = _FakeNode("node2", gone="its raylet is gone (nothing listens at 127.0.0.1:9 (connection refused))")
    for idempotent in (True, False):
        lost = _ray.after_transient(transient, [_FakeNode("node1"), source], "copy", 0, idempotent,
                                    lambda n, e: told.append(n))  # fmt: skip
        assert isinstance(lost, NodeLostError) and "node2 was lost" in str(lost) and "raylet is gone" in str(lost)
    assert told == [source, source]


def test_a_blocking_wait_sends_an_idempotent_call_again_and_fails_one_that_is_not(transient, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``_ray.get`` (reads, control calls): the refs of the call sent again are the ones waited for."""
    import ray

    from autopar.cluster import _ray
    from autopar.errors import ClusterError

    answers = {"first": transient, "second": "the value"}
    asked: list[str] = []

    def get(ref: str, timeout: float) -> object:
        asked.append(ref)
        if isinstance(answers[ref], BaseException):
            raise answers[ref]  # type: ignore[misc]
        return answers[ref]

    monkeypatch.setattr(ray, "get", get)
    monkeypatch.setattr(_ray, "FIRST_PAUSE", 0.001)
    sent = []
    value = _ray.get("first", what="read", nodes=[_FakeNode("node1")], resend=lambda: sent.append(1) or "second")
    assert value == "the value" and asked == ["first", "second"] and sent == [1]
    with pytest.raises(ClusterError, match="may or may not have run"):
        _ray.get("first", what="x += 1", nodes=[_FakeNode("node1")], resend=None)


# -- is the node there: one TCP connect on the loopback --------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_node_is_gone_only_when_its_raylet_or_for_the_head_the_gcs_refuses_a_connection() -> None:
    from autopar.cluster._node import HEAD_GONE, RemoteNode
    from autopar.cluster._records import Node

    with _listening() as raylet, _listening() as gcs:  # type: ignore[attr-defined]
        up, down = raylet.getsockname()[1], _free_port()
        gcs_up = ("127.0.0.1", gcs.getsockname()[1])

        def handle(port: int, gcs_at: tuple[str, int] | None) -> RemoteNode:
            return RemoteNode(Node("node0", "id", "127.0.0.1", 1, 0, True, port), None, 5.0, None, gcs_at)

        assert handle(up, gcs_up).gone() is None  # both listen (a stopped process's port listens too)
        assert handle(up, None).gone() is None
        assert "its raylet is gone (nothing listens at 127.0.0.1:%d (connection refused))" % down in str(
            handle(down, gcs_up).gone())  # fmt: skip
        head = handle(up, ("127.0.0.1", _free_port())).gone()
        assert head is not None and head.startswith(HEAD_GONE) and "the cluster's GCS" in head
        assert handle(0, None).gone() is None  # no port known: nothing proves it gone


# -- a local cluster's sizes -------------------------------------------------------------------------


def test_a_local_clusters_stores_share_rays_one_node_default_and_its_health_checks_make_node_timeout(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    ray = pytest.importorskip("ray")
    from autopar.cluster import _local

    utils = ray._private.utils
    monkeypatch.setattr(utils, "estimate_available_memory", lambda: 30 * 2**30)
    monkeypatch.setattr(utils, "resolve_object_store_memory", lambda available: int(available * 0.3))
    assert _local.store_bytes(1) == 9 * 2**30
    assert _local.store_bytes(3) == 3 * 2**30  # the nodes share this machine's memory
    monkeypatch.setattr(utils, "resolve_object_store_memory", lambda available: 2**20)
    assert _local.store_bytes(2) == _local.MIN_STORE  # never too small for ordinary arrays

    checks = _local.health_checks(3)
    assert checks == {"health_check_period_ms": 300, "health_check_timeout_ms": 300,
                      "health_check_failure_threshold": 5, "health_check_initial_delay_ms": 3000}  # fmt: skip
    # Declared dead after threshold x (period + timeout): about node_timeout.
    for seconds in (3, 10, 60):
        c = _local.health_checks(seconds)
        took = c["health_check_failure_threshold"] * (c["health_check_period_ms"] + c["health_check_timeout_ms"])
        assert took == pytest.approx(seconds * 1000, rel=0.01)
    assert _local.health_checks(60)["health_check_initial_delay_ms"] == 5000


# -- joining without a token warns ---------------------------------------------------------------


def test_joining_warns_exactly_when_the_driver_joined_without_a_token(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import sys
    import types
    import warnings

    from autopar.cluster import _join

    modes = types.SimpleNamespace(TOKEN="token", DISABLED="disabled")
    mode = ["token"]
    raylet = types.SimpleNamespace(AuthenticationMode=modes, get_authentication_mode=lambda: mode[0])
    monkeypatch.setitem(sys.modules, "ray._raylet", raylet)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _join.warn_without_token(None, "127.0.0.1:6379")  # token mode: the cluster required it
        mode[0] = "disabled"
        _join.warn_without_token(None, "ray://127.0.0.1:10001")  # Ray Client: cannot be told, no warning
    with pytest.warns(_join.InsecureClusterWarning, match=r"connect\('127\.0\.0\.1:6379'\): the cluster does not "
                                                          r"use token authentication.*autopar cluster start"):  # fmt: skip
        _join.warn_without_token(None, "127.0.0.1:6379")


# -- autopar cluster start's records: trusted only when private -------------------------------------


def test_a_started_clusters_record_is_trusted_only_in_a_directory_of_this_user_alone(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    import tempfile

    from autopar.cluster import _started

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    for name, mode, port in (("autopar-ray-private", 0o700, 7101), ("autopar-ray-open", 0o755, 7102)):
        directory = tmp_path / name
        directory.mkdir()
        (directory / _started.RECORD).write_text(json.dumps({"address": f"127.0.0.1:{port}", "tmpdir": str(directory)}))
        directory.chmod(mode)
    assert _started.find("127.0.0.1:7101") is not None
    assert _started.find("127.0.0.1:7102") is None  # others could have written it: never trusted


# -- starting the runtimes: keep the running, skip the gone and the silent, stop on a broken install ----


def test_a_reconnect_keeps_running_runtimes_skips_gone_and_silent_nodes_and_stops_on_a_broken_install(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    ray = pytest.importorskip("ray")
    from autopar.cluster import ClusterWarning, _node, _ray, _runtimes, _session
    from autopar.cluster._records import RuntimeInfo
    from autopar.errors import ClusterError

    with _listening() as raylet0, _listening() as raylet2:  # type: ignore[attr-defined]
        def listed(node_id: str, port: int, head: bool = False) -> dict[str, object]:
            resources = {"CPU": 1.0, **({"node:__internal_head__": 1.0} if head else {})}
            return {"NodeID": node_id, "Alive": True, "Resources": resources, "NodeManagerAddress": "127.0.0.1",
                    "NodeManagerPort": port}  # fmt: skip

        # node1's raylet refuses connections (it died; Ray still lists it), node2's runtime does not answer.
        cluster = [listed("id0", raylet0.getsockname()[1], head=True), listed("id1", _free_port()),
                   listed("id2", raylet2.getsockname()[1])]  # fmt: skip
        monkeypatch.setattr(ray, "nodes", lambda: cluster)
        killed: list[str] = []
        monkeypatch.setattr(_runtimes, "kill_soon", killed.append)
        monkeypatch.setattr(_runtimes, "start_runtime", lambda record, offset: f"actor of {record.name}")
        runtime = {"node0": "runs", "node2": "silent"}
        starts: list[str] = []

        def start(self: _node.RemoteNode) -> RuntimeInfo:
            starts.append(self.name)
            if runtime[self.name] == "silent":
                raise ClusterError(f"starting the runtime on {self.name}: no answer within 5 s")
            if runtime[self.name] == "broken":
                raise _node.RuntimeStartError(f"autopar's runtime could not start on {self.name}")
            self.info = RuntimeInfo(self.name, 1, "host", (0,), 1, ("cpu:0",), "torch", "autopar")
            return self.info

        monkeypatch.setattr(_node.RemoteNode, "start", start)
        session = _session.Session(address="127.0.0.1:6379", target="127.0.0.1", env=_ray.EnvPatch(), timeout=5.0)
        with pytest.warns(ClusterWarning, match=r"skipped node1: its raylet is gone .*connection refused.*; "
                                                r"node2: its runtime did not start .*no answer.*; going on with node0"):  # fmt: skip
            _runtimes.start_runtimes(session)
        assert [h.name for h in session.live()] == ["node0"] and starts == ["node0", "node2"]
        assert killed == ["actor of node2"]  # a runtime that may still start is not left behind
        with pytest.warns(ClusterWarning, match="skipped node1: .*node2: "):
            _runtimes.start_runtimes(session)  # connect() again: node0's runtime is kept, node2 tried again
        assert starts == ["node0", "node2", "node2"] and [h.name for h in session.live()] == ["node0"]
        runtime["node2"] = "broken"  # autopar is not installed there: every connect would fail alike
        with pytest.raises(_node.RuntimeStartError, match="could not start on node2"):
            _runtimes.start_runtimes(session)
        cluster[:] = [cluster[1]]
        alone = _session.Session(address="127.0.0.1:6379", target="127.0.0.1", env=_ray.EnvPatch(), timeout=5.0)
        with pytest.raises(ClusterError, match=r"no node of the cluster at 127\.0\.0\.1:6379 can run autopar now "
                                               r"\(node0: its raylet is gone"):  # fmt: skip
            _runtimes.start_runtimes(alone)


def test_a_runtime_marked_lost_is_killed_once_and_every_later_call_fails_at_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A runtime cut off for a while must not come back holding arrays nobody can reach: its actor is killed."""
    from autopar import NodeLostError
    from autopar.cluster import _node
    from autopar.cluster._records import Node

    killed: list[object] = []
    monkeypatch.setattr(_node, "kill_soon", killed.append)
    handle = _node.RemoteNode(Node("node1", "id", "127.0.0.1", 1, 0, False, 0), "actor", 5.0)
    told: list[object] = []
    handle.on_lost = told.append
    assert handle.mark_lost("add on node1/cpu:0: unreachable after 3 retries")
    assert not handle.mark_lost("again")  # the first reason stays
    assert told == [handle] and killed == ["actor"]
    with pytest.raises(NodeLostError, match="node1 was lost: add on node1/cpu:0: unreachable"):
        handle.submit_apply(("read", (1, None)))
