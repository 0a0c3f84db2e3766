"""The threaded policy: per-device lanes, each with its own worker thread.

*Tracking* (``_tracker.py``) decides when an op may run; this module decides
*where* and *how*. One engine lock guards all of it: the var queues, the lane
heaps, the counters. Python runs one bytecode at a time anyway, so a lock per
var would only add acquisitions; one per op event (push, finish) is the floor.

An op's life, and the one function for each step:

- ``push_checked`` / ``push_async`` / ``push_event`` make the op and
  ``_submit`` it: back-pressure, counts, ``_tracker.append``;
- once every var granted it, ``_advance_locked`` decides: skip it (an input
  failed), park it behind device work in flight (``_device.py``), run it on
  the caller (``inline``), or queue it on its lane;
- ``_run.run`` runs its function (lane worker or caller, never under the lock);
- ``ran`` takes the result: an op on a stream lane is *issued*
  (``_issue_locked``: its vars are passed on at once, its watcher finishes it
  when its event completes, ``device_done``); a ``push_async`` op waits for
  ``complete()`` (``_on_complete``); any other op finishes now;
- ``_finish_locked`` / ``_end_locked`` record the outcome (``_outcome.record``),
  pass the vars on, update the counts, wake waiters, and advance what became
  ready -- iteratively, so a long chain of skipped ops cannot overflow the stack.

Inline (``inline=True``, trusted array kernels only): an op that is ready at
once, whose lane has nothing queued or running, pushed from outside any op,
runs on the calling thread -- through ``_run.run`` like any other, after the
lock is released, with its lane marked busy so the worker does not start
another op there meanwhile. A ``KeyboardInterrupt`` (or other
``BaseException``) it raises is its failure, and is raised again to the
caller once the op is recorded (SPEC §4.6).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from autopar.devices import Device, LaneSpec, lane_specs
from autopar.engine import _args, _device, _failures, _hooks, _ki, _outcome, _run, _tracker
from autopar.engine._lanes import Lane
from autopar.engine._lifecycle import Lifecycle
from autopar.engine._op import Completion, Op, OpState, claim
from autopar.engine._var import Failure, Var

_RUNNING = OpState.RUNNING
_READY = OpState.READY
_ISSUED = OpState.ISSUED
_DONE = OpState.DONE
EXTERNAL = "external"  # the pseudo-lane of push_event's ops: no worker, only a watcher


class ThreadedEngine(Lifecycle):
    name = "threaded"

    def __init__(self, max_pending: int) -> None:
        # Reentrant: a listener or a finalizer running under it may push.
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
        self._streams_used = False  # a lane with device work in flight exists
        self._issued: dict[Op, None] = {}  # ops whose function returned, not finished
        self._closed = False

    # -- pushing -------------------------------------------------------------------

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
        """See ``engine.push``."""
        reads_t, writes_t, dev = _args.normalize(fn, reads, writes, device, priority)
        return self.push_checked(fn, reads_t, writes_t, dev, priority, name, lane, inline)

    @_ki.protect
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
        """``push`` for callers that pass tuples of vars and a Device (the array layer).

        ``reads`` and ``writes`` may overlap and repeat vars (``_args.split``).
        ``inline=True`` lets the op run on the calling thread when it is ready
        at once and its lane is idle: for trusted array kernels, never for user
        functions (they must stay asynchronous, and may call back into autopar).
        """
        try:
            if len(writes) == 1 and (not reads or len(reads) == 1 and reads[0] is not writes[0]):
                rw: tuple[Var, ...] = ()  # the common case, without a call: nothing to dedupe
            else:
                reads, writes, rw = _args.split(reads, writes)
            lanes = self._lanes.get(device)
            lane_obj = lanes.get(lane) if lanes is not None else None
            if lane_obj is None:
                lane_obj = self._make_lane(device, lane)
            op = Op(fn, reads, writes, device, lane, priority, name, next(self._seq), rw)
            op._lane = lane_obj
            self._submit(op, inline)
            return op
        finally:
            if _ki.deferred:
                _ki.check()

    @_ki.protect
    def push_async(
        self,
        fn: Callable[[Completion], Any],
        reads: Iterable[Var] = (),
        writes: Iterable[Var] = (),
        device: Any = None,
        priority: int = 0,
        name: str | None = None,
        lane: str = "compute",
    ) -> Op:
        """See ``engine.push_async``."""
        try:
            reads_t, writes_t, dev = _args.normalize(
                fn, reads, writes, device, priority, "fn must be callable with one argument, complete")
            reads_t, writes_t, rw = _args.split(reads_t, writes_t)
            lane_obj = self._lanes.get(dev, {}).get(lane) or self._make_lane(dev, lane)
            op = Op(fn, reads_t, writes_t, dev, lane, priority, name, next(self._seq), rw)
            op._lane = lane_obj
            op.completion = Completion(op, self._on_complete)
            self._submit(op, False)
            return op
        finally:
            if _ki.deferred:
                _ki.check()

    @_ki.protect
    def push_event(self, event: Any, writes: Iterable[Var] = (), device: Any = None, name: str | None = None) -> Op:
        """See ``engine.push_event``."""
        try:
            _, writes_t, dev = _args.normalize(lambda: None, (), writes, device, 0)
            _, writes_t, _ = _args.split((), writes_t)
            lane_obj = self._lanes.get(dev, {}).get(EXTERNAL) or self._make_lane(dev, EXTERNAL)
            op = Op(None, (), writes_t, dev, EXTERNAL, 0, name or "external device work", next(self._seq))
            op._lane = lane_obj
            op.event = event
            self._submit(op, False)
            return op
        finally:
            if _ki.deferred:
                _ki.check()

    def _submit(self, op: Op, inline: bool) -> None:
        lane = op._lane
        if _hooks.listeners:
            op.t_push = time.perf_counter_ns()
            fault = _hooks.call("op_pushed", op)
            if fault is not None:
                op.error = _failures.new(op, *fault)
        run_here = False
        with self._lock:
            if self._pending >= self._max_pending and _run.current_op() is None:
                self._wait_for_space_locked()
            self._pending += 1
            lane.pending += 1
            for var in op.writes:
                var._writes_pushed += 1
            if _tracker.append(op):
                if self._streams_used or _failures.seen or op.fn is None:
                    ready: list[Op] = []
                    run_here = self._advance_locked(op, inline, ready)
                    self._advance_all_locked(ready)
                elif inline and not lane.heap and lane.running is None and lane.stream is None \
                        and _run.current_op() is None:
                    op.state = _RUNNING
                    lane.running = op
                    run_here = True
                else:  # the common case, inlined: nothing failed, no device work to wait for
                    op.state = _READY
                    heapq.heappush(lane.heap, (-op.priority, op.seq, op))
                    if lane.waiting:
                        lane.ring()
        if run_here:
            self._run_inline(op, lane)

    def _run_inline(self, op: Op, lane: Lane) -> None:
        error = _run.run(op)
        with self._lock:
            lane.running = None
            if not self._closed:
                ready: list[Op] = []
                if error is None:  # an op run inline is a plain host op: done, or failed
                    self._end_locked(op, _DONE, None, ready)
                else:
                    self._end_locked(op, *_outcome.error_state(op, error), ready)
                if ready:
                    self._advance_all_locked(ready)
            if lane.heap:
                lane.ring()
        if error is not None and not isinstance(error, (Exception, Failure)):
            raise error  # a Ctrl-C (or SystemExit) in an op run here reaches the caller, recorded

    def _make_lane(self, device: Device, name: str) -> Lane:
        specs = lane_specs(device)
        if name == EXTERNAL:
            spec = LaneSpec(device, EXTERNAL, 1)
        elif name in specs:
            spec = specs[name]
        else:
            raise ValueError(f"push: device {device} has no lane {name!r}; its lanes are {', '.join(specs)}")
        with self._lock:
            lanes = self._lanes.setdefault(device, {})
            lane = lanes.get(name)
            if lane is None:
                lane = lanes[name] = Lane(self, spec, worker=name != EXTERNAL)
                if lane.watcher is not None:
                    self._streams_used = True
            return lane

    # -- scheduling (all with the lock held) -----------------------------------

    def _advance_locked(self, op: Op, inline: bool, ready: list[Op]) -> bool:
        """A ready op: skip it, park it, issue it or queue it. True: run it here (inline)."""
        if op.state is _ISSUED:  # its device work finished; it waited for its upstream to finish
            self._end_locked(op, *_outcome.error_state(op, op.error), ready)
            return False
        lane = op._lane
        if self._streams_used:
            deps = _device.in_flight(op)
            if deps:
                if lane.stream is None or (_failures.seen and _failures.first_failure(op) is not None):
                    _device.park(op, deps)
                    if op.blockers:
                        op.state = _READY
                        return False
                else:
                    _device.prepare_issue(op, deps)
        if _failures.seen:
            failure = _failures.first_failure(op)
            if failure is not None:
                self._end_locked(op, OpState.SKIPPED, failure, ready)
                return False
        if lane.thread is None:  # push_event: the work is on the device already
            op.state = _RUNNING
            self._issue_locked(op, ready)
            return False
        if inline and not lane.heap and lane.running is None and lane.stream is None and _run.current_op() is None:
            op.state = _RUNNING
            lane.running = op
            return True
        op.state = _READY
        heapq.heappush(lane.heap, (-op.priority, op.seq, op))
        if lane.waiting:
            lane.ring()
        return False

    def _advance_all_locked(self, ready: list[Op]) -> None:
        i = 0
        while i < len(ready):
            self._advance_locked(ready[i], False, ready)
            i += 1

    def ran(self, op: Op, error: BaseException | Failure | None) -> None:
        """``op``'s function returned (or raised ``error``). Engine lock held."""
        if self._closed:
            return  # cancelled at exit, abandoned while it ran
        ready: list[Op] = []
        if op.completion is not None:  # push_async
            if error is None:
                if not op.completion.called:
                    op.state = _ISSUED  # it finishes when complete() is called
                    self._issued[op] = None
                    return
                error = op.error  # complete() was called while its function ran
            self._complete_async_locked(op, error, ready)
        elif op.event is not None:  # on a stream lane: issued; it finishes when its event completes
            op.error = error
            self._issue_locked(op, ready)
        else:
            self._end_locked(op, *_outcome.error_state(op, error), ready)
        self._advance_all_locked(ready)

    def _issue_locked(self, op: Op, ready: list[Op]) -> None:
        """Device work of ``op`` is queued: pass its vars on; its watcher finishes it."""
        op.state = _ISSUED
        op.released = True
        self._issued[op] = None
        _device.note_issued(op)
        _tracker.release(op, ready)
        watcher = op._lane.watcher
        assert watcher is not None
        watcher.add(op)

    def device_done(self, op: Op, error: BaseException | None) -> None:
        """The watcher saw ``op``'s event complete (``error``: it raised)."""
        with self._lock:
            if self._closed or op.state is not _ISSUED:
                return
            if op.error is None:
                op.error = error
            stream = op._lane.stream
            if stream is not None:
                _device.device_times(op, stream)
            waiting = _device.unfinished(op.upstream)
            if waiting:
                _device.park(op, waiting)  # finish after what it read from has finished
                return
            self._finish_locked(op, *_outcome.error_state(op, op.error))

    @_ki.protect
    def _on_complete(self, completion: Completion, error: BaseException | None) -> None:
        try:
            with self._lock:
                if self._closed or not claim(completion, error):
                    return
                ready: list[Op] = []
                self._complete_async_locked(completion.op, error, ready)
                self._advance_all_locked(ready)
        finally:
            if _ki.deferred:
                _ki.check()

    def _complete_async_locked(self, op: Op, error: BaseException | Failure | None, ready: list[Op]) -> None:
        stream = op._lane.stream
        if error is None and stream is not None:  # on a stream lane: finished when the stream gets there
            try:
                op.event = stream.record_event(timing=False)
            except BaseException as fault:
                error = _failures.new(op, fault, f"the {op.lane} stream of {op.device} (record_event)")
            else:
                self._issue_locked(op, ready)
                return
        self._end_locked(op, *_outcome.error_state(op, error), ready)

    def _finish_locked(self, op: Op, state: OpState, failure: Failure | None) -> None:
        ready: list[Op] = []
        self._end_locked(op, state, failure, ready)
        self._advance_all_locked(ready)

    def _end_locked(self, op: Op, state: OpState, failure: Failure | None, ready: list[Op]) -> None:
        """``op`` finished: record it, pass its vars on (into ``ready``), count, wake."""
        _outcome.record(op, state, failure)
        if op.released:
            _device.note_finished(op)
        else:
            _tracker.release(op, ready)
        if self._issued:
            self._issued.pop(op, None)
        if op.dependents:
            ready.extend(_device.released_dependents(op))
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

    def internal_fault(self, op: Op, error: BaseException) -> None:
        """A bug in the engine's own bookkeeping while handling ``op``: fail it, say so, go on."""
        import sys

        print(f"autopar: internal error while handling {op!r}: {error!r}", file=sys.stderr, flush=True)
        with self._lock:
            if self._closed or op.finished:
                return
            if op._lane.running is op:
                op._lane.running = None
            try:
                self._finish_locked(op, OpState.FAILED, _failures.new(op, error, "the engine (internal error)"))
            except BaseException as again:  # nothing more can be done; at least it is said
                print(f"autopar: could not fail {op!r}: {again!r}", file=sys.stderr, flush=True)
