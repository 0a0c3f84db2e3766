"""What the driver knows about the cluster: nodes and their devices (typed records, no Ray)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from autopar.cluster._net import split_host_port


@dataclass(frozen=True, slots=True)
class Node:
    """One node of the cluster, as autopar names it.

    ``name`` is autopar's short name (``node0`` is the head; the others
    follow in the order Ray lists them at the first connect, and a name is
    never given to another node while connected). ``node_id`` and ``address``
    are Ray's (the node manager's IP address); ``cpus`` and ``gpus`` are the
    resources Ray gives the node; ``port`` is its raylet's port (0: unknown).
    """

    name: str
    node_id: str
    address: str
    cpus: int
    gpus: int
    is_head: bool
    port: int = 0

    def __str__(self) -> str:
        return f"{self.name} ({self.address}, Ray node {self.node_id[:12]})"


@dataclass(frozen=True, slots=True)
class RuntimeInfo:
    """What a node runtime reports about itself once started."""

    node: str
    pid: int
    hostname: str
    cores: tuple[int, ...]  # the cores its process is pinned to
    torch_threads: int  # intra-op threads of its CPU device's compute lane
    devices: tuple[str, ...]  # local names: cpu:0, cuda:0, ...
    torch_version: str
    autopar_version: str


def is_loopback(host: str) -> bool:
    """True for ``127.0.0.0/8``, ``::1``, IPv4-mapped loopback and ``localhost``."""
    host = host.strip().strip("[]")
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def split_host(address: str) -> str:
    """The host part of ``host:port``, ``[v6]:port``, ``ray://host:port`` or a bare host."""
    return split_host_port(address)[0]


def core_offsets(nodes: list[tuple[str, str, int]]) -> dict[str, int]:
    """Where each node's share of its machine's cores starts: ``{node_id: offset}``.

    ``nodes`` lists ``(node_id, host, cpus)`` in naming order. Nodes that
    share a host (a local test cluster: every node on 127.0.0.1) get
    consecutive offsets, so their runtimes pin disjoint cores while cores
    last (``_runtime.pick_cores`` wraps around after); a node alone on its
    host starts at 0.
    """
    offsets: dict[str, int] = {}
    used: dict[str, int] = {}
    for node_id, host, cpus in nodes:
        offsets[node_id] = used.get(host, 0)
        used[host] = offsets[node_id] + max(1, cpus)
    return offsets
