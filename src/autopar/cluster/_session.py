"""Joining and leaving a Ray cluster: one session per process.

"Local" means one thing everywhere (``connect()``, ``connect("local")``,
``--cluster local``): a cluster of two nodes, by default, on this machine,
started for the session and stopped at :func:`disconnect`
(``_local.LocalCluster``). Any other address is an existing cluster
(``_join``: found, probed, joined within ``timeout``).

Security (a cluster runs whatever its members send it, so autopar is careful
about which one it joins and what it opens):

- A cluster is joined only by :func:`connect`; nothing else starts Ray.
- A local cluster binds 127.0.0.1 only (a plain ``ray.init()`` binds the
  machine's network address), without a dashboard unless asked
  (``dashboard=True``, then on 127.0.0.1), without usage reporting, with
  Ray's token authentication on and its token, logs and sockets in a
  temporary directory that autopar owns and removes at :func:`disconnect`
  (nothing in ``~/.ray`` or ``/tmp/ray``).
- Joining a cluster that does not require a token warns
  (``_join.InsecureClusterWarning``); one started by ``autopar cluster
  start`` is joined with its own token.
- Connecting never leaves the loopback silently. Ray replaces a loopback
  address by the machine's own network address when connecting, and retries
  there forever if the cluster listens only on 127.0.0.1; for a loopback
  target autopar turns that off (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``,
  Ray's switch for it), and after connecting checks every address Ray
  reports -- the GCS, the driver's node, each node -- and fails with
  :class:`~autopar.errors.ClusterError`, disconnected, if one is not on the
  loopback. A non-loopback address is used only when the user names it.
- Usage reporting is off (``RAY_USAGE_STATS_ENABLED=0``) unless the user
  set it. Environment variables autopar sets are restored at disconnect.

Nodes: :func:`connect` starts the runtimes (``_runtimes``), and goes on
without the nodes that cannot run one now.
"""

from __future__ import annotations

import atexit
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from autopar.cluster import _join, _local, _ray
from autopar.cluster._local import LocalCluster
from autopar.cluster._node import RemoteNode
from autopar.cluster._records import Node, is_loopback, split_host
from autopar.cluster._runtimes import devices as _devices
from autopar.cluster._runtimes import mark_lost as _mark_lost
from autopar.cluster._runtimes import start_runtimes as _start_runtimes
from autopar.cluster._watch import Watcher
from autopar.devices import Device
from autopar.errors import ClusterError

_lock = threading.RLock()
_session: Session | None = None
_atexit_registered = False
LOCAL = (None, "local")  # the addresses that mean a local cluster started for the session


@dataclass
class Session:
    address: str  # the GCS address (or ray:// address) Ray reports
    target: str | None  # the host asked for; a loopback one keeps every address on the loopback
    env: _ray.EnvPatch
    timeout: float
    local: LocalCluster | None = None  # the local cluster started for the session (stopped at disconnect)
    nodes: dict[str, RemoteNode] = field(default_factory=dict)  # by name, in naming order
    names: dict[str, str] = field(default_factory=dict)  # Ray node id -> name
    watcher: Watcher | None = None  # completes remote ops (_watch.py); started at connect

    @property
    def tmpdir(self) -> str | None:
        """Ray's files of the local cluster started for the session (None when joining an existing one)."""
        return self.local.tmpdir if self.local is not None else None

    def live(self) -> list[RemoteNode]:
        return [n for n in self.nodes.values() if not n.lost and n.info is not None]

    def flush(self) -> None:
        """Send every runtime's freed keys (the watcher's idle chore)."""
        for handle in list(self.nodes.values()):
            handle.flush()


# -- public calls (re-exported by autopar.cluster) ----------------------------------------------


