"""Local clusters on 127.0.0.1: the one meaning of "local" (``connect()``, ``--cluster local``, tests).

A local cluster is :class:`LocalCluster`: several Ray nodes on this machine
(two by default), each its own raylet and object store, every one bound to
127.0.0.1 (Ray's ``ray.cluster_utils.Cluster`` underneath). ``connect()``
with no address starts one and stops it at ``disconnect()``; ``autopar
cluster start`` starts one that outlives the command (``persistent``); the
tests and benchmarks start their own. All go through :func:`prepare`: Ray's
files and a fresh token in a private temporary directory, token
authentication on, no usage reporting, and Ray kept on the loopback.

Sizes. Each node gets ``cpus`` CPUs (default: this machine's cores shared
out, at least one each) and an object store of ``object_store_memory`` bytes
(default :func:`store_bytes`: Ray's own default for one node -- 30% of the
available memory, within /dev/shm -- shared among the nodes, which all live
in this machine's memory). The GPUs are node0's: two raylets on one machine
would otherwise both claim them.

Hung nodes. Ray declares a node dead when its GCS health check fails
``health_check_failure_threshold`` times in a row; with Ray's defaults
(a check every 3 s, 10 s to answer, 5 failures) a node that stops answering
-- a stopped process, a partition -- is declared dead after about a minute
(63.5 s measured). ``node_timeout`` sets that bound (:func:`health_checks`).
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

DEFAULT_NODES = 2
FAILURES = 5  # consecutive failed health checks before Ray declares a node dead (Ray's own default)
MIN_STORE = 80 * 2**20  # bytes: a smaller object store refuses ordinary arrays


def private_tmpdir() -> str:
    """A fresh directory only this user can read; short, since Ray puts Unix sockets in it."""
    base = tempfile.gettempdir()
    if len(base) > 40 and os.path.isdir("/tmp"):  # socket paths are limited to ~107 bytes
        base = "/tmp"
    return tempfile.mkdtemp(prefix="autopar-ray-", dir=base)


def prepare(env: EnvPatch, tmpdir: str, token: bool = True) -> str:
    """Set up the environment for a local cluster whose files live in ``tmpdir``; return Ray's temp dir.

    Token authentication with a fresh token kept in ``tmpdir`` (Ray would
    otherwise write one to ``~/.ray``), Ray's sockets and logs in
    ``tmpdir/ray`` (``RAY_TMPDIR``: nothing in ``/tmp/ray``), no usage
    reporting, and no swapping the loopback for the machine's address.
    ``token=False`` starts a cluster without authentication (to test how
    autopar treats one).
    """
    env.set("RAY_TMPDIR", tmpdir)
    if token:
        token_path = os.path.join(tmpdir, "auth_token")
        with open(os.open(token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as fh:
            fh.write(secrets.token_hex(32))
        use_token(env, token_path)
    else:
        env.set("RAY_AUTH_MODE", "disabled")
    env.set_default("RAY_USAGE_STATS_ENABLED", "0")
    keep_on_loopback(env)
    reload_ray_config()
    ray_dir = os.path.join(tmpdir, "ray")
    os.makedirs(ray_dir, exist_ok=True)
    return ray_dir


def use_token(env: EnvPatch, token_path: str) -> None:
    """Authenticate with the token in ``token_path`` (Ray reads it when the config is reloaded)."""
    env.set("RAY_AUTH_MODE", "token")
    env.set("RAY_AUTH_TOKEN_PATH", token_path)


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


def reload_ray_config() -> None:
    """Make Ray re-read its settings (auth, ``RAY_<setting>`` variables) from the environment.

    Only while this process is not connected: the config a driver receives
    from its cluster would be replaced too.
    """
    try:
        raylet = importlib.import_module("ray._raylet")
        raylet.Config.initialize("")
        raylet.AuthenticationTokenLoader.instance().reset_cache()
    except Exception:  # noqa: BLE001 - a Ray without token auth
        pass


def store_bytes(nodes: int) -> int:
    """Each node's object store in a local cluster of ``nodes`` nodes: Ray's one-node default, shared."""
    utils = importlib.import_module("ray._private.utils")
    whole = int(utils.resolve_object_store_memory(utils.estimate_available_memory()))
    return max(MIN_STORE, whole // max(1, nodes))


def health_checks(node_timeout: float) -> dict[str, int]:
    """Ray's GCS health-check settings that declare a silent node dead after about ``node_timeout`` s.

    Ray's own rule (``FAILURES`` failed checks in a row) with a check every
    ``node_timeout / 10`` s that may take as long to answer, so a node that
    stops answering is declared dead after about ``FAILURES * 2 * node_timeout / 10`` s.
    """
    step = max(100, int(node_timeout * 1000 / (2 * FAILURES)))
    return {"health_check_period_ms": step, "health_check_timeout_ms": step,
            "health_check_failure_threshold": FAILURES,
            "health_check_initial_delay_ms": min(5000, int(node_timeout * 1000))}


def _gpus_here() -> int:
    accelerators = importlib.import_module("ray._private.accelerators")
    return int(accelerators.get_accelerator_manager_for_resource("GPU").get_current_node_num_accelerators() or 0)


class LocalCluster:
    """A Ray cluster of ``nodes`` nodes on this machine, bound to 127.0.0.1.

    ``cpus`` CPUs and ``object_store_memory`` bytes of object store per node
    (defaults: the cores shared out, :func:`store_bytes`), this machine's GPUs
    on node0 (``gpus``: how many), ``node_timeout`` seconds before Ray
    declares a silent node dead (default: Ray's, about a minute), a
    dashboard on 127.0.0.1 if ``dashboard`` (needs ``ray[default]``). The
    driver is not connected: pass :attr:`address` to
    ``autopar.cluster.connect``. :meth:`stop` (or leaving the ``with``
    block) stops every process and removes every file it made. A
    ``persistent`` cluster's processes outlive this Python process (``autopar
    cluster start``); ``system_config`` is passed to Ray's head as is.
    """

    def __init__(self, nodes: int = DEFAULT_NODES, cpus: int | None = None, object_store_memory: int | None = None,
                 *, gpus: int | None = None, node_timeout: float | None = None, dashboard: bool = False,
                 token: bool = True, persistent: bool = False,
                 system_config: dict[str, Any] | None = None) -> None:  # fmt: skip
        _check_whole("nodes", nodes, 1)
        if cpus is not None:
            _check_whole("cpus", cpus, 1)
        if gpus is not None:
            _check_whole("gpus", gpus, 0)
        if object_store_memory is not None:
            _check_whole("object_store_memory", object_store_memory, MIN_STORE)
        if node_timeout is not None and (isinstance(node_timeout, bool) or not isinstance(node_timeout, (int, float))
                                         or not node_timeout > 0):  # fmt: skip
            raise ValueError(f"LocalCluster: node_timeout={node_timeout!r}; expected seconds > 0")
        import_ray("autopar.cluster.LocalCluster")
        cluster_utils = importlib.import_module("ray.cluster_utils")

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        self.cpus = cpus if cpus is not None else max(1, cores // nodes)
        self.object_store_memory = object_store_memory if object_store_memory is not None else store_bytes(nodes)
        self.gpus = gpus if gpus is not None else _gpus_here()
        self.node_timeout = node_timeout
        self.tmpdir = private_tmpdir()
        self.token_path = os.path.join(self.tmpdir, "auth_token") if token else None
        self._env = EnvPatch()
        self._cluster: Any = None
        self._node_args = {"num_cpus": self.cpus, "object_store_memory": self.object_store_memory,
                           "node_ip_address": "127.0.0.1"}  # fmt: skip
        config = dict(health_checks(node_timeout)) if node_timeout is not None else {}
        config.update(system_config or {})
        try:
            ray_dir = prepare(self._env, self.tmpdir, token)
            head_args: dict[str, Any] = {**self._node_args, "num_gpus": self.gpus, "include_dashboard": dashboard,
                                         "temp_dir": ray_dir}  # fmt: skip
            if dashboard:
                head_args["dashboard_host"] = "127.0.0.1"
            if config:
                head_args["_system_config"] = config
            self._cluster = cluster_utils.Cluster(initialize_head=True, head_node_args=head_args,
                                                  shutdown_at_exit=not persistent)  # fmt: skip
            for _ in range(nodes - 1):
                self.add_node()
        except BaseException:
            self.stop()
            raise

    @property
    def address(self) -> str:
        return str(self._cluster.address)

    @property
    def head_node(self) -> Any:
        """Ray's handle of the head node (for fault tests: its processes are in ``all_processes``)."""
        return self._cluster.head_node

    @property
    def worker_nodes(self) -> list[Any]:
        """Ray's handles of the non-head nodes, in the order they were added."""
        return sorted(self._cluster.worker_nodes, key=lambda n: n.unique_id)

    def add_node(self) -> Any:
        """Start one more node like the others (no GPU); return Ray's handle of it."""
        return self._cluster.add_node(**self._node_args)

    def remove_node(self, node: Any) -> None:
        """Kill every process of ``node`` at once -- its raylet, the agents and workers it started -- as a crash
        would (Ray kills only the processes it recorded; the agents would linger for two minutes)."""
        procs = node_processes(node)
        self._cluster.remove_node(node, allow_graceful=False)
        kill(procs)

    def stop(self) -> None:
        """Stop the cluster at once, every process of it (disconnecting this process first if it is joined to it)."""
        if self._cluster is not None:
            from autopar.cluster import _session

            session = _session._session
            if session is not None and session.address == self.address:
                _session.disconnect()
            procs = processes(self.tmpdir)
            for node in list(self._cluster.worker_nodes):
                self._cluster.remove_node(node, allow_graceful=False)
            if self._cluster.head_node is not None:
                self._cluster.remove_node(self._cluster.head_node, allow_graceful=False)
            self._cluster.shutdown()
            self._cluster = None
            kill(procs)
        self._env.restore()
        reload_ray_config()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def processes(tmpdir: str) -> list[Any]:
    """Every running process of the local cluster whose files are in ``tmpdir``, and their children.

    A process counts if it runs one of Ray's programs (:func:`ray_program`)
    and names the directory on its command line or carries it as
    ``RAY_TMPDIR`` (set by :func:`prepare` before any of them started: a
    worker Ray titled ``ray::NodeRuntime`` shows no command line, even once
    its raylet is gone). Anything else is left alone: a program's own
    subprocesses that inherited ``RAY_TMPDIR``, a ``tail -f`` of the
    cluster's logs. (Ray's agents hide both behind their title; they are
    their raylet's children, and end with it.)
    """
    psutil = _psutil()
    found: dict[int, Any] = {}
    for p in psutil.process_iter(["cmdline"]):
        try:
            argv = p.info["cmdline"] or []
            if p.pid == os.getpid() or not ray_program(argv, tmpdir):
                continue
            if tmpdir in " ".join(argv) or p.environ().get("RAY_TMPDIR") == tmpdir:
                found[p.pid] = p
                found.update({c.pid: c for c in p.children(recursive=True)})
        except psutil.Error:
            continue
    return list(found.values())


