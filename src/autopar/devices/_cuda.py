"""CUDA streams and events for stream lanes (imports torch; loaded only for cuda devices).

Events are created with ``blocking=True`` (``cudaEventBlockingSync``): the
engine's watcher threads sleep in ``synchronize()`` instead of spinning a core
each. Timing is enabled only for the events the profiler asks for.

Which stream runs a copy between two GPUs. PyTorch performs a cross-device
``copy_`` on the *source* device's current stream, after a two-way barrier
with the destination device's current stream (``aten/src/ATen/native/cuda/
Copy.cu``). A lane's thread therefore makes a stream of its own current on
*every* GPU (``activate``): its lane stream on its device, and one side stream
per other GPU. A peer copy issued on ``cuda:1``'s copy lane from ``cuda:0`` then
runs on the lane's side stream of ``cuda:0`` -- not on ``cuda:0``'s legacy
default stream, which would wait for all of ``cuda:0``'s work and make the
copy wait for unrelated kernels -- and PyTorch's barrier makes the lane stream
wait for it, so the lane's event covers the copy.

Device loss. A sticky CUDA error (a device-side assert, an illegal address) makes
every later call on the device fail. ``is_fatal`` recognises one (the stream's own
``query`` reports it again); the engine then fails everything on the device and
never waits for its events again, and ``abandon`` keeps the memory whose free
would record CUDA events (``keep_on_loss``): such a free throws from a C++
destructor after a sticky error and aborts the process. autopar's own ops do not
call ``record_stream``: an op holds its inputs until its event has completed
(``_outcome.record`` drops its function only then), which is what
``record_stream`` would ensure, so their frees never record events.

Device times. ``event_time_ns`` places a timing event on the host clock through
an anchor: a timing event recorded on the idle stream when it was created and
synchronized at once, so ``anchor host time + elapsed_time(anchor, event)`` is
when the device reached ``event``.
"""

from __future__ import annotations

import ctypes
import time
import weakref
from contextlib import AbstractContextManager, ExitStack
from typing import Any

import torch


# Tensors whose free records CUDA events: pinned host buffers of asynchronous copies (PyTorch's
# caching host allocator records an event per stream that used the block) and device memory
# handed to a user's stream (record_stream). After a sticky CUDA error such a free throws from a
# destructor, and the process aborts ("terminate called ... createEvent in ~TensorImpl"); once a
# device is lost (``abandon``) they are kept for good instead. Weak until then: nothing is kept
# longer than its arrays while the device works.
_kept: weakref.WeakSet[torch.Tensor] = weakref.WeakSet()


def keep_on_loss(tensor: torch.Tensor) -> torch.Tensor:
    """Note ``tensor`` as memory whose free touches CUDA events; returns it."""
    _kept.add(tensor)
    return tensor


def bury_kept() -> None:
    """A device is lost: every such tensor is never freed, not even when the interpreter clears its
    modules at exit (a reference held in a module would be dropped then, and the free would abort):
    each gets a reference nobody owns."""
    for tensor in list(_kept):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(tensor))
    _kept.clear()


class CudaEvent:
    __slots__ = ("event",)

    def __init__(self, stream: Any, timing: bool = False) -> None:
        self.event = torch.cuda.Event(enable_timing=timing, blocking=True)  # type: ignore[no-untyped-call]
        self.event.record(stream)

    def query(self) -> bool:
        return bool(self.event.query())  # type: ignore[no-untyped-call]

    def synchronize(self) -> None:
        self.event.synchronize()


class CudaStream:
    """One torch CUDA stream owned by a lane of ``cuda:index``, with a side stream on each other GPU."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.stream = torch.cuda.Stream(device=index)  # type: ignore[no-untyped-call]
        self.peers = [
            torch.cuda.Stream(device=other)  # type: ignore[no-untyped-call]
            for other in range(torch.cuda.device_count())
            if other != index
        ]
        anchor = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        anchor.record(self.stream)
        anchor.synchronize()
        self._anchor = (time.perf_counter_ns(), anchor)

    def record_event(self, timing: bool = False) -> CudaEvent:
        return CudaEvent(self.stream, timing)

    def wait_event(self, event: Any) -> None:
        self.stream.wait_event(event.event)

    def activate(self) -> AbstractContextManager[object]:
        stack = ExitStack()
        # Setting a stream current also makes its device current: the peers go
        # first, this lane's device and stream last.
        for peer in self.peers:
            stack.enter_context(torch.cuda.stream(peer))
        stack.enter_context(torch.cuda.device(self.index))
        stack.enter_context(torch.cuda.stream(self.stream))
        return stack

    def synchronize(self) -> None:
        self.stream.synchronize()

    def event_time_ns(self, event: Any) -> int:
        host_ns, anchor = self._anchor
        return host_ns + int(anchor.elapsed_time(event.event) * 1e6)

    def close(self) -> None:
        pass  # torch frees the streams with the object

    def is_fatal(self, error: BaseException) -> bool:
        # A sticky error poisons the context: the stream's own query reports it again.
        if "CUDA error" not in str(error) and not isinstance(error, getattr(torch, "AcceleratorError", ())):
            return False
        try:
            self.stream.query()
        except Exception:
            return True
        return False

    def abandon(self) -> None:
        bury_kept()

    def __repr__(self) -> str:
        return f"<CudaStream cuda:{self.index} {self.stream.cuda_stream:#x}>"
