"""The threaded policy: per-device lanes, each with its own worker thread.

*Tracking* (``_tracker.py``) decides when an op may run; the policy decides
*where* and *how*. One engine lock guards all of it: the var queues, the lane
heaps, the counters. Python runs one bytecode at a time anyway, so a lock per
var would only add acquisitions; one per op event (push, finish) is the floor.

The policy is assembled from one file per idea: the push entry points
(``_pushing.py``), admission and inline runs (here), scheduling and finishing
(``_scheduling.py``), lane workers (``_lanes.py``), device work in flight and
its watchers (``_device.py``), waiting and back-pressure (``_waiting.py``),
lane replacement and exit (``_lifecycle.py``).

Admission (``_submit``): back-pressure, the pending counts, ``_tracker.append``;
an op granted every var at once is advanced right away -- in the common case
(nothing failed yet, no device work anywhere) by a few lines inlined here.

Inline (``inline=True``, trusted array kernels only): an op that is ready at
once, whose lane has nothing queued or running, pushed from outside any op,
runs on the calling thread -- through ``_run.run`` like any other, after the
lock is released, with its lane marked busy so the worker does not start
another op there meanwhile. A ``KeyboardInterrupt`` (or other
``BaseException``) it raises is its failure, and is raised again to the
caller once the op is recorded (contract, failures rule 6).
"""

from __future__ import annotations

import heapq
import threading
import time

from autopar.devices import Device, LaneSpec, lane_specs
from autopar.engine import _failures, _hooks, _outcome, _run, _tracker
from autopar.engine._bulk import Bulking
from autopar.engine._lanes import Lane
from autopar.engine._op import Op, OpState
from autopar.engine._pushing import EXTERNAL, Pushing
from autopar.engine._scheduling import Scheduling
from autopar.engine._var import Failure

_RUNNING = OpState.RUNNING
_READY = OpState.READY
_DONE = OpState.DONE
_LOCAL = _run._local  # its "op": the op running on this thread (_run.current_op without a call)


class ThreadedEngine(Scheduling, Pushing, Bulking):
    name = "threaded"

    def __init__(self, max_pending: int) -> None:
        Pushing.__init__(self)
        # Reentrant: a listener or a finalizer running under it may push.
        self._lock = threading.RLock()
        self._progress = threading.Condition(self._lock)  # waitall, synchronize, wait_for_var
        self._space = threading.Condition(self._lock)  # back-pressure
        self._lanes: dict[Device, dict[str, Lane]] = {}
        self._pending = 0
        self._idle_waiters = 0
        self._var_waiters = 0
        self._space_waiters = 0
        self._max_pending = max_pending
        self._low_water = max(0, max_pending - max(1, max_pending // 10))
        self._streams_used = False  # a lane whose ops finish after their function exists
        self._issued: dict[Op, None] = {}  # ops whose function returned, not finished
        self._lost: dict[Device, Failure] = {}  # devices a sticky error left unusable (_scheduling.py)
        self._closed = False
        self._now = 0  # small ops running now on their callers' threads (_bulk.py)
        self._fork_waiting = False

    def _submit(self, op: Op, inline: bool) -> None:
        lane = op._lane
        if _hooks.listeners:
            op.t_push = time.perf_counter_ns()
            fault = _hooks.call("op_pushed", op)
            if fault is not None:
                op.error = _failures.new(op, *fault)
        run_here = False
        lock = self._lock
        lock.acquire()  # not `with`: half the cost, and this is the path every push takes
        try:
            self._open_segment = None  # any op pushed closes the open bulk segment (_bulk.py)
            if self._pending >= self._max_pending and _LOCAL.op is None:
                self._wait_for_space_locked()
            self._pending += 1
            lane.pending += 1
            if _tracker.append(op):
                if self._streams_used or _failures.seen or op.fn is None:
                    ready: list[Op] = []
                    run_here = self._advance_locked(op, inline, ready)
                    self._advance_all_locked(ready)
                elif inline and not lane.heap and lane.running is None and lane.stream is None \
                        and _LOCAL.op is None:
                    op.state = _RUNNING
                    lane.running = op
                    run_here = True
                else:  # the common case, inlined: nothing failed, no device work to wait for
                    op.state = _READY
                    heapq.heappush(lane.heap, (-op.priority, op.seq, op))
                    if lane.waiting:
                        lane.ring()
        finally:
            lock.release()
        if not run_here:
            return
        # Inline: run here, outside the lock, the lane held meanwhile; then record it.
        error = _run.run(op)
        lock.acquire()
        try:
            lane.running = None
            if not self._closed:
                done: list[Op] = []
                if error is None:  # an op run inline is a plain host op: done, or failed
                    self._end_locked(op, _DONE, None, done)
                else:
                    self._end_locked(op, *_outcome.error_state(op, error), done)
                if done:
                    self._advance_all_locked(done)
            if lane.heap:
                lane.ring()
        finally:
            lock.release()
        if error is not None and not isinstance(error, (Exception, Failure)):
            _failures.raised_here(op)
            raise error  # a Ctrl-C (or SystemExit) in an op run here reaches the caller, recorded, once

    def flush(self) -> None:
        """Nothing to do: the lanes' workers run what a group of pushes queued (``_group.py``)."""

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
                lost = self._lost.get(device)
                if lost is not None:  # a lane of a lost device is born lost
                    lane.lost = lost
                    if lane.watcher is not None:
                        lane.watcher.lost = lost
                    if lane.stream is not None:
                        lane.stream.abandon()
            return lane
