"""The threaded policy: per-device lanes, each with its own worker thread.

Design note
-----------
*Tracking* (``_tracker.py``) decides when an op may run; this module decides
*where* and *how*. One engine lock guards all of it: the var queues, the lane
heaps and the counters. Python runs one bytecode at a time anyway, so a lock per
var would only add acquisitions; one per op event (push, finish) is the floor.

Lanes. Every device has named lanes (``devices.lane_specs``): ``compute`` and
copy lanes. A lane is a heap of ready ops ordered by ``(-priority, seq)`` --
higher priority first, push order among equals -- and one worker thread. A
worker finishes its op and takes the next under a single acquisition of the
lock, and only sleeps when its heap is empty, so a burst of ready ops costs one
wake-up, not one per op.

Host lanes run an op to completion. CPU compute workers set torch's intra-op
threads to their device's share of the cores the first time they run an op
after torch is imported, so two CPU devices on two cores run side by side
instead of oversubscribing each other.

Stream lanes (CUDA, simulated) only *issue* an op: the worker runs its function
with the lane's stream current, then records an event, and the op counts as
finished for the tracker at once, so the host never blocks between device ops.
What the device has not yet done is carried by events on the vars:

- ``var._write_event``: ``(lane, event)`` of the last write issued on a stream;
- ``var._read_events``: per stream lane, the event of the last read since then.

When an op becomes ready, the events it must wait for are those of its reads'
writers and, for its writes, of the writer and the readers before it. A stream
op hands them to ``stream.wait_event`` (skipping its own stream, which is
ordered already); a host op whose events are not complete goes to the *event
watcher*, a thread that waits on them and then queues the op on its lane -- so
no lane worker ever blocks on the device. ``wait_for_var`` synchronizes the
var's last write event; ``waitall`` and ``synchronize`` synchronize the streams.

Back-pressure. ``push`` blocks while ``max_pending`` ops are pushed and not
finished, and resumes when the count falls to 90% of the bound (so a producer
wakes once per batch, not once per op). Pushes made inside an op never block:
the op may be what the others wait for.

Exit. ``shutdown`` (registered with ``atexit``) waits up to the exit timeout
for pending work, then cancels what is left with a message on stderr; workers
are daemon threads, so the interpreter always exits.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from autopar.devices import Device, LaneSpec, lane_specs
from autopar.engine import _base, _hooks, _tracker
from autopar.engine._op import Op, OpState
from autopar.engine._var import Failure, Var
from autopar.errors import EngineShutdownError

_RUNNING = OpState.RUNNING
_READY = OpState.READY
_DONE = OpState.DONE


class Lane:
    """One lane of one device: a priority heap of ready ops and a worker thread."""

    def __init__(self, engine: ThreadedEngine, spec: LaneSpec) -> None:
        self.engine = engine
        self.spec = spec
        self.heap: list[tuple[int, int, Op]] = []
        # The doorbell: a lock held while nobody rings. The worker, with nothing
        # to do, sets `waiting` and blocks on it; whoever queues work (under the
        # engine lock) sees `waiting` and releases it once. Cheaper than a
        # Condition, which allocates a lock per wait.
        self._doorbell = threading.Lock()
        self._doorbell.acquire()
        self.waiting = False
        self.stopping = False
        self.pending = 0  # ops pushed to this lane and not finished
        self.running: Op | None = None
        self.stream = spec.make_stream() if spec.make_stream is not None else None
        self._threads_set = False
        self.thread = threading.Thread(target=self._work, name=f"autopar-{spec}", daemon=True)
        self.thread.start()

    def __repr__(self) -> str:
        return f"<Lane {self.spec} queued={len(self.heap)} pending={self.pending}>"

    def ring(self) -> None:
        """Wake the worker if it sleeps. Call with the engine lock held."""
        if self.waiting:
            self.waiting = False
            self._doorbell.release()

    def _configure_torch_threads(self) -> None:
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(self.spec.threads)
            self._threads_set = True

    def _work(self) -> None:
        if self.stream is None:
            self._serve()
            return
        # This thread issues onto this stream for good. The activation is entered
        # and left here, on this thread: left to the garbage collector, a
        # generator-based one would be closed on whatever thread collects it and
        # reset *that* thread's current stream.
        with self.stream.activate():
            self._serve()

    def _serve(self) -> None:
        engine = self.engine
        lock = engine._lock
        heap = self.heap
        doorbell = self._doorbell
        done: Op | None = None
        while True:
            lock.acquire()
            try:
                if done is not None:
                    self.running = None
                    engine._finish_locked(done)
                    done = None
                while not heap or self.running is not None:
                    if self.stopping and not heap:
                        return
                    self.waiting = True
                    lock.release()
                    try:
                        doorbell.acquire()
                    finally:
                        lock.acquire()
                op = heapq.heappop(heap)[2]
                op.state = _RUNNING
                self.running = op
            finally:
                lock.release()
            if not self._threads_set:
                self._configure_torch_threads()
            self._run(op)
            done = op

    def _run(self, op: Op) -> None:
        listeners = _hooks.listeners
        if listeners:
            op.t_start = time.perf_counter_ns()
            for listener in listeners:
                listener.op_started(op)
        local = _base._local
        local.op = op
        stream = self.stream
        try:
            if stream is not None and op.wait_events:
                for event in op.wait_events:
                    stream.wait_event(event)
            op.fn()
        except BaseException as error:  # a worker has no caller to propagate to
            _base.fail(op, error)
        else:
            op.state = _DONE
        finally:
            local.op = None
            if stream is not None:
                op.event = (self, stream.record_event())
        if listeners:
            op.t_end = time.perf_counter_ns()


class _TinyOp:
    """What ``_tracker.release`` needs of an op run by ``push_tiny``."""

    __slots__ = ("reads", "writes")

    def __init__(self, reads: tuple[Var, ...], writes: tuple[Var, ...]) -> None:
        self.reads = reads
        self.writes = writes


class _EventWatcher:
    """Waits on device events for host ops, then queues each op on its lane."""

    def __init__(self, engine: ThreadedEngine) -> None:
        self.engine = engine
        self.queue: queue.SimpleQueue[tuple[Op, list[Any]] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._work, name="autopar-event-watcher", daemon=True)
        self.thread.start()

    def add(self, op: Op, events: list[Any]) -> None:
        self.queue.put((op, events))

    def stop(self) -> None:
        self.queue.put(None)

    def _work(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            op, events = item
            for event in events:
                event.synchronize()
            with self.engine._lock:
                self.engine._enqueue_locked(op)


class ThreadedEngine:
    name = "threaded"

    def __init__(self, max_pending: int) -> None:
        # Reentrant: a tiny kernel runs under it, and a finalizer run during the
        # kernel may push (see push_tiny).
        self._lock = threading.RLock()
        self._progress = threading.Condition(self._lock)  # waitall, synchronize, wait_for_var
        self._space = threading.Condition(self._lock)  # back-pressure
        self._lanes: dict[Device, dict[str, Lane]] = {}
        self._seq = itertools.count()
        self._pending = 0
        self._idle_waiters = 0
        self._var_waiters = 0
        self._space_waiters = 0
        self._max_pending = max_pending
        self._low_water = max(0, max_pending - max(1, max_pending // 10))
        self._streams_used = False
        self._watcher: _EventWatcher | None = None
        self._closed = False

    # -- pushing ---------------------------------------------------------------

    def push(
        self,
        fn: Callable[[], Any],
        reads: Iterable[Var] = (),
        writes: Iterable[Var] = (),
        device: Any = None,
        priority: int = 0,
        name: str | None = None,
        lane: str = "compute",
        inline: bool = False,
    ) -> Op:
        """See ``engine.push``. ``inline=True`` (array ops known to be tiny, never
        arbitrary user functions) lets the op run on the calling thread when it
        is ready at once and its lane has nothing queued or running."""
        reads_t, writes_t, dev = _base.normalize(fn, reads, writes, device, priority)
        return self.push_checked(fn, reads_t, writes_t, dev, priority, name, lane, inline)

    def push_checked(
        self,
        fn: Callable[[], Any],
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        device: Device,
        priority: int,
        name: str | None,
        lane: str,
        inline: bool,
    ) -> Op:
        """``push`` for callers that pass what ``normalize`` returns (the array layer)."""
        lanes = self._lanes.get(device)
        lane_obj = lanes.get(lane) if lanes is not None else None
        if lane_obj is None:
            lane_obj = self._make_lane(device, lane)
        op = Op(fn, reads, writes, device, lane, priority, name, next(self._seq))
        op._lane = lane_obj
        listeners = _hooks.listeners
        if listeners:
            op.t_push = time.perf_counter_ns()
            for listener in listeners:
                listener.op_pushed(op)
        run_here = False
        with self._lock:
            if self._pending >= self._max_pending and _base.current_op() is None:
                self._wait_for_space_locked()
            self._pending += 1
            lane_obj.pending += 1
            if _tracker.append(op):
                if (
                    inline
                    and not lane_obj.heap
                    and lane_obj.running is None
                    and lane_obj.stream is None
                    and not (_base.failures_seen and _base.first_failure(op))
                    and not (self._streams_used and self._device_events(op))
                    and _base.current_op() is None
                ):
                    op.state = _RUNNING
                    lane_obj.running = op
                    run_here = True
                elif _base.failures_seen or self._streams_used:
                    self._schedule_locked([op])
                else:  # the common case, inlined: nothing failed, no device events to wait for
                    op.state = _READY
                    heapq.heappush(lane_obj.heap, (-priority, op.seq, op))
                    if lane_obj.waiting:
                        lane_obj.ring()
        if run_here:
            self._run_inline(op, lane_obj)
        return op

    def push_tiny(
        self,
        fn: Callable[[], Any],
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        device: Device,
        name: str | None,
        lane: str,
    ) -> None:
        """Run a tiny trusted kernel (an array op) at once if nothing orders it later.

        When every var would grant it at once, nothing has failed, no device
        events are involved and its lane is idle, the kernel runs right here,
        under the engine lock, with no op record: versions move on as if it had
        been pushed and finished. Otherwise it is pushed as usual. Not for user
        functions (they must stay asynchronous, and may call back into autopar).
        """
        lanes = self._lanes.get(device)
        lane_obj = lanes.get(lane) if lanes is not None else None
        if lane_obj is not None and not _hooks.listeners and not self._streams_used and not _base.failures_seen:
            with self._lock:
                if not lane_obj.heap and lane_obj.running is None and lane_obj.stream is None:
                    for var in reads:
                        if var._writing or var._queue:
                            break
                    else:
                        for var in writes:
                            if var._writing or var._reading or var._queue:
                                break
                        else:
                            # Granted, as _tracker.append would: if the kernel re-enters
                            # (a finalizer that pushes), later ops queue behind it.
                            for var in reads:
                                var._reading += 1
                            for var in writes:
                                var._writing = True
                                var._writes_pushed += 1
                            record = _TinyOp(reads, writes)
                            try:
                                fn()
                            except Exception as error:
                                _base.fail(Op(fn, reads, writes, device, lane, 0, name, next(self._seq)), error)
                            finally:
                                ready: list[Op] = []
                                _tracker.release(record, ready)  # type: ignore[arg-type]
                                if ready:
                                    self._schedule_locked(ready)
                            return
        self.push_checked(fn, reads, writes, device, 0, name, lane, True)

    def _run_inline(self, op: Op, lane: Lane) -> None:
        """Run a ready tiny op on the calling thread, holding its lane."""
        interrupted: BaseException | None = None
        if _hooks.listeners:
            lane._run(op)
        else:
            local = _base._local
            local.op = op
            try:
                op.fn()
            except Exception as error:
                _base.fail(op, error)
            except BaseException as error:  # Ctrl-C mid-kernel: finish the op's bookkeeping, then re-raise
                _base.fail(op, error)
                interrupted = error
            else:
                op.state = _DONE
            finally:
                local.op = None
        with self._lock:
            lane.running = None
            self._finish_locked(op)
            if lane.heap:
                lane.ring()
        if interrupted is not None:
            raise interrupted

    def _wait_for_space_locked(self) -> None:
        self._space_waiters += 1
        try:
            while self._pending >= self._max_pending:
                self._space.wait()
        finally:
            self._space_waiters -= 1

    def _make_lane(self, device: Device, name: str) -> Lane:
        specs = lane_specs(device)
        if name not in specs:
            raise ValueError(f"push: device {device} has no lane {name!r}; its lanes are {', '.join(specs)}")
        with self._lock:
            lanes = self._lanes.setdefault(device, {})
            lane = lanes.get(name)
            if lane is None:
                lane = lanes[name] = Lane(self, specs[name])
                if lane.stream is not None:
                    self._streams_used = True
                    if self._watcher is None:
                        self._watcher = _EventWatcher(self)
            return lane

    # -- scheduling (all with the lock held) -----------------------------------

    def _schedule_locked(self, ready: list[Op]) -> None:
        """Send ready ops to their lanes; skipped ops finish here and may ready more."""
        i = 0
        while i < len(ready):
            op = ready[i]
            i += 1
            failure = _base.first_failure(op) if _base.failures_seen else None
            if failure is not None:
                _base.skip(op, failure)
                self._release_locked(op, ready)
                if _hooks.listeners:
                    self._notify_finished(op)
                continue
            if self._streams_used:
                events = self._device_events(op)
                if events:
                    if op._lane.stream is not None:
                        own = op._lane
                        op.wait_events = [event for lane, event in events if lane is not own]
                    else:
                        unfinished = [event for _, event in events if not event.query()]
                        if unfinished:
                            assert self._watcher is not None
                            self._watcher.add(op, unfinished)
                            continue
            self._enqueue_locked(op)

    def _enqueue_locked(self, op: Op) -> None:
        lane = op._lane
        op.state = _READY
        heapq.heappush(lane.heap, (-op.priority, op.seq, op))
        if lane.waiting:
            lane.ring()

    @staticmethod
    def _device_events(op: Op) -> list[tuple[Any, Any]]:
        events: list[tuple[Any, Any]] = []
        for var in op.reads:
            if var._write_event is not None:
                events.append(var._write_event)
        for var in op.writes:
            if var._write_event is not None:
                events.append(var._write_event)
            if var._read_events:
                events.extend(var._read_events.items())
        return events

    def _finish_locked(self, op: Op) -> None:
        ready: list[Op] = []
        self._release_locked(op, ready)
        if ready:
            self._schedule_locked(ready)
        if _hooks.listeners:
            self._notify_finished(op)

    @staticmethod
    def _notify_finished(op: Op) -> None:
        if not op.t_end:
            op.t_end = time.perf_counter_ns()
        for listener in _hooks.listeners:
            listener.op_finished(op)

    def _release_locked(self, op: Op, ready: list[Op]) -> None:
        if self._streams_used:
            recorded = op.event
            if recorded is not None:
                for var in op.reads:
                    if var._read_events is None:
                        var._read_events = {recorded[0]: recorded[1]}
                    else:
                        var._read_events[recorded[0]] = recorded[1]
                for var in op.writes:
                    var._write_event = recorded
                    var._read_events = None
            elif op.state is not OpState.SKIPPED:
                for var in op.writes:
                    var._write_event = None
                    var._read_events = None
        _tracker.release(op, ready)
        self._pending -= 1
        lane = op._lane
        lane.pending -= 1
        wake = bool(self._idle_waiters) and not lane.pending
        if not wake and self._var_waiters:
            for var in op.writes:
                if var._waiters:
                    wake = True
                    break
        if wake:
            self._progress.notify_all()
        if self._space_waiters and self._pending <= self._low_water:
            self._space.notify_all()

    # -- waiting ---------------------------------------------------------------

    def _stream_lanes(self, device: Device | None = None) -> list[Lane]:
        return [
            lane
            for dev, lanes in list(self._lanes.items())
            if device is None or dev == device
            for lane in lanes.values()
            if lane.stream is not None
        ]

    def waitall(self) -> None:
        _base.check_not_in_op("waitall()")
        self._wait_idle(None)
        _base.raise_unobserved()

    def synchronize(self, device: Device | None = None) -> None:
        _base.check_not_in_op("synchronize()")
        self._wait_idle(device)
        _base.raise_unobserved(device)

    def _wait_idle(self, device: Device | None, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._idle_waiters += 1
            try:
                while True:
                    if device is None:
                        busy = self._pending > 0
                    else:
                        busy = any(lane.pending for lane in self._lanes.get(device, {}).values())
                    if not busy:
                        break
                    if deadline is None:
                        self._progress.wait()
                    else:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            return False
                        self._progress.wait(left)
            finally:
                self._idle_waiters -= 1
        for lane in self._stream_lanes(device):
            assert lane.stream is not None
            lane.stream.synchronize()
        return True

    def wait_for_var(self, var: Var) -> None:
        _base.check_not_in_op("wait_for_var()")
        with self._lock:
            target = var._writes_pushed
            if var.version < target:
                var._waiters += 1
                self._var_waiters += 1
                try:
                    while var.version < target:
                        self._progress.wait()
                finally:
                    var._waiters -= 1
                    self._var_waiters -= 1
            recorded = var._write_event
        if recorded is not None:
            recorded[1].synchronize()
        _base.raise_for_var(var)

    def pending(self) -> int:
        return self._pending

    def drain(self, timeout: float | None = None, call: str = "drain()") -> bool:
        """Wait for pending work without raising failures; False on timeout.

        Inside an op it cannot wait (the op is pending work itself) and raises
        BlockingCallError naming ``call``, like every blocking call there."""
        _base.check_not_in_op(call)
        return self._wait_idle(None, timeout)

    # -- configuration and exit --------------------------------------------------

    def set_max_pending(self, n: int) -> None:
        with self._lock:
            self._max_pending = n
            self._low_water = max(0, n - max(1, n // 10))
            if self._space_waiters:
                self._space.notify_all()

    def reset_lanes(self) -> None:
        """Drop the CPU lanes (their thread shares changed); new ones start on next push."""
        with self._lock:
            for device in [d for d in self._lanes if d.kind == "cpu"]:
                for lane in self._lanes.pop(device).values():
                    lane.stopping = True
                    lane.ring()

    def shutdown(self, timeout: float) -> None:
        """Finish pending work (up to ``timeout`` s, then cancel it) and stop the workers."""
        if self._closed:
            return
        if not self._pending or self.drain(timeout):
            with self._lock:
                for lanes in self._lanes.values():
                    for lane in lanes.values():
                        lane.stopping = True
                        lane.ring()
            if self._watcher is not None:
                self._watcher.stop()
        else:
            shutdown = Failure(
                "interpreter exit", "all devices",
                EngineShutdownError(f"cancelled: still queued {timeout:g} s after the interpreter began to exit"),
            )
            shutdown.observed = True
            with self._lock:
                cancelled = 0
                for lanes in self._lanes.values():
                    for lane in lanes.values():
                        lane.stopping = True
                        for _, _, op in lane.heap:
                            _base.skip(op, shutdown)  # a late read raises instead of finding no value
                            op.state = OpState.CANCELLED
                            cancelled += 1
                        lane.heap.clear()
                        lane.ring()
                running = [lane.running for lanes in self._lanes.values() for lane in lanes.values() if lane.running]
                waiting = self._pending - cancelled - len(running)
            names = ", ".join(repr(op.name) for op in running[:3]) or "none"
            print(
                f"autopar: {self._pending} operation(s) still pending {timeout:g} s after exit began "
                f"(AUTOPAR_EXIT_TIMEOUT); cancelled {cancelled} queued and {max(waiting, 0)} waiting, "
                f"abandoned {len(running)} running ({names})",
                file=sys.stderr,
                flush=True,
            )
        self._closed = True
