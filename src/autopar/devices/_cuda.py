"""CUDA streams and events for stream lanes (imports torch; loaded only for cuda devices)."""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack
from typing import Any

import torch


class CudaEvent:
    __slots__ = ("event",)

    def __init__(self, stream: Any) -> None:
        self.event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        self.event.record(stream)

    def query(self) -> bool:
        return bool(self.event.query())  # type: ignore[no-untyped-call]

    def synchronize(self) -> None:
        self.event.synchronize()


class CudaStream:
    """One torch CUDA stream owned by a lane of ``cuda:index``."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.stream = torch.cuda.Stream(device=index)  # type: ignore[no-untyped-call]

    def record_event(self) -> CudaEvent:
        return CudaEvent(self.stream)

    def wait_event(self, event: Any) -> None:
        self.stream.wait_event(event.event)

    def activate(self) -> AbstractContextManager[object]:
        stack = ExitStack()
        stack.enter_context(torch.cuda.device(self.index))
        stack.enter_context(torch.cuda.stream(self.stream))
        return stack

    def synchronize(self) -> None:
        self.stream.synchronize()

    def __repr__(self) -> str:
        return f"<CudaStream cuda:{self.index} {self.stream.cuda_stream:#x}>"
