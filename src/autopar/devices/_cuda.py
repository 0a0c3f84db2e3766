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

Device times. ``event_time_ns`` places a timing event on the host clock through
an anchor: a timing event recorded on the idle stream when it was created and
synchronized at once, so ``anchor host time + elapsed_time(anchor, event)`` is
when the device reached ``event``.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager, ExitStack
from typing import Any

import torch


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

    def __repr__(self) -> str:
        return f"<CudaStream cuda:{self.index} {self.stream.cuda_stream:#x}>"