def ray_program(argv: list[str], tmpdir: str) -> bool:
    """Whether the command line ``argv`` runs one of Ray's programs: a process Ray titled (``ray::...``), or a
    binary (raylet, gcs_server) or Python script inside a ``ray`` package directory -- not one in ``tmpdir``."""
    if not argv:
        return False
    if argv[0].startswith("ray::"):
        return True
    program = argv[0]
    if os.path.basename(program).startswith("python"):
        program = next((a for a in argv[1:] if not a.startswith("-")), "")
    return "ray" in program.split(os.sep)[:-1] and not program.startswith(tmpdir)


def node_processes(node: Any) -> list[Any]:
    """Every running process of a Ray node (Ray's ``Node`` handle): those Ray recorded, and their children."""
    psutil = _psutil()
    found: dict[int, Any] = {}
    for infos in node.all_processes.values():
        for info in infos:
            try:
                p = psutil.Process(info.process.pid)
                found[p.pid] = p
                found.update({c.pid: c for c in p.children(recursive=True)})
            except psutil.Error:
                continue
    return list(found.values())


def kill(procs: list[Any], wait: float = 10.0) -> None:
    """SIGKILL ``procs`` (a stopped process too) and wait up to ``wait`` s for them to go."""
    psutil = _psutil()
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=wait)


def _psutil() -> Any:
    """psutil, which Ray brings along (``ray/thirdparty_files``, on the path once Ray is imported)."""
    importlib.import_module("ray")
    return importlib.import_module("psutil")


def _check_whole(name: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"LocalCluster: {name}={value!r}; expected a whole number >= {least}")