def connect(
    address: str | None = None,
    *,
    nodes: int | None = None,
    num_cpus: int | None = None,
    num_gpus: int | None = None,
    object_store_memory: int | None = None,
    node_timeout: float | None = None,
    dashboard: bool = False,
    timeout: float = 60.0,
) -> list[Device]:
    """Join a Ray cluster and start autopar's runtime on each of its nodes; return their devices.

    ``address``: ``None`` or ``"local"`` starts a local cluster on this
    machine, bound to 127.0.0.1, stopped at :func:`disconnect`: ``nodes``
    nodes (default 2: ``node0``, ``node1``), each with ``num_cpus`` CPUs (the
    cores shared out) and ``object_store_memory`` bytes of object store (30%
    of the available memory, shared out), this machine's GPUs on node0
    (``num_gpus``), a dashboard on 127.0.0.1 only if ``dashboard`` (needs
    ``ray[default]``), and ``node_timeout``: seconds before a node that
    stops answering (hung, cut off) is declared lost, failing its arrays
    with ``NodeLostError`` (default: Ray's health check, about 60 s).
    ``"auto"`` joins the cluster Ray finds (``RAY_ADDRESS``, or the one last
    started on this machine), or the one ``autopar cluster start`` runs;
    ``"host:port"`` a cluster's GCS address; ``"ray://host:port"`` through
    Ray Client. An existing cluster keeps its own settings.

    ``timeout`` (seconds) bounds joining -- where nothing answers,
    ``ClusterError`` comes after at most ``timeout`` s, naming what was
    tried -- and the start of the runtimes and every control call.

    Connecting again while connected (with the same address, or none, and no
    local cluster's settings) starts
    runtimes on nodes that joined since or whose runtime was lost, and keeps
    the others; nodes that cannot start one now are skipped with a
    :class:`~autopar.cluster.ClusterWarning`. Raises ``ImportError`` with the
    install hint without Ray, :class:`~autopar.errors.ClusterError` when the
    cluster cannot be joined as asked.
    """
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise ValueError(f"connect: address={address!r}; expected None, 'local', 'auto', 'host:port' or "
                         f"'ray://host:port'")  # fmt: skip
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"connect: timeout={timeout!r}; expected seconds > 0")
    settings = {"nodes": nodes, "num_cpus": num_cpus, "num_gpus": num_gpus, "object_store_memory": object_store_memory,
                "node_timeout": node_timeout}  # fmt: skip
    given = [name for name, value in settings.items() if value is not None] + (["dashboard"] if dashboard else [])
    if address not in LOCAL and given:
        raise ValueError(
            f"connect({address!r}): {', '.join(given)} configure a local cluster that connect() starts; an existing "
            f"cluster keeps its own settings"
        )
    ray = _ray.import_ray()
    global _session
    with _lock:
        session = _session
        if session is not None:
            if address not in (*LOCAL, "auto", session.address):
                raise ClusterError(
                    f"connect({address!r}): already connected to {session.address}; "
                    f"call autopar.cluster.disconnect() first"
                )
            if given or (address == "local" and session.local is None):
                asked = ", ".join(given) if given else "'local'"
                raise ClusterError(
                    f"connect: {asked} asks for a local cluster that connect() starts, but this process is already "
                    f"connected to the cluster at {session.address}, which keeps its own settings; call "
                    f"autopar.cluster.disconnect() first"
                )
            _start_runtimes(session)
            return _devices(session)
        if ray.is_initialized():
            raise ClusterError(
                "connect: Ray is already initialized in this process (ray.init was called outside autopar); "
                "call ray.shutdown() first, then autopar.cluster.connect(address)"
            )
        if dashboard:
            _join.check_dashboard(ray)
        if address in LOCAL:
            session = _start_local(ray, settings, dashboard, float(timeout))
        else:
            assert address is not None
            session = _join_existing(ray, address, float(timeout))
        _session = session
        try:
            _join.check_loopback(session.target or split_host(session.address), _join.reported_addresses(ray))
            session.watcher = Watcher(_mark_lost, session.flush)
            _start_runtimes(session)
        except BaseException:
            _session = None
            _leave(ray, session)
            raise
        _register(session)
        _register_atexit()
        if address not in LOCAL:
            assert address is not None
            _join.warn_without_token(ray, address)
        return _devices(session)


def disconnect() -> None:
    """Stop autopar's runtimes, leave the cluster (stopping it if autopar started it), clean up.

    Data held on the nodes is gone. A no-op when not connected.
    """
    global _session
    with _lock:
        session, _session = _session, None
    if session is not None:
        _unregister()
        _leave(sys.modules["ray"], session)


def is_connected() -> bool:
    return _session is not None


def devices() -> list[Device]:
    """Every device of every node whose runtime is running: ``node0/cpu:0``, ... (``autopar.Device``s)."""
    return _devices(current())


def nodes() -> list[Node]:
    """The nodes whose runtime is running, with Ray's node id and address."""
    return [n.node for n in current().live()]


def current() -> Session:
    session = _session
    if session is None:
        raise ClusterError("not connected to a cluster; call autopar.cluster.connect(address) first")
    return session


def node(name: str) -> RemoteNode:
    """The runtime handle of node ``name`` (``"node0"``)."""
    session = current()
    handle = session.nodes.get(name)
    if handle is None:
        raise ClusterError(f"no node {name!r} in the cluster at {session.address}; nodes: {', '.join(session.nodes)}")
    return handle


# -- joining and leaving -----------------------------------------------------------------------

