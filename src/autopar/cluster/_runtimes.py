"""Starting autopar's runtime on a cluster's nodes, and what the session does when one is lost.

:func:`start_runtimes` starts a runtime on every node Ray lists alive that
has none running, all at once, then waits for each. Ray lists a node whose
raylet died as alive until its GCS health check gives up on it (about a
minute by default; 11.9 s measured for a reconnect right after a node died),
and an actor placed there fails only then: a node whose raylet refuses
connections (``_net``) is known gone and skipped at once. A node whose
runtime does not start within the session's ``timeout`` is skipped too; both
are named in one :class:`~autopar.cluster.ClusterWarning`, and the session
goes on with the others. A runtime that fails in its own start-up (autopar
missing on the node) is an error: every later connect would fail the same way.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from autopar.cluster import _join, _net
from autopar.cluster._node import RemoteNode, RuntimeStartError, kill_soon, start_runtime
from autopar.cluster._records import Node, core_offsets
from autopar.devices import Device
from autopar.errors import ClusterError, NodeLostError


def ray_nodes(ray: Any) -> list[dict[str, Any]]:
    """Ray's live nodes that offer CPUs or GPUs, head first (a head with no CPU runs nothing)."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    usable = [n for n in alive if n["Resources"].get("CPU", 0) >= 1 or n["Resources"].get("GPU", 0) >= 1]
    return sorted(usable, key=lambda n: "node:__internal_head__" not in n["Resources"])


def start_runtimes(session: Any) -> None:
    """Start a runtime on every live node that has none running (module note); mark the gone ones lost."""
    ray = sys.modules["ray"]
    infos = ray_nodes(ray)
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
                            int(resources.get("GPU", 0)), "node:__internal_head__" in resources,
                            int(info.get("NodeManagerPort") or 0)))  # fmt: skip
    offsets = core_offsets([(n.node_id, n.address, n.cpus) for n in records])
    host, port = _net.split_host_port(session.address)
    gcs = (host, port) if port is not None and not session.address.startswith("ray://") else None
    started, skipped = [], {}
    for record in records:
        running = session.nodes.get(record.name)
        if running is not None and not running.lost and running.info is not None:
            continue
        gone = _net.refused(record.address, record.port) if record.port else None
        if gone is not None:
            skipped[record.name] = f"its raylet is gone ({gone}), though Ray lists it until its health check gives up"
            continue
        handle = RemoteNode(record, start_runtime(record, offsets[record.node_id]), session.timeout, session.watcher,
                            gcs if record.is_head else None)  # fmt: skip
        session.nodes[record.name] = handle
        started.append(handle)
    for handle in started:
        try:
            handle.start()
        except (NodeLostError, ClusterError) as error:
            if isinstance(error, RuntimeStartError):
                raise
            handle.mark_lost(f"its runtime did not start ({error})")
            skipped[handle.name] = f"its runtime did not start ({error})"
            kill_soon(handle.actor)
            continue
        handle.on_lost = fail_held
    live = [h.name for h in session.live()]
    if skipped:
        listed = "; ".join(f"{name}: {why}" for name, why in skipped.items())
        if not live:
            raise ClusterError(f"connect: no node of the cluster at {session.address} can run autopar now ({listed})")
        warnings.warn(f"connect: skipped {listed}; going on with {', '.join(live)}", _join.ClusterWarning,
                      stacklevel=3)  # fmt: skip


def devices(session: Any) -> list[Device]:
    return [Device(d) for handle in session.live() for d in handle.devices]


def mark_lost(node: RemoteNode, error: Any) -> None:
    node.mark_lost(error.reason)


def fail_held(node: RemoteNode) -> None:
    from autopar.cluster import _devices

    _devices.fail_held(node)
