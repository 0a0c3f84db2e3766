"""The driver's handle on one node's runtime actor: coarse calls, bounded waits, loss.

The array layer's remote ops (``_remote.py``) reach a node through
this handle: :meth:`RemoteNode.submit` sends a call and leaves its answer to
the session's watcher (``_watch.py``), which completes the engine op;
:meth:`RemoteNode.request` sends one and waits (a read). Once a call finds
the node lost, the handle remembers it and every later call raises
:class:`~autopar.NodeLostError` at once, without asking Ray. Keys of arrays
dropped on the driver are sent along with the next call (``garbage``).
After a transient fault an idempotent call is sent again (``_ray``'s note):
each call carries how to send it again, ``None`` for the others.
"""

from __future__ import annotations

import collections
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from autopar.cluster import _net, _ray
from autopar.cluster._kernels import idempotent
from autopar.cluster._records import Node, RuntimeInfo
from autopar.cluster._runtime import NodeRuntime
from autopar.cluster._watch import Watcher
from autopar.errors import ClusterError, NodeLostError

# Calls in flight at once on one runtime (Ray's threads in the actor).
MAX_CONCURRENCY = 32


def start_runtime(node: Node, core_offset: int) -> Any:
    """Create ``node``'s runtime actor, pinned to it, holding no CPU (see below); returns the actor handle.

    ``num_cpus=0``: an actor holds the CPUs it asks for as long as it lives, so
    on a 1-CPU node a runtime holding one would leave nothing for anything
    else, and a second pinned actor would wait forever without an error. The
    node's GPUs are the runtime's (``num_gpus``): Ray makes them visible to it.
    """
    ray = sys.modules["ray"]
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    actor_class = ray.remote(NodeRuntime)
    return actor_class.options(
        num_cpus=0,
        num_gpus=node.gpus,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
        max_restarts=0,
        max_concurrency=MAX_CONCURRENCY,
    ).remote(node.name, node.cpus, core_offset)


