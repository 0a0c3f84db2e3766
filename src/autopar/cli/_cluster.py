"""``--cluster ADDRESS`` for ``autopar demo``, ``bench`` and ``train``: join a cluster for the command, then leave.

``local`` is what ``autopar.cluster.connect("local")`` starts: a 2-node Ray
cluster on this machine, bound to 127.0.0.1, stopped after; any other
address is an existing cluster (``auto``, ``host:port``, ``ray://host:port``),
left running.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

HELP = ("run on a Ray cluster's nodes, one device per node: ADDRESS is 'local' (start a 2-node cluster on "
        "127.0.0.1, stopped after), 'auto', 'host:port' or 'ray://host:port' (needs autopar[cluster])")


@contextlib.contextmanager
def joined(address: str) -> Iterator[list[Any]]:
    """Connected to the cluster at ``address`` for the block; yields one device of each of two nodes."""
    from autopar import cluster

    if address == "local":
        print("... starting a local 2-node Ray cluster on 127.0.0.1", file=sys.stderr, flush=True)
    devices = cluster.connect(address)
    try:
        per_node: dict[str, Any] = {}
        for d in devices:
            if d.node is not None and d.node not in per_node and d.kind == "cpu":
                per_node[d.node] = d
        if len(per_node) < 2:
            raise ValueError(f"--cluster {address}: the cluster has {len(per_node)} node(s) with a CPU device "
                             f"({', '.join(map(str, devices)) or 'none'}); this needs two")
        yield list(per_node.values())[:2]
    finally:
        cluster.disconnect()
