"""Streams and events: how stream lanes order device-side work.

A *host lane* runs an op to completion on its worker thread. A *stream lane*
only *issues* the op: its worker runs the op's function with the lane's stream
current, so the kernels it launches are queued on that stream, then records an
event. The engine orders issued work with these calls alone:

- ``stream.wait_event(event)``: work queued on ``stream`` from now on waits for
  ``event`` on the device, without blocking the host;
- ``event.synchronize()`` / ``event.query()``: the host learns that the work
  queued before the event has finished -- or, when it failed (a kernel fault;
  CUDA's sticky errors), they raise its error;
- ``stream.record_event(timing=True)`` and ``stream.event_time_ns(event)``:
  when the device reached the event, on the host's ``time.perf_counter_ns``
  clock (for the profiler's timeline of device work);
- ``stream.is_fatal(error)`` and ``stream.abandon()``: a fault that leaves
  the device unusable (CUDA's sticky errors), and what the engine does then:
  it fails everything on the device without touching it again.

Two implementations: CUDA (``_cuda.py``, torch streams and events) and a
simulated stream (``_sim.py``) that runs queued host callables on a thread of
its own, so the engine's stream logic is tested without a GPU.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol


class Event(Protocol):
    def query(self) -> bool:
        """True once the work queued before the event has finished; raises its error if it failed."""

    def synchronize(self) -> None:
        """Block the calling thread until the event has completed; raise its error if it failed."""


class Stream(Protocol):
    def record_event(self, timing: bool = False) -> Event:
        """An event that completes when the work queued so far has finished."""

    def wait_event(self, event: Event) -> None:
        """Make work queued from now on wait for ``event``; returns at once."""

    def activate(self) -> AbstractContextManager[object]:
        """Make this the current stream of the calling thread (for the op's kernels)."""

    def synchronize(self) -> None:
        """Block until every piece of work queued on the stream has finished."""

    def event_time_ns(self, event: Event) -> int:
        """When a completed ``timing`` event was reached, as ``time.perf_counter_ns()``."""

    def close(self) -> None:
        """Release what the stream holds (the simulated stream's thread); queue nothing after."""

    def is_fatal(self, error: BaseException) -> bool:
        """Whether ``error`` (raised by an op or an event of this stream) leaves the whole device
        unusable: CUDA's *sticky* errors (a device-side assert, an illegal address), after which
        every call on the device fails."""

    def abandon(self) -> None:
        """The device is lost: from now on nothing on this stream is waited for, and memory whose
        free would touch the device is kept instead (a free that records CUDA events after a
        sticky error aborts the process from a destructor)."""
