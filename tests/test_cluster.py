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
from autopar.cluster._join import check_loopback, reported_addresses


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
    # A local cluster's settings, or "local" itself, ask for another cluster than the one joined: said, not ignored.
    with pytest.raises(autopar.cluster.ClusterError, match=r"nodes asks for a local cluster .* already connected"):
        autopar.cluster.connect(nodes=3)
    with pytest.raises(autopar.cluster.ClusterError, match=r"'local' asks for a local cluster .* already connected"):
        autopar.cluster.connect("local")
    assert autopar.cluster.is_connected()


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


def _readme_block(section: str) -> str:
    """The first ```python block of README.md's ``section``, exactly as printed."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    start = readme.index(f"\n## {section}\n")
    end = readme.find("\n## ", start + 1)
    body = readme[start:end if end != -1 else len(readme)]
    return body.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readmes_cluster_example_runs_as_printed_on_a_local_cluster_that_binds_the_loopback_only(
        monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    """The "Many machines" block, run as printed: connect() is the same 2-node cluster as --cluster local, on
    127.0.0.1 only, with token auth, no usage reporting, nothing left behind. Just before the block's own
    disconnect() the cluster it started is inspected (and the printed sum checked against NumPy)."""
    pytest.importorskip("ray")
    import numpy as np
    import psutil

    from autopar.cluster import _session
    from autopar.cluster._local import processes

    autopar.cluster.disconnect()
    home_token = os.path.expanduser("~/.ray/auth_token")
    had_home_token = os.path.exists(home_token)
    env_before = {k: os.environ.get(k) for k in ("RAY_TMPDIR", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    seen: dict = {}  # type: ignore[type-arg]
    names: dict = {}  # type: ignore[type-arg]
    disconnect = autopar.cluster.disconnect

    def inspect_then_disconnect() -> None:
        session = _session.current()
        seen["tmpdir"] = tmpdir = session.tmpdir
        seen["token_mode"] = os.stat(os.path.join(tmpdir, "auth_token")).st_mode
        procs = processes(tmpdir)
        seen["servers"] = [p for p in procs if p.name() in ("raylet", "gcs_server")]
        seen["server_names"] = sorted(p.name() for p in seen["servers"])
        pids = {p.pid for p in procs}
        seen["listening"] = [c for c in psutil.net_connections("inet") if c.status == "LISTEN" and c.pid in pids]
        seen["heads"] = [" ".join(p.cmdline()) for p in procs if "dashboard.py" in " ".join(p.cmdline())]
        raylet = next(p for p in procs if p.name() == "raylet")
        seen["raylet_env"] = {k: raylet.environ().get(k) for k in ("RAY_USAGE_STATS_ENABLED", "RAY_AUTH_MODE")}
        seen["sum"] = float(np.sum(names["x"].numpy().astype(np.float64) @ names["x"].numpy().astype(np.float64)))
        disconnect()

    monkeypatch.setattr(autopar.cluster, "disconnect", inspect_then_disconnect)
    exec(compile(_readme_block("Many machines"), "README.md", "exec"), names)  # noqa: S102 - the README's own code
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "[node0/cpu:0, node1/cpu:0]"  # "local": two nodes, as --cluster local
    assert float(printed[1]) == pytest.approx(seen["sum"], rel=1e-4)
    assert not autopar.cluster.is_connected()
    assert seen["token_mode"] & 0o077 == 0  # the token is ours alone
    assert seen["server_names"] == ["gcs_server", "raylet", "raylet"]  # two nodes
    assert seen["listening"] and all(is_loopback(c.laddr.ip) for c in seen["listening"]), seen["listening"]
    # Ray always starts a head process named dashboard; without dashboard=True it serves no UI or HTTP.
    assert all("--minimal" in cmd and "--disable-frontend" in cmd for cmd in seen["heads"]), seen["heads"]
    assert seen["raylet_env"] == {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
    assert not os.path.exists(seen["tmpdir"])
    _, alive = psutil.wait_procs(seen["servers"], timeout=20)
    assert not alive  # disconnect stopped the cluster it started
    assert os.path.exists(home_token) == had_home_token  # nothing written to ~/.ray
    assert {k: os.environ.get(k) for k in env_before} == env_before


# -- joining where nothing, or no cluster, answers; a dashboard without its packages -----------------


def _free_loopback_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connecting_where_nothing_listens_fails_at_once_naming_what_was_tried() -> None:
    ray = pytest.importorskip("ray")
    autopar.cluster.disconnect()
    port = _free_loopback_port()
    with pytest.raises(autopar.cluster.ClusterError,
                       match=rf"connect\('127\.0\.0\.1:{port}'\): nothing listens at 127\.0\.0\.1:{port} \(connection refused\)"):  # fmt: skip
        autopar.cluster.connect(f"127.0.0.1:{port}")
    assert not ray.is_initialized() and not autopar.cluster.is_connected()


def test_connecting_to_a_port_that_is_no_ray_cluster_gives_up_after_the_timeout() -> None:
    import socket
    import time

    ray = pytest.importorskip("ray")
    autopar.cluster.disconnect()
    before = {k: v for k, v in os.environ.items() if k.startswith("RAY_")}
    with socket.socket() as listener:  # accepts connections, never answers: no Ray cluster
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        address = "127.0.0.1:%d" % listener.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(autopar.cluster.ClusterError,
                           match=rf"something listens at {address}, but no Ray cluster answered there within about 2 s"):  # fmt: skip
            autopar.cluster.connect(address, timeout=2)
        took = time.monotonic() - start
    assert took < 60, f"connect(timeout=2) gave up after {took:.0f} s (Ray's own retries: about 14 minutes)"
    assert not ray.is_initialized() and {k: v for k, v in os.environ.items() if k.startswith("RAY_")} == before


def test_a_dashboard_without_rays_dashboard_packages_names_the_package_before_starting_anything(monkeypatch) -> None:
    ray = pytest.importorskip("ray")
    import glob
    import tempfile

    autopar.cluster.disconnect()
    monkeypatch.setattr(ray._private.utils, "get_dashboard_dependency_error",
                        lambda: ImportError("No module named 'aiohttp'"))  # as a plain `pip install ray` has it
    dirs = set(glob.glob(os.path.join(tempfile.gettempdir(), "autopar-ray-*")))
    with pytest.raises(autopar.cluster.ClusterError, match=r"No module named 'aiohttp'.*pip install \"ray\[default\]\""):
        autopar.cluster.connect(dashboard=True)
    assert not ray.is_initialized() and set(glob.glob(os.path.join(tempfile.gettempdir(), "autopar-ray-*"))) == dirs


def test_cluster_cli_help_and_bad_arguments(capsys) -> None:  # type: ignore[no-untyped-def]
    from autopar.cli import main

    with pytest.raises(SystemExit):
        main(["cluster", "start", "--help"])
    assert main(["cluster", "start", "--nodes", "0"]) == 1  # one clear line, no traceback
    capsys.readouterr()
    assert main(["cluster", "start", "--object-store-mb", "10"]) == 1
    assert "--object-store-mb 10: an object store needs at least 80 MB" in capsys.readouterr().err  # in MB, as asked


@pytest.mark.cuda
def test_a_local_cluster_gives_this_machines_gpus_to_node0_only() -> None:
    """Two raylets on one machine would both claim its GPUs: a local cluster gives them to node0, and node1's
    runtime (no GPU asked of Ray) sees none."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    pytest.importorskip("ray")
    autopar.cluster.disconnect()
    devices = autopar.cluster.connect()
    try:
        gpus = [f"node0/cuda:{i}" for i in range(torch.cuda.device_count())]
        assert sorted(str(d) for d in devices) == sorted(["node0/cpu:0", *gpus, "node1/cpu:0"])
        x = autopar.ones(4, device=gpus[0])
        assert (x + 1).sum().item() == 8.0
    finally:
        autopar.cluster.disconnect()
