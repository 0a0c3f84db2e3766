"""A simulated stream: device-side work as host callables run in order on a thread.

Used to test the engine's stream-lane logic (issue, record, wait on events)
without a GPU. Inside an op running on a simulated stream lane, the op queues
its "kernels" with :func:`launch`, the way a CUDA op queues kernels by calling
torch; the op function itself returns at once.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

_current = threading.local()


class SimEvent:
    __slots__ = ("_done",)

    def __init__(self) -> None:
        self._done = threading.Event()

    def query(self) -> bool:
        return self._done.is_set()

    def synchronize(self) -> None:
        self._done.wait()


class SimStream:
    """Runs queued callables one after another on a daemon thread."""

    def __init__(self, name: str = "sim") -> None:
        self.name = name
        self._queue: queue.SimpleQueue[Callable[[], Any]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"autopar-simstream-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                item()
            except BaseException as exc:  # a simulated kernel fault is recorded, not fatal
                self.last_fault = exc

    def launch(self, kernel: Callable[[], Any]) -> None:
        self._queue.put(kernel)

    def record_event(self) -> SimEvent:
        event = SimEvent()
        self._queue.put(event._done.set)
        return event

    def wait_event(self, event: Any) -> None:
        self._queue.put(event.synchronize)

    @contextlib.contextmanager
    def activate(self) -> Iterator[None]:
        previous = getattr(_current, "stream", None)
        _current.stream = self
        try:
            yield
        finally:
            _current.stream = previous

    def synchronize(self) -> None:
        self.record_event().synchronize()

    def __repr__(self) -> str:
        return f"<SimStream {self.name}>"


def current_stream() -> SimStream:
    stream: SimStream | None = getattr(_current, "stream", None)
    if stream is None:
        raise RuntimeError("no simulated stream is current: launch() works inside an op on a sim lane")
    return stream


def launch(kernel: Callable[[], Any]) -> None:
    """Queue ``kernel`` on the current simulated stream (inside an op on a sim lane)."""
    current_stream().launch(kernel)
