"""The driver's handle on one node's runtime actor: coarse calls, bounded waits, loss.

Every call comes in two forms: ``submit_*`` returns Ray's ``ObjectRef`` at
once (what the engine integration of part 2 pushes, completing the op when
the ref resolves), and the plain name waits for it (:func:`_ray.get`). Once
a call finds the node lost, the handle remembers it and every later call
raises :class:`~autopar.NodeLostError` at once, without asking Ray.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from autopar.cluster import _ray
from autopar.cluster._kernels import UserFunction
from autopar.cluster._records import Node, RemoteDevice, RuntimeInfo
from autopar.cluster._runtime import NodeRuntime
from autopar.errors import NodeLostError

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
    """One node's runtime, as the driver sees it."""

    def __init__(self, node: Node, actor: Any, timeout: float) -> None:
        self.node = node
        self.actor = actor
        self.timeout = timeout  # for control calls; data and kernels wait as long as the node lives
        self.info: RuntimeInfo | None = None
        self._lost: str | None = None
        self._lock = threading.Lock()

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
    def devices(self) -> list[RemoteDevice]:
        if self.info is None or self.lost:
            return []
        out = []
        for local in self.info.devices:
            kind, _, index = local.partition(":")
            threads = self.info.torch_threads if kind == "cpu" else 1
            out.append(RemoteDevice(self.node, kind, int(index), threads))
        return out

    def mark_lost(self, reason: str) -> None:
        with self._lock:
            if self._lost is None:
                self._lost = reason

    def _check(self) -> None:
        if self._lost is not None:
            raise NodeLostError(self.name, self._lost)

    def wait(self, ref: Any, what: str, *others: RemoteNode, timeout: float | None = None) -> Any:
        """Wait for ``ref`` of a call that ran here (and on ``others``, e.g. a move's source)."""
        return _ray.get(ref, what=what, nodes=(self, *others), timeout=timeout, on_lost=_mark_lost)

    # -- submitted calls (return an ObjectRef at once) -------------------------------------------

    def submit_info(self) -> Any:
        self._check()
        return self.actor.info.remote()

    def submit_write(self, key: int, device: str, data: Any) -> Any:
        self._check()
        return self.actor.write.remote(key, device, data)

    def submit_run(
        self,
        kernel: str | UserFunction,
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        device: str,
        params: dict[str, Any] | None = None,
        lane: str = "compute",
    ) -> Any:
        self._check()
        return self.actor.run.remote(kernel, tuple(inputs), tuple(outputs), params or {}, device, lane)

    def submit_read(self, key: int) -> Any:
        self._check()
        return self.actor.read.remote(key)

    def submit_free(self, keys: tuple[int, ...]) -> Any:
        self._check()
        return self.actor.free.remote(tuple(keys))

    # -- blocking calls --------------------------------------------------------------------------

    def start(self) -> RuntimeInfo:
        self.info = self.wait(self.submit_info(), "starting the runtime", timeout=self.timeout)
        return self.info

    def write(self, key: int, device: str, data: Any) -> None:
        self.wait(self.submit_write(key, device, data), f"write[{key}]")

    def run(
        self,
        kernel: str | UserFunction,
        inputs: tuple[int, ...],
        outputs: tuple[int, ...],
        device: str,
        params: dict[str, Any] | None = None,
        lane: str = "compute",
    ) -> None:
        name = kernel if isinstance(kernel, str) else getattr(kernel, "name", "call")
        self.wait(self.submit_run(kernel, inputs, outputs, device, params, lane), f"{name} on {device}")

    def read(self, key: int) -> Any:
        return self.wait(self.submit_read(key), f"read[{key}]")

    def free(self, keys: tuple[int, ...]) -> None:
        self.wait(self.submit_free(keys), "free", timeout=self.timeout)

    def keys(self) -> list[int]:
        self._check()
        return list(self.wait(self.actor.keys.remote(), "keys", timeout=self.timeout))


def _mark_lost(node: RemoteNode, error: NodeLostError) -> None:
    node.mark_lost(error.reason)


def submit_move(src: RemoteNode, key: int, dst: RemoteNode, dst_key: int, device: str) -> Any:
    """Copy ``src``'s ``key`` to ``dst``'s ``dst_key`` on ``device``, node to node; return the ref.

    The data goes from ``src``'s object store to ``dst``'s; the driver holds
    only the reference.
    """
    data = src.submit_read(key)
    return dst.submit_write(dst_key, device, data)


def move(src: RemoteNode, key: int, dst: RemoteNode, dst_key: int, device: str) -> None:
    dst.wait(submit_move(src, key, dst, dst_key, device), f"copy of {src.name}[{key}] to {dst.name}/{device}", src)
