"""Joining a Ray cluster: install hint, loopback only, connect/disconnect/reconnect, devices, security.

Most tests use the session's local 2-node cluster (``ray_cluster`` in
conftest.py); the pure helpers are tested without Ray.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import autopar
import autopar.cluster
from autopar.cluster._records import core_offsets, is_loopback, split_host
from autopar.cluster._session import check_loopback, reported_addresses


def _python(code: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


# -- without Ray ------------------------------------------------------------------------------


def test_cluster_imports_without_ray_and_connect_gives_the_install_hint() -> None:
    proc = _python("""
        import sys
        sys.modules["ray"] = None  # as if Ray were not installed: `import ray` raises ImportError
        import autopar, autopar.cluster
        assert "torch" not in sys.modules
        try:
            autopar.cluster.connect()
        except ImportError as error:
            print("HINT:", error)
    """)
    assert proc.returncode == 0, proc.stderr
    assert 'HINT: autopar.cluster.connect needs Ray' in proc.stdout
    assert 'pip install "autopar[cluster]"' in proc.stdout


def test_import_autopar_imports_neither_ray_nor_torch() -> None:
    proc = _python("""
        import sys, autopar, autopar.cluster
        print(sorted(m for m in ("ray", "torch") if m in sys.modules))
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_not_connected_says_how_to_connect() -> None:
    autopar.cluster.disconnect()  # a no-op when not connected
    assert not autopar.cluster.is_connected()
    with pytest.raises(autopar.cluster.ClusterError, match=r"not connected.*connect\(address\)"):
        autopar.cluster.devices()


@pytest.mark.parametrize(
    ("host", "expected"),
    [("127.0.0.1", True), ("127.8.9.10", True), ("localhost", True), ("::1", True), ("::ffff:127.0.0.1", True),
     ("[::1]", True), ("192.0.2.2", False), ("10.0.0.1", False), ("::ffff:192.0.2.2", False), ("example.org", False)],
)
def test_is_loopback(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected


def test_split_host() -> None:
    assert split_host("127.0.0.1:6379") == "127.0.0.1"
    assert split_host("ray://10.1.2.3:10001") == "10.1.2.3"
    assert split_host("[::1]:6379") == "::1"
    assert split_host("192.0.2.2") == "192.0.2.2"


def test_check_loopback_fails_loudly_off_the_loopback() -> None:
    reported = {"the GCS": "127.0.0.1:6379", "node 0123abcd": "192.0.2.2:41000"}
    with pytest.raises(autopar.cluster.ClusterError, match=r"node 0123abcd at 192\.0\.2\.2:41000.*outside 127"):
        check_loopback("127.0.0.1", reported)
    check_loopback("127.0.0.1", {"the GCS": "127.0.0.1:6379", "node x": "::ffff:127.0.0.1"})
    check_loopback("192.0.2.2", reported)  # a network address the user named: allowed


def test_core_offsets_give_nodes_on_one_host_disjoint_cores() -> None:
    nodes = [("a", "127.0.0.1", 1), ("b", "127.0.0.1", 2), ("c", "10.0.0.2", 4), ("d", "127.0.0.1", 1)]
    assert core_offsets(nodes) == {"a": 0, "b": 1, "c": 0, "d": 3}


def test_connect_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="address=''"):
        autopar.cluster.connect("")
    with pytest.raises(ValueError, match="timeout=0"):
        autopar.cluster.connect(timeout=0)
    with pytest.raises(ValueError, match="configure a local cluster"):
        autopar.cluster.connect("127.0.0.1:6379", num_cpus=2)


# -- on the session's local cluster -----------------------------------------------------------


def test_connect_disconnect_reconnect_keeps_node_names(ray_cluster) -> None:  # type: ignore[no-untyped-def]
    import ray

    autopar.cluster.disconnect()
    devices = autopar.cluster.connect(ray_cluster.address)
    names = [str(d) for d in devices]
    assert names == ["node0/cpu:0", "node1/cpu:0"]
    nodes = autopar.cluster.nodes()
    assert [n.name for n in nodes] == ["node0", "node1"] and nodes[0].is_head and not nodes[1].is_head
    assert len({n.node_id for n in nodes}) == 2 and all(n.address == "127.0.0.1" for n in nodes)
    assert [d.node for d in devices] == [n.name for n in nodes]
    from autopar.cluster import _session

    pids = {h.name: h.info.pid for h in _session.current().live()}  # type: ignore[union-attr]
    ids = {n.name: n.node_id for n in nodes}

    autopar.cluster.disconnect()
    assert not autopar.cluster.is_connected() and not ray.is_initialized()
    with pytest.raises(autopar.cluster.ClusterError):
        autopar.cluster.devices()

    again = autopar.cluster.connect(ray_cluster.address)
    assert [str(d) for d in again] == names
    assert {n.name: n.node_id for n in autopar.cluster.nodes()} == ids
    new_pids = {h.name: h.info.pid for h in _session.current().live()}  # type: ignore[union-attr]
    assert set(new_pids.values()).isdisjoint(pids.values())  # fresh runtimes: disconnect stopped the old


