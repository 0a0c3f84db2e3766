"""Local clusters on 127.0.0.1: the settings every autopar-started Ray cluster shares.

``connect()`` starts a one-node cluster with ``ray.init``; tests and
benchmarks start a multi-node one on this machine with :class:`LocalCluster`
(Ray's ``ray.cluster_utils.Cluster``: one raylet per node, every node on this
machine). Both go through :func:`prepare`: Ray's files and token in a private
temporary directory, token authentication on, no usage reporting, and Ray
kept on the loopback.
"""

from __future__ import annotations

import importlib
import os
import secrets
import shutil
import sys
import tempfile
from typing import Any

from autopar.cluster._ray import EnvPatch, import_ray


def private_tmpdir() -> str:
    """A fresh directory only this user can read; short, since Ray puts Unix sockets in it."""
    base = tempfile.gettempdir()
    if len(base) > 40 and os.path.isdir("/tmp"):  # socket paths are limited to ~107 bytes
        base = "/tmp"
    return tempfile.mkdtemp(prefix="autopar-ray-", dir=base)


def prepare(env: EnvPatch, tmpdir: str) -> str:
    """Set up the environment for a local cluster whose files live in ``tmpdir``; return Ray's temp dir.

    Token authentication with a fresh token kept in ``tmpdir`` (Ray would
    otherwise write one to ``~/.ray``), Ray's sockets and logs in
    ``tmpdir/ray`` (``RAY_TMPDIR``: nothing in ``/tmp/ray``), no usage
    reporting, and no swapping the loopback for the machine's address.
    """
    token_path = os.path.join(tmpdir, "auth_token")
    with open(os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as fh:
        fh.write(secrets.token_hex(32))
    env.set("RAY_TMPDIR", tmpdir)
    env.set("RAY_AUTH_MODE", "token")
    env.set("RAY_AUTH_TOKEN_PATH", token_path)
    env.set_default("RAY_USAGE_STATS_ENABLED", "0")
    keep_on_loopback(env)
    reload_auth_config()
    ray_dir = os.path.join(tmpdir, "ray")
    os.makedirs(ray_dir, exist_ok=True)
    return ray_dir


def keep_on_loopback(env: EnvPatch) -> None:
    """Stop Ray from replacing a loopback address by the machine's network address.

    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is Ray's switch for it, read by the
    processes Ray starts; this process already imported it as a constant,
    which Ray reads at each use, so it is changed too (``env.restore`` puts
    both back).
    """
    env.set("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    constants = sys.modules["ray"]._private.ray_constants
    old = constants.ENABLE_RAY_CLUSTER

    def undo() -> None:
        constants.ENABLE_RAY_CLUSTER = old

    env.on_restore(undo)
    constants.ENABLE_RAY_CLUSTER = False


def reload_auth_config() -> None:
    """Make Ray re-read its auth settings from the environment (cached in this process)."""
    try:
        raylet = importlib.import_module("ray._raylet")
        raylet.Config.initialize("")
        raylet.AuthenticationTokenLoader.instance().reset_cache()
    except Exception:  # noqa: BLE001 - a Ray without token auth
        pass


class LocalCluster:
    """A multi-node Ray cluster on this machine, bound to 127.0.0.1 (tests, benchmarks).

    ``nodes`` nodes of ``cpus`` CPUs each and ``object_store_memory`` bytes
    of object store. The driver is not connected: pass :attr:`address` to
    ``autopar.cluster.connect``. :meth:`stop` (or leaving the ``with``
    block) stops every process and removes every file it made.
    """

    def __init__(self, nodes: int = 2, cpus: int = 1, object_store_memory: int = 100 * 2**20,
                 system_config: dict[str, Any] | None = None) -> None:
        if nodes < 1 or cpus < 1:
            raise ValueError(f"LocalCluster: nodes={nodes}, cpus={cpus}; expected whole numbers >= 1")
        import_ray("autopar.cluster.LocalCluster")
        cluster_utils = importlib.import_module("ray.cluster_utils")

        self.tmpdir = private_tmpdir()
        self._env = EnvPatch()
        self._cluster: Any = None
        node_args = {"num_cpus": cpus, "object_store_memory": object_store_memory, "node_ip_address": "127.0.0.1"}
        self._node_args = node_args
        try:
            ray_dir = prepare(self._env, self.tmpdir)
            head_args = {**node_args, "include_dashboard": False, "temp_dir": ray_dir}
            if system_config:
                head_args["_system_config"] = system_config
            self._cluster = cluster_utils.Cluster(initialize_head=True, head_node_args=head_args)
            for _ in range(nodes - 1):
                self.add_node()
        except BaseException:
            self.stop()
            raise

    @property
    def address(self) -> str:
        return str(self._cluster.address)

    @property
    def worker_nodes(self) -> list[Any]:
        """Ray's handles of the non-head nodes (for ``remove_node`` in tests)."""
        return list(self._cluster.worker_nodes)

    def add_node(self) -> Any:
        """Start one more node like the others; return Ray's handle of it."""
        return self._cluster.add_node(**self._node_args)

    def remove_node(self, node: Any) -> None:
        """Kill every process of ``node`` at once (no graceful shutdown), as a crash would."""
        self._cluster.remove_node(node, allow_graceful=False)

    def stop(self) -> None:
        """Stop the cluster (disconnecting this process first if it is joined to it)."""
        if self._cluster is not None:
            from autopar.cluster import _session

            session = _session._session
            if session is not None and session.address == self.address:
                _session.disconnect()
            self._cluster.shutdown()
            self._cluster = None
        self._env.restore()
        reload_auth_config()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
