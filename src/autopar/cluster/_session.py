"""Joining and leaving a Ray cluster: one session per process.

Security (a cluster runs whatever its members send it, so autopar is careful
about which one it joins and what it opens):

- A cluster is joined only by :func:`connect`; nothing else starts Ray.
- ``connect()`` with no address starts a local cluster bound to 127.0.0.1
  (a plain ``ray.init()`` binds the machine's network address), without a
  dashboard unless asked (``dashboard=True``, then on 127.0.0.1), without
  usage reporting, with Ray's token authentication on and its token, logs
  and sockets in a temporary directory that autopar owns and removes at
  :func:`disconnect` (nothing in ``~/.ray`` or ``/tmp/ray``).
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
"""

from __future__ import annotations

import atexit
import shutil
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

from autopar.cluster import _local, _ray
from autopar.cluster._node import RemoteNode, start_runtime
from autopar.cluster._records import Node, core_offsets, is_loopback, split_host
from autopar.cluster._watch import Watcher
from autopar.devices import Device
from autopar.errors import ClusterError

_lock = threading.RLock()
_session: Session | None = None
_atexit_registered = False


@dataclass
class Session:
    address: str  # the GCS address (or ray:// address) Ray reports
    target: str | None  # the host asked for; a loopback one keeps every address on the loopback
    owns_ray: bool  # autopar called ray.init, so disconnect calls ray.shutdown
    tmpdir: str | None  # Ray's files for a local cluster autopar started
    env: _ray.EnvPatch
    timeout: float
    nodes: dict[str, RemoteNode] = field(default_factory=dict)  # by name, in naming order
    names: dict[str, str] = field(default_factory=dict)  # Ray node id -> name
    watcher: Watcher | None = None  # completes remote ops (_watch.py); started at connect

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
    num_cpus: int | None = None,
    num_gpus: int | None = None,
    object_store_memory: int | None = None,
    dashboard: bool = False,
    timeout: float = 60.0,
) -> list[Device]:
    """Join a Ray cluster and start autopar's runtime on each of its nodes; return their devices.

    ``address``: ``None`` starts a local cluster bound to 127.0.0.1 (with
    ``num_cpus``, ``num_gpus``, ``object_store_memory``, and a dashboard on
    127.0.0.1 only if ``dashboard``); ``"auto"`` joins the cluster Ray finds
    (``RAY_ADDRESS``, or the one last started on this machine);
    ``"host:port"`` a cluster's GCS address; ``"ray://host:port"`` through Ray
    Client. ``timeout`` bounds the start of each node's runtime and every
    control call; ``ray.init`` itself gives up after Ray's own GCS connection
    timeout (about a minute) when nobody answers.

    Connecting again while connected (with the same address, or none) starts
    runtimes on nodes that joined since or whose runtime was lost, and keeps
    the others. Raises ``ImportError`` with the install hint without Ray,
    :class:`~autopar.errors.ClusterError` when the cluster cannot be joined
    as asked.
    """
    if address is not None and (not isinstance(address, str) or not address.strip()):
        raise ValueError(f"connect: address={address!r}; expected None, 'auto', 'host:port' or 'ray://host:port'")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"connect: timeout={timeout!r}; expected seconds > 0")
    local_only = (num_cpus, num_gpus, object_store_memory) != (None, None, None) or dashboard
    if address is not None and local_only:
        raise ValueError(
            f"connect({address!r}): num_cpus, num_gpus, object_store_memory and dashboard configure a local "
            f"cluster that connect() starts; an existing cluster keeps its own settings"
        )
    ray = _ray.import_ray()
    global _session
    with _lock:
        session = _session
        if session is not None:
            if address not in (None, "auto", session.address):
                raise ClusterError(
                    f"connect({address!r}): already connected to {session.address}; "
                    f"call autopar.cluster.disconnect() first"
                )
            _start_runtimes(session)
            return _devices(session)
        if ray.is_initialized():
            raise ClusterError(
                "connect: Ray is already initialized in this process (ray.init was called outside autopar); "
                "call ray.shutdown() first, then autopar.cluster.connect(address)"
            )
        session = _join(ray, address, num_cpus, num_gpus, object_store_memory, dashboard, float(timeout))
        _session = session
        try:
            _check_addresses(ray, session)
            session.watcher = Watcher(_mark_lost, session.flush)
            _start_runtimes(session)
        except BaseException:
            _session = None
            _leave(ray, session)
            raise
        _register(session)
        _register_atexit()
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


def _target_host(ray: Any, address: str | None) -> str | None:
    """The host ``connect`` will reach, if it can be told before connecting."""
    if address is None:
        return "127.0.0.1"
    if address == "auto":
        try:
            found = ray._private.services.get_ray_address_from_environment("auto", None)
        except Exception:  # noqa: BLE001 - no cluster found: ray.init will say so
            return None
        return None if found in (None, "auto", "local") else split_host(found)
    return split_host(address)


