"""Scheduling in the threaded policy: from an op whose vars are granted to an op finished.

Everything here runs with the engine lock held, and each step has one function:

- ``_advance_locked``: a ready op is skipped (an input failed), parked behind
  device work in flight (``_device.py``), issued, run on the caller
  (``inline``) or queued on its lane;
- ``ran``: its function returned. An op on a stream lane is *issued*
  (``_issue_locked``: its vars are passed on at once, its lane's watcher
  finishes it when its event completes, ``device_done``); a ``push_async`` op
  waits for ``complete()`` (``_on_complete``); any other op finishes now;
- ``_end_locked``: it finished. Its outcome is recorded (``_outcome.record``),
  its vars passed on, the counts updated and the waiters woken; the ops that
  became ready are advanced by the caller, iteratively
  (``_advance_all_locked``), so a long chain of skipped ops cannot overflow the
  stack.

A fault that leaves a stream device unusable (CUDA's sticky errors,
``_check_lost_locked``) fails everything on that device from then on, without
touching it again.

An internal error in any of it fails the op concerned (``internal_fault``)
instead of killing the thread that met it.
"""

from __future__ import annotations

import heapq
import sys
from typing import Any

from autopar.engine import _device, _failures, _ki, _outcome, _run, _tracker
from autopar.engine._lifecycle import Lifecycle
from autopar.engine._op import Completion, Op, OpState, claim
from autopar.engine._var import Failure
from autopar.errors import DeviceError

_RUNNING = OpState.RUNNING
_READY = OpState.READY
_ISSUED = OpState.ISSUED
_DONE = OpState.DONE


class Scheduling(Lifecycle):
    """The threaded policy's scheduling (a base of ``ThreadedEngine``)."""

    _streams_used: bool
    _lost: dict[Any, Failure]  # devices left unusable by a sticky error, and the failure their ops get

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
        if error is not None and op._lane.stream is not None and not isinstance(error, Failure):
            self._check_lost_locked(op, error)
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
        elif error is None:  # a host op (no upstream: only stream ops have one)
            self._end_locked(op, _DONE, None, ready)
        else:
            self._end_locked(op, *_outcome.error_state(op, error), ready)
        if ready:
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

    def _check_lost_locked(self, op: Op, error: BaseException) -> None:
        """``error`` came from ``op``'s stream: if it leaves the device unusable (CUDA's sticky
        errors), fail everything on the device from now on without touching it again (contract, failures rule 7).

        ``op`` fails with its own error. Every op of the device still queued, and every one pushed
        later, fails with a ``DeviceError`` saying the device is lost; the lanes' watchers stop
        waiting for events (after a sticky error a CUDA event call fails too); and the stream keeps
        the memory whose free would record events (``Stream.abandon``)."""
        lane = op._lane
        stream = lane.stream
        if lane.lost is not None or stream is None:
            return
        try:
            fatal = bool(stream.is_fatal(error))
        except Exception:  # the check itself failed: the device is in no state to be trusted
            fatal = True
        if not fatal:
            return
        lost = _failures.new(op, DeviceError(
            f"{op.device} is unusable: {type(error).__name__} in {op.name!r}: {str(error).splitlines()[0] if str(error) else ''}"
            f" -- an error of this kind is sticky (every later call on the device fails); restart the "
            f"process to use {op.device} again. Work on other devices goes on"), f"the device {op.device}")
        self._lost[op.device] = lost
        print(f"autopar: {op.device} is lost after {type(error).__name__} in {op.name!r}; every operation "
              f"on it fails from now on", file=sys.stderr, flush=True)
        for other in self._lanes.get(op.device, {}).values():
            other.lost = lost
            if other.watcher is not None:
                other.watcher.lost = lost
            if other.stream is not None:
                try:
                    other.stream.abandon()
                except Exception:  # nothing more to do for it
                    pass

    def device_done(self, op: Op, error: BaseException | Failure | None) -> None:
        """The watcher saw ``op``'s event complete (``error``: it raised)."""
        with self._lock:
            if self._closed or op.state is not _ISSUED:
                return
            if op.error is None:
                op.error = error
            stream = op._lane.stream
            if error is not None and not isinstance(error, Failure):
                self._check_lost_locked(op, error)
            if stream is not None:
                _device.device_times(op, stream)
            waiting = _device.unfinished(op.upstream)
            if waiting:
                _device.park(op, waiting)  # finish after what it read from has finished
                return
            self._finish_locked(op, *_outcome.error_state(op, op.error))

    @_ki.entry
    def _on_complete(self, completion: Completion, error: BaseException | None) -> None:
        with self._lock:
            if self._closed or not claim(completion, error):
                return
            ready: list[Op] = []
            self._complete_async_locked(completion.op, error, ready)
            self._advance_all_locked(ready)

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
