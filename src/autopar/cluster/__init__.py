"""Many machines: autopar's devices on the nodes of a Ray cluster (SPEC §9; in progress).

    import autopar.cluster
    autopar.cluster.connect()                # a local cluster on 127.0.0.1
    autopar.cluster.connect("auto")          # or an existing one: "host:port", "ray://host:port"
    autopar.cluster.devices()                # [node0/cpu:0, ...], with each node's address and Ray id
    autopar.cluster.disconnect()

Ray is optional (``pip install "autopar[cluster]"``): this package imports
without it, and Ray is imported by :func:`connect`. One long-lived runtime
actor per node (``_runtime.py``) owns that node's devices and runs autopar's
engine there; the driver talks to it through coarse calls (``_node.py``).
Joining, and the security rules it keeps, are in ``_session.py``. How remote
devices plug into ``Device``, the engine and the arrays is designed in
``docs/design/cluster.md``.
"""

from __future__ import annotations

from autopar.cluster._records import Node, RemoteDevice
from autopar.cluster._session import connect, devices, disconnect, is_connected, nodes
from autopar.errors import ClusterError, NodeLostError

__all__ = [
    "ClusterError",
    "Node",
    "NodeLostError",
    "RemoteDevice",
    "connect",
    "devices",
    "disconnect",
    "is_connected",
    "nodes",
]
