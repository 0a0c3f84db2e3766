"""What a session registers below it: which remote devices exist, and where remote arrays live.

The layers under the cluster never import it. At connect the session
registers two things, and removes them at disconnect:

- with ``devices``, a *resolver* that says whether ``node1/cpu:0`` exists
  (:func:`resolve`): ``Device("node1/cpu:0")`` raises ``DeviceError`` with its
  reason when not;
- with the array layer, a *backend* (:class:`ArraysBackend`): the runtime that
  holds a device now, fresh keys, and the record of which storages each
  runtime holds.

When a runtime is lost, the arrays it held fail (:func:`fail_held`): one
engine op writing all their vars raises ``NodeLostError``, so reads,
``wait_to_read`` and ``waitall`` raise it (the contract's failure rules, §9) -- not only reads
that reach for the data. Being a write, it runs after the ops already pushed
that read or write them.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from autopar.cluster import _session
from autopar.cluster._node import RemoteNode
from autopar.devices import Device, cpu
from autopar.errors import DeviceError, NodeLostError


def resolve(node: str, kind: str, index: int) -> str | None:
    """``None`` if ``node/kind:index`` exists now, else why not (``devices``' remote resolver)."""
    session = _session._session
    if session is None:
        return "no cluster is connected; call autopar.cluster.connect(address) first"
    handle = session.nodes.get(node)
    if handle is None:
        return f"the cluster at {session.address} has no node {node!r} (nodes: {', '.join(session.nodes) or 'none'})"
    if handle.lost:
        return f"{node} was lost ({handle.lost_reason}); call autopar.cluster.connect() to restart its runtime"
    have = handle.devices
    if f"{node}/{kind}:{index}" not in have:
        return f"{node} has {', '.join(have)}"
    return None


class ArraysBackend:
    """The array layer's view of the session (``_remote.Backend``)."""

    def __init__(self) -> None:
        self._keys = itertools.count(1)

    def runtime(self, device: Device) -> RemoteNode:
        session = _session._session
        handle = None if session is None or device.node is None else session.nodes.get(device.node)
        if handle is None:
            raise DeviceError(f"device {device}: {resolve(device.node or '', device.kind, device.index)}")
        return handle

    def new_key(self) -> int:
        return next(self._keys)

    def track(self, runtime: RemoteNode, storage: Any) -> None:
        runtime.held.add(storage)


def fail_held(handle: RemoteNode) -> None:
    """Fail every array ``handle`` held with NodeLostError (a runtime's ``on_lost``)."""
    held = list(handle.held)
    if not held:
        return
    writes = tuple(s.var for s in held)
    name, reason = handle.name, handle.lost_reason or "lost"

    def lost() -> None:
        raise NodeLostError(name, reason)

    def push() -> None:
        from autopar import engine

        engine.push(lost, writes=writes, device=cpu(0), name=f"{name} lost")

    # From a thread of its own: the loss may be noticed by the watcher, which must never block on
    # the engine's back-pressure while it is the one completing ops. Waited for briefly, so that the
    # op is pushed before the op that saw the loss completes (a waitall that sees that op finish
    # also owes this failure), unless the engine is at its pending bound.
    thread = threading.Thread(target=push, name=f"autopar-{name}-lost", daemon=True)
    thread.start()
    thread.join(PUSH_WAIT)


PUSH_WAIT = 1.0  # seconds the loser waits for the failing op to be pushed