_INIT = {"logging_level": "warning", "log_to_driver": True}


def _start_local(ray: Any, settings: dict[str, Any], dashboard: bool, timeout: float) -> Session:
    """Start a local cluster for the session and join it."""
    env = _ray.EnvPatch()
    env.set_default("RAY_USAGE_STATS_ENABLED", "0")
    try:
        cluster = LocalCluster(settings["nodes"] or _local.DEFAULT_NODES, settings["num_cpus"],
                               settings["object_store_memory"], gpus=settings["num_gpus"],
                               node_timeout=settings["node_timeout"], dashboard=dashboard)  # fmt: skip
    except BaseException:
        env.restore()
        raise
    session = Session(address=cluster.address, target="127.0.0.1", env=env, timeout=timeout, local=cluster)
    try:
        ray.init(address=cluster.address, _node_ip_address="127.0.0.1", **_INIT)
    except BaseException as error:
        _leave(ray, session)
        if isinstance(error, Exception):
            raise ClusterError(f"connect(): Ray could not join the local cluster it started: {error}") from error
        raise
    return session


def _join_existing(ray: Any, address: str, timeout: float) -> Session:
    """Join the cluster at ``address`` (``_join``'s note): found, probed, authenticated, bounded."""
    env = _ray.EnvPatch()
    env.set_default("RAY_USAGE_STATS_ENABLED", "0")
    session = Session(address=address, target=None, env=env, timeout=timeout)
    resolved = address
    try:
        resolved = _join.resolve(ray, address)
        session.target = split_host(resolved)
        _join.check_reachable(address, resolved, timeout)
        kwargs = dict(_INIT)
        if is_loopback(session.target):
            _local.keep_on_loopback(env)
            if not resolved.startswith("ray://"):
                kwargs["_node_ip_address"] = "127.0.0.1"
        _join.authenticate(env, resolved)
        _join.bound_ray_init(env, timeout)
        _local.reload_ray_config()
        ray.init(address=resolved, **kwargs)
    except BaseException as error:
        offered = _join.token_state()  # before leaving restores the environment
        _leave(ray, session)
        if isinstance(error, Exception) and _join.refused_token(error):
            raise ClusterError(f"connect({address!r}): the cluster at {resolved} requires Ray's token "
                               f"authentication and refused this driver's token ({offered}); "
                               f"{_join.TOKEN_HINT}") from error  # fmt: skip
        if isinstance(error, Exception) and not isinstance(error, (ClusterError, ImportError)):
            raise ClusterError(f"connect({address!r}): something listens at {resolved}, but no Ray cluster "
                               f"answered there within about {timeout:g} s ({error}); is it a cluster's GCS "
                               f"address (ray start --head prints it)?") from error  # fmt: skip
        raise
    session.address = _join.reported_address(ray) or resolved
    return session


def _register(session: Session) -> None:
    """Make the session's devices and arrays known below (``_devices.py``)."""
    from autopar.cluster import _devices as registered
    from autopar.cluster import _remote
    from autopar.devices import _device

    _device.set_remote_resolver(registered.resolve)
    _remote.set_backend(registered.ArraysBackend())


def _unregister() -> None:
    from autopar.devices import _device

    _device.set_remote_resolver(None)
    if "autopar.cluster._remote" in sys.modules:
        sys.modules["autopar.cluster._remote"].set_backend(None)


def _leave(ray: Any, session: Session) -> None:
    for handle in session.nodes.values():
        handle.on_lost = None  # leaving is not losing: the arrays there are not failed, only unreadable
        handle.mark_lost("disconnected (autopar.cluster.disconnect)")
    if session.watcher is not None:
        session.watcher.stop("disconnect")
    for handle in session.nodes.values():
        try:
            ray.kill(handle.actor)
        except Exception:  # noqa: BLE001 - already gone
            pass
    if ray.is_initialized():
        ray.shutdown()
    if session.local is not None:
        session.local.stop()
    session.env.restore()
    _local.reload_ray_config()


def _register_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(_disconnect_at_exit)  # registered after Ray's own handler, so it runs first
        _atexit_registered = True


def _disconnect_at_exit() -> None:
    """Let pending work finish first (the engine's exit timeout), then leave the cluster."""
    if _session is None:
        return
    from autopar import _config, engine

    try:
        timeout = _config.exit_timeout()
    except ValueError:
        timeout = _config.DEFAULT_EXIT_TIMEOUT
    try:
        engine.current_engine().drain(timeout)
    except BaseException:  # noqa: BLE001 - leave anyway; the engine's own exit handler reports
        pass
    disconnect()
