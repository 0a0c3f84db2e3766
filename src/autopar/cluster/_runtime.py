"""The node runtime: one long-lived Ray actor per node, owning that node's devices.

This module runs inside the actor's process, on the node. It imports no Ray:
the driver wraps :class:`NodeRuntime` with ``ray.remote`` (``_node.py``), so
the class is importable, and testable, without a cluster.

Design note
-----------
The runtime holds the node's tensors by *key* (an int the driver picks) in
*slots*: a slot is one ``engine.Var`` of the node's own autopar engine and the
tensor it guards. Every call is coarse -- one kernel, one upload, one read --
because a Ray call costs about a millisecond:

| call                                   | what it does on the node                                   |
|----------------------------------------|------------------------------------------------------------|
| ``write(key, device, data)``           | store host data (a NumPy array) on ``device``, copy lane   |
| ``run(kernel, inputs, outputs, ...)``  | one named kernel on keyed inputs, into keyed outputs       |
| ``read(key)``                          | the value as a NumPy array (to the driver or another node) |
| ``free(keys)``                         | drop tensors                                               |
| ``info()`` / ``keys()``                | what the runtime is; which keys it holds                   |

A move between nodes is ``dst.write(key, device, src.read(key))`` with the
driver holding only the ``ObjectRef``: the data goes from the source node's
object store to the destination's, never through the driver.

Each call pushes one op onto the node's engine -- on the device's compute
lane, or its copy lane for ``write``/``read`` -- and returns when the op has
finished (``engine.wait_for_var`` on what it wrote), so the Ray call's
completion *is* the op's completion, and an error raised by the kernel comes
back to the driver with its own type. The actor is threaded
(``max_concurrency``): calls in flight at once run side by side on the
node's lanes (a copy beside a product, a CPU op beside a GPU op), and the
node engine still orders any two calls on one key by their arrival. The
driver's engine is what orders the program (a call is sent once the ops it
depends on have finished), so arrival order never decides a result. An
output key that the call does not also read gets a fresh slot (renaming, as
a CPU renames registers): ops still reading the old tensor keep it, and a
failure stored on the old slot is not inherited by the new value.

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
import socket
import threading
import warnings
from typing import Any

from autopar.cluster._kernels import UserFunction, lookup
from autopar.cluster._records import RuntimeInfo

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


class _Slot:
    __slots__ = ("var", "tensor")

    def __init__(self, var: Any) -> None:
        self.var = var
        self.tensor: Any = None


class NodeRuntime:
    """The autopar runtime of one node (the body of its Ray actor)."""

    def __init__(self, node: str, cpus: int, core_offset: int) -> None:
        self._node = node
        allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
        self._cores = pin_process(pick_cores(allowed, core_offset, cpus))
        import torch

        from autopar import devices, engine

        torch.set_num_threads(len(self._cores))
        engine.set_engine("threaded")
        engine.set_cpu_devices(1)
        self._engine = engine
        self._devices = [devices.cpu(0)] + [devices.gpu(i) for i in range(devices.num_gpus())]
        self._slots: dict[Key, _Slot] = {}
        self._lock = threading.Lock()

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

    def write(self, key: Key, device: str, data: Any) -> None:
        """Store ``data`` (a NumPy array or tensor) under ``key`` on ``device``."""
        import numpy as np
        import torch

        dev = self._device(device, "write")
        slot = self._fresh_slot(key)

        def upload() -> None:
            with warnings.catch_warnings():
                # Data from the object store is read-only; it is copied below, never written.
                warnings.simplefilter("ignore", UserWarning)
                host = torch.from_numpy(data) if isinstance(data, np.ndarray) else data
            slot.tensor = host.to(dev.torch_device, copy=True).contiguous()

        lane = "copy_h2d" if dev.kind == "cuda" else "copy"
        self._push_and_wait(upload, (), (slot,), dev, f"write[{key}]", lane)

    def run(
        self,
        kernel: str | UserFunction,
        inputs: tuple[Key, ...],
        outputs: tuple[Key, ...],
        params: dict[str, Any],
        device: str,
        lane: str = "compute",
    ) -> None:
        """Run one kernel on the tensors under ``inputs``; store its results under ``outputs``."""
        import torch

        spec = lookup(kernel)
        if spec.inplace and (not inputs or tuple(outputs) != tuple(inputs[:1])):
            raise ValueError(
                f"kernel {spec.name!r} updates its first input in place: its outputs must be "
                f"({inputs[0] if inputs else 'an input'},), not {outputs}"
            )
        dev = self._device(device, spec.name)
        in_slots = tuple(self._slot(k) for k in inputs)
        out_slots = tuple(self._slot(k) if k in inputs else self._fresh_slot(k) for k in outputs)
        extra = {"device": dev.torch_device} if spec.creates else {}

        def compute() -> None:
            result = spec.fn(*(s.tensor for s in in_slots), **params, **extra)
            if spec.inplace:
                return
            results = result if isinstance(result, tuple) else (result,)
            if not all(isinstance(t, torch.Tensor) for t in results):
                raise TypeError(
                    f"kernel {spec.name!r} returned {type(result).__name__}; expected a torch tensor, or a tuple "
                    f"of one per output key"
                )
            if len(results) != len(out_slots):
                raise ValueError(
                    f"kernel {spec.name!r} returned {len(results)} tensor(s) for {len(out_slots)} output key(s)"
                )
            for slot, tensor in zip(out_slots, results):
                slot.tensor = tensor if tensor.is_contiguous() else tensor.contiguous()

        self._push_and_wait(compute, in_slots, out_slots, dev, spec.name, lane)

    def read(self, key: Key) -> Any:
        """The value under ``key``: a NumPy array (a CPU tensor where NumPy has no such dtype)."""
        import torch

        slot = self._slot(key)
        self._engine.wait_for_var(slot.var)
        tensor = slot.tensor.detach()
        if tensor.is_cuda:
            tensor = tensor.cpu()
        if tensor.dtype in (torch.bfloat16,):
            return tensor.clone()
        return tensor.numpy()

    def free(self, keys: tuple[Key, ...]) -> None:
        with self._lock:
            for key in keys:
                self._slots.pop(key, None)

    def keys(self) -> list[Key]:
        with self._lock:
            return sorted(self._slots)

    # -- helpers -------------------------------------------------------------------------

    def _device(self, name: str, call: str) -> Any:
        from autopar.devices import Device
        from autopar.errors import DeviceError

        try:
            dev = Device(name)
        except DeviceError:
            dev = None
        if dev is None or dev not in self._devices:
            raise DeviceError(
                f"{call} on {self._node}/{name}: no such device; node {self._node} has "
                f"{', '.join(f'{self._node}/{d}' for d in self._devices)}"
            )
        return dev

    def _slot(self, key: Key) -> _Slot:
        with self._lock:
            slot = self._slots.get(key)
        if slot is None:
            raise KeyError(f"node {self._node} holds no data under key {key}")
        return slot

    def _fresh_slot(self, key: Key) -> _Slot:
        """A new slot for ``key``, replacing any old one: the output of a call that does not read it.

        Renaming instead of overwriting: ops still reading the old tensor keep
        it, the new value waits for none of them, and a failure stored on the
        old slot is not inherited.
        """
        slot = _Slot(self._engine.Var(f"{self._node}[{key}]"))
        with self._lock:
            self._slots[key] = slot
        return slot

    def _push_and_wait(
        self, fn: Any, reads: tuple[_Slot, ...], writes: tuple[_Slot, ...], device: Any, name: str, lane: str
    ) -> None:
        engine = self._engine
        engine.push(fn, reads=[s.var for s in reads], writes=[s.var for s in writes], device=device, name=name,
                    lane=lane)
        for slot in writes:
            engine.wait_for_var(slot.var)
