"""Device work in flight: ordering on the device, and finishing when the device has.

An op on a stream lane (CUDA, simulated) is *issued*: its function only queues
kernels on the lane's stream, then an event is recorded after them. Its vars
are passed on at once (``op.released``), so work that depends on it is queued
without the host waiting -- but the op is *not finished* until its event
completes: it stays pending for ``waitall``, back-pressure and exit, its
writes' versions move on only then, and its failure (a kernel or event that
fails) is known only then.

While it is in flight, a var remembers it:

- ``var._writer``: the op in flight that wrote the var last;
- ``var._readers``: per lane, the last op in flight that read it since.

An op that becomes ready while ops it depends on are in flight
(``in_flight(op)``) -- the writer of what it reads or writes, the readers of
what it writes --

- on a stream lane is issued anyway: its stream first waits for their events
  (``wait_events``; its own stream keeps order by itself), and it keeps the
  writers of what it reads as its ``upstream``: when it finishes, it fails
  with the first of their failures (it computed on failed data);
- anywhere else (a host lane) *waits* until they finish (``park``): then its
  inputs' failures are known, and no kernel still reads or writes its vars.
  So does a stream op that would be skipped for a failed input, so that a skip
  is never decided while an op in flight may still fail.

Finishing is ordered the same way: an op whose event completed finishes after
its upstream has finished (``park`` again), so failures flow downstream.

A :class:`Watcher` per stream lane waits for the events of that lane's ops
in issue order (a stream completes its events in that order anyway) and
finishes each op. Lanes wait side by side: a short op on one stream never
waits behind a long kernel on another. Its loop never dies: an event that
raises (as CUDA does after a sticky error) fails the op it belongs to.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any, Protocol

from autopar.engine._op import FINISHED, Op

if TYPE_CHECKING:
    from autopar.engine._var import Failure


def in_flight(op: Op) -> list[Op]:
    """The unfinished ops on the device that ``op`` must come after."""
    deps: list[Op] = []
    for var in op.reads:
        writer = var._writer
        if writer is not None:
            deps.append(writer)
    for var in op.writes:
        writer = var._writer
        if writer is not None:
            deps.append(writer)
        readers = var._readers
        if readers:
            deps.extend(readers.values())
    return deps


def prepare_issue(op: Op, deps: list[Op]) -> None:
    """``op`` goes on a stream lane after ``deps`` (in flight): what its stream waits for,
    and whose failures it inherits."""
    own = op._lane
    op.wait_events = [dep.event for dep in deps if dep._lane is not own]
    upstream = [var._writer for var in op.reads if var._writer is not None]
    upstream.extend(var._writer for var in op.rw if var._writer is not None)
    op.upstream = upstream or None


def park(op: Op, deps: list[Op]) -> None:
    """``op`` waits until every op in ``deps`` has finished."""
    waiting = 0
    for dep in deps:
        if dep.state not in FINISHED:
            if dep.dependents is None:
                dep.dependents = [op]
            else:
                dep.dependents.append(op)
            waiting += 1
    op.blockers = waiting


def unfinished(ops: list[Op] | None) -> list[Op]:
    return [dep for dep in ops if dep.state not in FINISHED] if ops else []


def released_dependents(op: Op) -> list[Op]:
    """``op`` finished: the ops that waited for it and wait for nothing else now."""
    dependents = op.dependents
    if not dependents:
        return []
    op.dependents = None
    free = []
    for dep in dependents:
        dep.blockers -= 1
        if dep.blockers == 0:
            free.append(dep)
    return free


def note_issued(op: Op) -> None:
    """``op`` was issued: vars remember it until it finishes."""
    lane = op._lane
    for var in op.reads:
        readers = var._readers
        if readers is None:
            var._readers = {lane: op}
        else:
            readers[lane] = op
    for var in op.writes:
        var._writer = op
        var._readers = None


def note_finished(op: Op) -> None:
    """``op``'s device work finished: vars forget it (its writes: ``_outcome.record``)."""
    lane = op._lane
    for var in op.reads:
        readers = var._readers
        if readers is not None and readers.get(lane) is op:
            del readers[lane]
            if not readers:
                var._readers = None


def device_times(op: Op, stream: Any) -> None:
    """While profiling: the op's start and end are when its device work ran."""
    if op.start_event is not None and op.event is not None:
        try:
            op.t_start = stream.event_time_ns(op.start_event)
            op.t_end = stream.event_time_ns(op.event)
        except Exception:  # the times are for the profile only; the op's outcome stands
            pass
    op.start_event = None


class Finisher(Protocol):
    def device_done(self, op: Op, error: BaseException | Failure | None) -> None: ...

    def internal_fault(self, op: Op, error: BaseException) -> None: ...


class Watcher:
    """One thread per stream lane: waits for its ops' events in order, then finishes each."""

    def __init__(self, engine: Finisher, name: str) -> None:
        self.engine = engine
        self.lost: Failure | None = None  # set when the device is lost (the engine's _check_lost_locked)
        self.queue: queue.SimpleQueue[Op | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._work, name=f"autopar-events-{name}", daemon=True)
        self.thread.start()

    def add(self, op: Op) -> None:
        self.queue.put(op)

    def stop(self) -> None:
        self.queue.put(None)

    def _work(self) -> None:
        get = self.queue.get
        while True:
            op = get()
            if op is None:
                return
            error: BaseException | Failure | None = self.lost  # a lost device: its events are not touched
            if error is None:
                try:
                    op.event.synchronize()
                except BaseException as fault:  # a failed kernel or event fails its op
                    error = fault
            try:
                self.engine.device_done(op, error)
            except BaseException as bug:  # never die: fail the op, say so, and keep watching
                self.engine.internal_fault(op, bug)
            op = None  # noqa: F841 - hold nothing while waiting for the next event
