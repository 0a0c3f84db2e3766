"""Many machines: autopar's devices on the nodes of a Ray cluster (the contract on many machines).

    import autopar as ap, autopar.cluster
    autopar.cluster.connect()                # a local 2-node cluster on 127.0.0.1 (also "local")
    autopar.cluster.connect("auto")          # or an existing one: "host:port", "ray://host:port"
    autopar.cluster.devices()                # [node0/cpu:0, node1/cpu:0, ...]: autopar Devices
    x = ap.ones((1000, 1000), device="node1/cpu:0")
    y = (x @ x).to("node0/cpu:0")            # runs on node1, copied node to node
    y.sum().item()                           # reading brings the value here
    autopar.cluster.disconnect()

Ray is optional (``pip install "autopar[cluster]"``): this package imports
without it, and Ray is imported by :func:`connect`. One long-lived runtime
actor per node (``_runtime.py``) holds that node's arrays and runs autopar's
own op table and engine there; the driver sends it one coarse call per op
(``_node.py``), and one watcher thread completes the driver's engine ops as
the nodes answer (``_watch.py``). Joining, and the security rules it keeps,
are in ``_session.py`` (local clusters: ``_local.py``; existing ones:
``_join.py``; the runtimes' start: ``_runtimes.py``; clusters that ``autopar
cluster start`` runs: ``_started.py``); what the session registers with the
devices and the arrays, in ``_devices.py``; the calls themselves, in
``_remote.py``; Ray's errors, bounded waits and transient faults, in ``_ray.py``.
``docs/design/cluster.md`` is the design note.
"""

from __future__ import annotations

from autopar.cluster._join import ClusterWarning, InsecureClusterWarning
from autopar.cluster._local import LocalCluster
from autopar.cluster._records import Node
from autopar.cluster._session import connect, devices, disconnect, is_connected, nodes
from autopar.errors import ClusterError, NodeLostError

__all__ = [
    "ClusterError",
    "ClusterWarning",
    "InsecureClusterWarning",
    "LocalCluster",
    "Node",
    "NodeLostError",
    "connect",
    "devices",
    "disconnect",
    "is_connected",
    "nodes",
]
