"""A simulated stream: device-side work as host callables run in order on a thread.

Used to test the engine's stream-lane logic (issue, record, wait on events,
device faults, device times) without a GPU. Inside an op running on a
simulated stream lane, the op queues its "kernels" with :func:`launch`, the
way a CUDA op queues kernels by calling torch; the op function itself returns
at once.

A kernel that raises is a *device fault*: like a CUDA error, it is reported by
the next event recorded on the stream, whose ``synchronize()`` and ``query()``
raise it. A kernel that raises :class:`DeviceLost` is a *sticky* fault: the
simulated device is lost, and every later event of its streams raises it. A kernel that never returns is a stuck device: the events after it
never complete. Each event records when the stream reached it
(``time.perf_counter_ns()``), so device times are observable.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

_current = threading.local()
_lost: dict[str, BaseException] = {}  # simulated device -> its sticky fault


class DeviceLost(RuntimeError):
    """A simulated sticky fault (CUDA's device-side assert): raised by a kernel, it leaves the whole
    simulated device unusable -- every later event on any of its streams raises it again."""


class SimEvent:
    __slots__ = ("_done", "error", "time_ns")

    def __init__(self) -> None:
        self._done = threading.Event()
        self.error: BaseException | None = None
        self.time_ns = 0

    def _reach(self, error: BaseException | None) -> None:
        self.error = error
        self.time_ns = time.perf_counter_ns()
        self._done.set()

    def query(self) -> bool:
        if not self._done.is_set():
            return False
        if self.error is not None:
            raise self.error
        return True

    def synchronize(self) -> None:
        self._done.wait()
        if self.error is not None:
            raise self.error


class SimStream:
    """Runs queued callables one after another on a daemon thread, until closed."""

    def __init__(self, name: str = "sim") -> None:
        self.name = name
        self._queue: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self._fault: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"autopar-simstream-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                item()
            except BaseException as exc:  # a device fault: the next event reports it
                if self._fault is None:
                    self._fault = exc
                if isinstance(exc, DeviceLost):
                    _lost.setdefault(self.device, exc)
            item = None

    def launch(self, kernel: Callable[[], Any]) -> None:
        self._queue.put(kernel)

    @property
    def device(self) -> str:
        return self.name.split("/")[0]

    def record_event(self, timing: bool = False) -> SimEvent:
        event = SimEvent()

        def reach() -> None:
            fault, self._fault = self._fault, None
            event._reach(fault if fault is not None else _lost.get(self.device))

        self._queue.put(reach)
        return event

    def wait_event(self, event: Any) -> None:
        done = event._done if isinstance(event, SimEvent) else None
        self._queue.put(done.wait if done is not None else event.synchronize)

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

    def event_time_ns(self, event: Any) -> int:
        return int(event.time_ns)

    def close(self) -> None:
        self._queue.put(None)

    def is_fatal(self, error: BaseException) -> bool:
        return self.device in _lost

    def abandon(self) -> None:
        self.abandoned = True

    abandoned = False

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