def _join(
    ray: Any, address: str | None, num_cpus: int | None, num_gpus: int | None,
    object_store_memory: int | None, dashboard: bool, timeout: float,
) -> Session:
    env = _ray.EnvPatch()
    env.set_default("RAY_USAGE_STATS_ENABLED", "0")
    target = _target_host(ray, address)
    session = Session(address=address or "local", target=target, owns_ray=True, tmpdir=None, env=env,
                      timeout=timeout)
    kwargs: dict[str, Any] = {"logging_level": "warning", "log_to_driver": True}
    if target is not None and is_loopback(target):
        if address is not None:  # a local cluster's prepare() does it too
            _local.keep_on_loopback(env)
        if address is None or not address.startswith("ray://"):
            kwargs["_node_ip_address"] = "127.0.0.1"
    try:
        if address is None:
            session.tmpdir = _local.private_tmpdir()
            ray_dir = _local.prepare(env, session.tmpdir)
            ray.init(address="local", num_cpus=num_cpus, num_gpus=num_gpus, object_store_memory=object_store_memory,
                     include_dashboard=dashboard, dashboard_host="127.0.0.1", _temp_dir=ray_dir, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    except BaseException as error:
        _leave(ray, session)
        if isinstance(error, Exception) and not isinstance(error, (ClusterError, ImportError)):
            raise ClusterError(f"connect({address!r}): Ray could not join the cluster: {error}") from error
        raise
    session.address = _reported_address(ray) or session.address
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
    if session.owns_ray and ray.is_initialized():
        ray.shutdown()
    session.env.restore()
    if session.tmpdir is not None:
        _local.reload_auth_config()
        shutil.rmtree(session.tmpdir, ignore_errors=True)


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


# -- what Ray reports ----------------------------------------------------------------------------


def _reported_address(ray: Any) -> str | None:
    try:
        return str(ray.get_runtime_context().gcs_address)
    except Exception:  # noqa: BLE001 - Ray Client has no GCS address to show
        return None


def reported_addresses(ray: Any) -> dict[str, str]:
    """Every address Ray reports for this connection: ``{what: address}``."""
    out: dict[str, str] = {}
    gcs = _reported_address(ray)
    if gcs:
        out["the GCS"] = gcs
    try:
        out["the driver's node"] = str(ray.util.get_node_ip_address())
    except Exception:  # noqa: BLE001 - Ray Client: the driver is not on a node
        pass
    for info in ray.nodes():
        if info.get("Alive"):
            where = f"{info['NodeManagerAddress']}:{info.get('NodeManagerPort', '')}".rstrip(":")
            out[f"node {info['NodeID'][:12]}"] = where
    return out


def check_loopback(target: str | None, reported: dict[str, str]) -> None:
    """Raise ClusterError when a loopback ``target`` led to an address off the loopback."""
    if target is None or not is_loopback(target):
        return
    outside = {what: addr for what, addr in reported.items() if not is_loopback(split_host(addr))}
    if outside:
        listed = "; ".join(f"{what} at {addr}" for what, addr in outside.items())
        raise ClusterError(
            f"connect: asked for a cluster on the loopback ({target}), but Ray reports {listed}, outside "
            f"127.0.0.0/8; autopar does not leave the loopback on its own. Connect to the cluster's network "
            f"address explicitly if you mean to"
        )


def _check_addresses(ray: Any, session: Session) -> None:
    target = session.target
    if target is None:  # "auto": judge by where it led
        target = split_host(session.address)
    check_loopback(target, reported_addresses(ray))


# -- nodes and their runtimes ------------------------------------------------------------------


def _ray_nodes(ray: Any) -> list[dict[str, Any]]:
    """Ray's live nodes that offer CPUs or GPUs, head first (a head with no CPU runs nothing)."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    usable = [n for n in alive if n["Resources"].get("CPU", 0) >= 1 or n["Resources"].get("GPU", 0) >= 1]
    return sorted(usable, key=lambda n: "node:__internal_head__" not in n["Resources"])


def _start_runtimes(session: Session) -> None:
    """Start a runtime on every live node that has none running; mark the rest of the gone ones lost."""
    ray = sys.modules["ray"]
    infos = _ray_nodes(ray)
    alive_ids = {n["NodeID"] for n in infos}
    for handle in session.nodes.values():
        if handle.node.node_id not in alive_ids:
            handle.mark_lost("Ray no longer lists the node as alive")
    records = []
    for info in infos:
        node_id = info["NodeID"]
        name = session.names.setdefault(node_id, f"node{len(session.names)}")
        resources = info["Resources"]
        records.append(Node(name, node_id, str(info["NodeManagerAddress"]), int(resources.get("CPU", 0)),
                            int(resources.get("GPU", 0)), "node:__internal_head__" in resources))
    offsets = core_offsets([(n.node_id, n.address, n.cpus) for n in records])
    started = []
    for record in records:
        running = session.nodes.get(record.name)
        if running is not None and not running.lost and running.info is not None:
            continue
        handle = RemoteNode(record, start_runtime(record, offsets[record.node_id]), session.timeout, session.watcher)
        handle.on_lost = _fail_held
        session.nodes[record.name] = handle
        started.append(handle)
    for handle in started:
        handle.start()


def _devices(session: Session) -> list[Device]:
    return [Device(d) for handle in session.live() for d in handle.devices]


def _mark_lost(node: RemoteNode, error: Any) -> None:
    node.mark_lost(error.reason)


def _fail_held(node: RemoteNode) -> None:
    from autopar.cluster._devices import fail_held

    fail_held(node)