class RemoteNode:
    """One node's runtime, as the driver sees it (the array layer's ``_remote.Runtime``)."""

    def __init__(self, node: Node, actor: Any, timeout: float, watcher: Watcher | None = None,
                 gcs: tuple[str, int] | None = None) -> None:  # fmt: skip
        self.node = node
        self.actor = actor
        self.timeout = timeout  # for control calls; data and ops wait as long as the node lives
        self.watcher = watcher
        self.gcs = gcs  # the cluster's GCS (host, port), on the head: probed after a transient fault
        self._probed: tuple[float, str | None] = (-1.0, None)
        self.info: RuntimeInfo | None = None
        self._lost: str | None = None
        self._lock = threading.Lock()
        self._garbage: collections.deque[int] = collections.deque()  # keys freed here, sent with the next call
        self.held: weakref.WeakSet[Any] = weakref.WeakSet()  # the array storages whose data it holds
        self.on_lost: Callable[[RemoteNode], None] | None = None  # the session fails `held` then

    def __repr__(self) -> str:
        state = f"lost: {self._lost}" if self._lost else ("running" if self.info else "starting")
        return f"<RemoteNode {self.node.name} {self.node.address} {state}>"

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def actor_id_hex(self) -> str:
        return str(self.actor._actor_id.hex())

    @property
    def lost(self) -> bool:
        return self._lost is not None

    @property
    def lost_reason(self) -> str | None:
        return self._lost

    @property
    def devices(self) -> list[str]:
        """The runtime's devices, by their names here: ``node1/cpu:0``, ..."""
        if self.info is None or self.lost:
            return []
        return [f"{self.name}/{local}" for local in self.info.devices]

    def mark_lost(self, reason: str) -> bool:
        """Remember that the runtime is gone (and tell ``on_lost``); True the first time.

        The actor is killed too (from a thread: Ray may be slow to answer
        now), so a runtime cut off for a while does not come back holding
        arrays nobody can reach.
        """
        with self._lock:
            if self._lost is not None:
                return False
            self._lost = reason
            self._garbage.clear()
        if self.on_lost is not None:
            if self.node.is_head and HEAD_GONE in reason:
                print(f"autopar: {reason}", file=sys.stderr, flush=True)
            self.on_lost(self)
            kill_soon(self.actor)
        return True

    def gone(self) -> str | None:
        """Why the node is certainly gone -- nothing listens at its raylet, or (head) at the GCS -- else None.

        One TCP connect each (``_net``), remembered for a moment: many calls
        failing at once probe once.
        """
        when, reason = self._probed
        if time.monotonic() - when < _net.PROBE_SECONDS:
            return reason
        reason = None
        if self.gcs is not None:
            refused = _net.refused(*self.gcs)
            if refused is not None:
                reason = (f"{HEAD_GONE} ({refused}, the cluster's GCS): a Ray cluster ends with its head; Ray ends "
                          f"this process too once it gives up reconnecting (gcs_rpc_server_reconnect_timeout_s, "
                          f"60 s by default), and arrays on the other nodes work until then")  # fmt: skip
        if reason is None and self.node.port:
            refused = _net.refused(self.node.address, self.node.port)
            if refused is not None:
                reason = f"its raylet is gone ({refused})"
        self._probed = (time.monotonic(), reason)
        return reason

    def check(self) -> None:
        """Raise NodeLostError if the runtime is lost."""
        if self._lost is not None:
            raise NodeLostError(self.name, self._lost)

    def wait(self, ref: Any, what: str, *others: RemoteNode, timeout: float | None = None,
             resend: Callable[[], Any] | None = None) -> Any:  # fmt: skip
        """Wait for ``ref`` of a call that ran here (and on ``others``, e.g. a move's source).

        ``resend`` sends the call again after a transient fault (None: not idempotent).
        """
        return _ray.get(ref, what=what, nodes=(self, *others), timeout=timeout, on_lost=_mark_lost, resend=resend)

    # -- the array layer's calls ------------------------------------------------------------------

    def discard(self, key: int) -> None:
        """Free ``key`` on the node: sent with the next call (or by the watcher when idle)."""
        if self._lost is None:
            self._garbage.append(key)  # atomic, takes no lock: safe from a finalizer on any thread

    def _take_garbage(self) -> tuple[int, ...]:
        """The freed keys, taken one by one (``popleft`` is atomic: a key discarded meanwhile is kept, not lost)."""
        garbage = self._garbage
        taken: list[int] = []
        while garbage:
            try:
                taken.append(garbage.popleft())
            except IndexError:  # taken by another thread sending to this node
                break
        return tuple(taken)

    def submit_apply(self, call: tuple[Any, ...], data: Any = None) -> Any:
        """Send one call (``_remote.py``); its ``ObjectRef``."""
        self.check()
        garbage = self._take_garbage()
        if garbage:
            return self.actor.apply.remote(call, data, garbage)
        if data is not None:
            return self.actor.apply.remote(call, data)
        return self.actor.apply.remote(call)

    def submit_many(self, calls: list[tuple[Any, ...]]) -> Any:
        """Send several calls in one Ray call (``apply_many``); its ``ObjectRef``."""
        self.check()
        garbage = self._take_garbage()
        return self.actor.apply_many.remote(calls, garbage) if garbage else self.actor.apply_many.remote(calls)

    def submit(self, call: tuple[Any, ...], complete: Any, on_value: Any = None, data: Any = None) -> None:
        """Send ``call``; the op completes when the node answers.

        Calls without data go through the watcher, which sends the ones due
        to one node together -- unless it has nothing to do: then this thread
        sends the call at once and the watcher only watches it (a chain of
        dependent ops does not wait for the watcher to wake before each
        call). An upload is sent from here too (its data is serialized now,
        on this lane's worker) and only watched.
        """
        self.check()
        watcher = self.watcher
        assert watcher is not None, "a runtime of a session has a watcher"
        if data is None and not watcher.idle:
            watcher.send(self, call, complete, on_value, _what(call, self), idempotent(call))
        else:
            resend = (lambda: self.submit_apply(call, data)) if idempotent(call) else None
            watcher.watch(self.submit_apply(call, data), complete, on_value, (self,), _what(call, self), resend)

    def submit_move(self, source: RemoteNode, operand: tuple[Any, ...], key: int, device: str, complete: Any) -> None:
        """Here, ``key`` on ``device`` := ``source``'s operand; the data goes node to node."""
        self.check()
        source.check()

        def send() -> Any:
            return self.submit_apply(("write", key, device), source.submit_apply(("read", operand)))

        assert self.watcher is not None, "a runtime of a session has a watcher"
        self.watcher.watch(send(), complete, None, (self, source), f"copy from {source.name} to {self.name}/{device}",
                           send)  # fmt: skip

    def request(self, call: tuple[Any, ...]) -> Any:
        """Send ``call`` and wait for its answer (a read's data)."""
        resend = (lambda: self.submit_apply(call)) if idempotent(call) else None
        return self.wait(self.submit_apply(call), _what(call, self), resend=resend)

    def flush(self) -> None:
        """Send the freed keys now, without waiting (the watcher, when idle)."""
        garbage = self._take_garbage() if self._lost is None else ()
        if garbage:
            self.actor.free.remote(garbage)

    # -- control calls ----------------------------------------------------------------------------

    def start(self) -> RuntimeInfo:
        """Wait until the runtime runs; ClusterError if it cannot start there (its ``__init__`` failed)."""
        self.check()
        try:
            self.info = self._control("info", "starting the runtime")
        except NodeLostError as error:
            failed = error.__cause__
            if getattr(failed, "actor_init_failed", False) or getattr(getattr(failed, "cause", None),
                                                                      "actor_init_failed", False):  # fmt: skip
                raise RuntimeStartError(f"autopar's runtime could not start on {self.node} "
                                        f"({_ray._first_line(failed or error)}); is autopar, with torch, installed "
                                        f"there?") from failed  # fmt: skip
            raise
        return self.info

    def keys(self) -> list[int]:
        """The keys the node holds (after sending the freed ones)."""
        self.check()
        self._control("free", "free", self._take_garbage())
        return list(self._control("keys", "keys"))

    def _control(self, method: str, what: str, *args: Any) -> Any:
        """Call the actor's ``method`` (idempotent), waiting at most the session's timeout."""
        def send() -> Any:
            return getattr(self.actor, method).remote(*args)

        return self.wait(send(), what, timeout=self.timeout, resend=send)


def _what(call: tuple[Any, ...], node: RemoteNode) -> str:
    kind = call[0]
    if kind == "bind":
        return f"{call[7]} on {node.name}/{call[5]}"
    if kind == "into":
        return f"{call[5]} on {node.name}/{call[7]}"
    return f"{kind} on {node.name}"


def _mark_lost(node: RemoteNode, error: NodeLostError) -> None:
    node.mark_lost(error.reason)


HEAD_GONE = "the head node is gone"


class RuntimeStartError(ClusterError):
    """autopar's runtime failed in its own start-up on a node (a configuration error, not a lost node)."""


def kill_soon(actor: Any) -> None:
    """``ray.kill(actor)`` from a thread of its own (Ray may be slow to answer while nodes are failing)."""

    def kill() -> None:
        try:
            sys.modules["ray"].kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone, or Ray is shutting down
            pass

    threading.Thread(target=kill, name="autopar-kill-runtime", daemon=True).start()
