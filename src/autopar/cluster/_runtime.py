"""The node runtime: one long-lived Ray actor per node, owning that node's devices.

This module runs inside the actor's process, on the node. It imports no Ray:
the driver wraps :class:`NodeRuntime` with ``ray.remote`` (``_node.py``), so
the class is importable, and testable, without a cluster.

Design note
-----------
The runtime holds the node's arrays by *key* (an int the driver picks), each
an ordinary autopar array on one of the node's devices, made and used by the
node's own copy of autopar: its op table, its one dispatcher, its engine with
the node's lanes. Every call is coarse -- one op, one upload, one read --
because a Ray call costs about a millisecond. The calls and what they mean
are the array layer's (``_remote.py``: ``execute``); this actor is the
transport's end: it checks that a call names only autopar's ops
(``_kernels.check``), frees the keys the driver no longer uses (sent along
with the next call), and runs the call.

A call returns when its op has finished on the node (it waits for what the
op wrote), so the Ray call's answer *is* the op's completion, and an error
raised by the op comes back to the driver with its own type. The actor is
threaded (``max_concurrency``): calls in flight at once run side by side on
the node's lanes (an upload beside a product, a CPU op beside a GPU op); the
driver's engine is what orders the program (a call is sent once the ops it
depends on have finished), so arrival order never decides a result. A small
op runs on the Ray thread that received it when its lane is idle (the
dispatcher's inline rule); a large one on the lane's worker.

A move between nodes is ``dst.apply(("write", ...), src.apply(("read", ...)))``
with the driver holding only the ``ObjectRef``: the data goes from the source
node's object store to the destination's, never through the driver.

Cores. Ray gives a node ``cpus`` CPUs but does not pin processes; nodes of a
local test cluster share one machine. The runtime pins its process to
``cpus`` of the machine's cores, starting at an offset the driver gives each
node on a shared host (``_records.core_offsets``), so the engine's CPU device
-- whose intra-op threads are its share of the cores the process may use --
runs exactly ``cpus`` threads, and two nodes on one machine do not
oversubscribe each other.
"""

from __future__ import annotations

import os
import pickle
import socket
from typing import Any

from autopar.cluster._kernels import check
from autopar.cluster._records import RuntimeInfo
from autopar.errors import DeviceError

Key = int


def pick_cores(allowed: list[int], offset: int, cpus: int) -> list[int]:
    """``cpus`` of the ``allowed`` cores, starting at ``offset`` and wrapping around."""
    width = max(1, min(cpus, len(allowed)))
    return sorted({allowed[(offset + j) % len(allowed)] for j in range(width)})


def pin_process(cores: list[int]) -> list[int]:
    """Pin every thread of this process (and so the threads they start) to ``cores``.

    Returns the cores the calling thread may use afterwards (all of them
    where the OS cannot pin: then the CPU device uses every core).
    """
    if not hasattr(os, "sched_setaffinity"):  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except (ProcessLookupError, PermissionError, OSError):
            pass  # a thread that ended meanwhile, or one we may not touch
    return sorted(os.sched_getaffinity(0))


class NodeRuntime:
    """The autopar runtime of one node (the body of its Ray actor)."""

    def __init__(self, node: str, cpus: int, core_offset: int) -> None:
        self._node = node
        allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
        self._cores = pin_process(pick_cores(allowed, core_offset, cpus))
        import torch

        from autopar import devices, engine
        from autopar.cluster import _remote

        torch.set_num_threads(len(self._cores))
        engine.set_engine("threaded")
        engine.set_cpu_devices(1)
        self._start = _remote.start
        self._devices = [devices.cpu(0)] + [devices.gpu(i) for i in range(devices.num_gpus())]
        self._slots: dict[Key, Any] = {}

    # -- calls ---------------------------------------------------------------------------

    def info(self) -> RuntimeInfo:
        import torch

        import autopar
        from autopar.devices import cpu_threads

        return RuntimeInfo(
            node=self._node,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            cores=tuple(self._cores),
            torch_threads=cpu_threads(0),
            devices=tuple(str(d) for d in self._devices),
            torch_version=torch.__version__,
            autopar_version=autopar.__version__,
        )

    def apply(self, call: tuple[Any, ...], data: Any = None, garbage: tuple[Key, ...] = ()) -> Any:
        """Run one call (``_remote.py``) after freeing ``garbage``; return its answer."""
        if garbage:
            self.free(garbage)
        check(call)
        try:
            return self._start(call, self._slots, data)()
        except Exception as error:  # noqa: BLE001 - sent back as the op's own error
            raise self._here(error) from None

    def apply_many(self, calls: list[tuple[Any, ...]], garbage: tuple[Key, ...] = ()) -> list[tuple[Any, Any]]:
        """Run calls the driver sent together: start them all, then wait for each.

        Returns ``(error, answer)`` per call, in order (``error`` None when it
        succeeded): one call's failure is its own. The driver sends calls
        together only when all were ready at once, so none waits for another.
        """
        if garbage:
            self.free(garbage)
        waits: list[Any] = []
        for call in calls:
            try:
                check(call)
                waits.append(self._start(call, self._slots))
            except Exception as error:  # noqa: BLE001 - this call's failure, sent back with it
                waits.append(error)
        out: list[tuple[Any, Any]] = []
        for wait in waits:
            if isinstance(wait, Exception):
                out.append((_sendable(self._here(wait)), None))
                continue
            try:
                out.append((None, wait()))
            except Exception as error:  # noqa: BLE001
                out.append((_sendable(self._here(error)), None))
        return out

    def _here(self, error: Exception) -> Exception:
        """The error as the driver should see it.

        A failed op's error as the op raised it (the node's engine re-raises it
        naming the op on ``cpu:0``; the driver's engine names it on
        ``node1/cpu:0``); a DeviceError naming the node (``cuda:0 does not
        exist`` means there); others as they are.
        """
        cause = error.__cause__
        if isinstance(cause, Exception) and type(cause) is type(error) and "[in autopar operation" in str(error):
            error = cause
        if isinstance(error, DeviceError):
            return DeviceError(f"on node {self._node} (devices: {', '.join(str(d) for d in self._devices)}): {error}")
        return error

    def free(self, keys: tuple[Key, ...]) -> None:
        slots = self._slots
        for key in keys:
            slots.pop(key, None)

    def keys(self) -> list[Key]:
        return sorted(self._slots)


def _sendable(error: Exception) -> Exception:
    """``error`` if it pickles (to go back to the driver), else a RuntimeError with its type and message."""
    try:
        pickle.dumps(error)
    except Exception:  # noqa: BLE001 - an exception class that cannot be rebuilt
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error