def test_connect_while_connected_elsewhere_raises(connected) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(autopar.cluster.ClusterError, match="already connected to 127.0.0.1:.*disconnect"):
        autopar.cluster.connect("127.0.0.1:1")
    assert [str(d) for d in autopar.cluster.connect()] == ["node0/cpu:0", "node1/cpu:0"]  # same cluster: kept


def test_every_address_ray_reports_is_on_the_loopback(connected) -> None:  # type: ignore[no-untyped-def]
    import ray

    reported = reported_addresses(ray)
    assert "the GCS" in reported and "the driver's node" in reported
    assert sum(what.startswith("node ") for what in reported) == 2
    outside = {what: addr for what, addr in reported.items() if not is_loopback(split_host(addr))}
    assert not outside


def test_connect_keeps_a_loopback_address_even_where_ray_would_swap_it(ray_cluster, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Ray replaces 127.0.0.1 by the machine's address unless told not to; connect tells it."""
    import ray

    autopar.cluster.disconnect()
    constants = ray._private.ray_constants
    monkeypatch.setattr(constants, "ENABLE_RAY_CLUSTER", True)  # Ray's default on Linux
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    autopar.cluster.connect(ray_cluster.address, timeout=60)
    try:
        assert ray.get_runtime_context().gcs_address == ray_cluster.address
        assert is_loopback(ray.util.get_node_ip_address())
        assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
    finally:
        autopar.cluster.disconnect()
    assert constants.ENABLE_RAY_CLUSTER is True  # restored
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ


def test_devices_cli_lists_remote_devices(connected) -> None:  # type: ignore[no-untyped-def]
    proc = subprocess.run([sys.executable, "-m", "autopar", "devices", "--cluster", connected.address],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"cluster at {connected.address}" in out
    ids = {n.name: n.node_id[:12] for n in autopar.cluster.nodes()}
    for name in ("node0", "node1"):
        assert f"{name}/cpu:0" in out
        assert ids[name] in out
    assert out.count("127.0.0.1") >= 2


def _cluster_processes(tmpdir: str) -> list:  # type: ignore[type-arg]
    """The processes of the cluster whose files are in ``tmpdir``: those naming it, and their children."""
    import psutil  # a dependency of Ray

    procs = {}
    for p in psutil.process_iter(["cmdline"]):
        if tmpdir in " ".join(p.info["cmdline"] or []):
            procs[p.pid] = p
            procs.update({c.pid: c for c in p.children(recursive=True)})
    return list(procs.values())


def test_a_local_cluster_binds_the_loopback_reports_nothing_and_leaves_nothing() -> None:
    pytest.importorskip("ray")
    import psutil

    from autopar.cluster import _session

    autopar.cluster.disconnect()
    home_token = os.path.expanduser("~/.ray/auth_token")
    had_home_token = os.path.exists(home_token)
    env_before = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    devices = autopar.cluster.connect(num_cpus=1, object_store_memory=80 * 2**20)
    try:
        assert [str(d) for d in devices] == ["node0/cpu:0"]
        tmpdir = _session.current().tmpdir
        assert tmpdir is not None and os.path.isdir(tmpdir)
        assert os.stat(os.path.join(tmpdir, "auth_token")).st_mode & 0o077 == 0  # the token is ours alone
        procs = _cluster_processes(tmpdir)
        names = {p.name() for p in procs}
        servers = [p for p in procs if p.name() in ("raylet", "gcs_server")]
        assert "raylet" in names and "gcs_server" in names
        pids = {p.pid for p in procs}
        listening = [c for c in psutil.net_connections("inet") if c.status == "LISTEN" and c.pid in pids]
        assert listening
        assert all(is_loopback(c.laddr.ip) for c in listening), listening
        # Ray always starts a head process named dashboard; without dashboard=True it serves no UI or HTTP.
        heads = [" ".join(p.cmdline()) for p in procs if "dashboard.py" in " ".join(p.cmdline())]
        assert all("--minimal" in cmd and "--disable-frontend" in cmd for cmd in heads), heads
        raylet = next(p for p in procs if p.name() == "raylet")
        assert raylet.environ().get("RAY_USAGE_STATS_ENABLED") == "0"
        assert raylet.environ().get("RAY_AUTH_MODE") == "token"
    finally:
        autopar.cluster.disconnect()
    assert not os.path.exists(tmpdir)
    _, alive = psutil.wait_procs(servers, timeout=20)
    assert not alive  # disconnect stopped the cluster it started
    assert os.path.exists(home_token) == had_home_token  # nothing written to ~/.ray
    assert {k: os.environ.get(k) for k in env_before} == env_before
