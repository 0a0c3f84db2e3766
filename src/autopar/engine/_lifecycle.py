"""Lifecycle: replacing lanes, shutting down, and cancelling what is left at exit.

``reset_lanes`` (``set_cpu_devices``) stops the CPU lanes and *joins* their
workers: a worker still alive in torch when the interpreter finalizes aborts
the process ("terminate called without an active exception").

``shutdown(timeout)`` (registered with ``atexit``) waits up to ``timeout``
seconds for pending work -- device work included, since an op on a stream lane
is pending until its event completes -- then cancels what is left, stops
every lane and joins the workers that are idle. A worker stuck in an op, or a
watcher stuck on an event that never completes, is a daemon thread and is
abandoned, so the process always exits, within about ``timeout`` seconds.
A Ctrl-C during that wait cancels what is left at once (``shutdown(0,
finish_running=...)`` from ``engine._at_exit``): the ops already running are
let finish -- they are in torch, and a thread inside torch when the interpreter
finalizes aborts the process -- and the rest is cancelled, with a message.

A forked child has none of the parent's threads: ``abandon_after_fork``
cancels in the child what was pending at the fork (``engine/__init__.py``
then makes the child a new engine). Before the fork, ``lock_for_fork`` takes
the engine lock once no small op runs at that moment on another thread
(``_bulk.py``: such an op holds its vars outside the lock), waiting up to
``engine.FORK_WAIT`` seconds; ``release_after_fork`` fails in the child the
vars of one still running then.

Cancelling (``cancel_ops``) reaches every op still pending: queued on a
lane, running (abandoned), in flight on a device or awaiting ``complete()``,
parked behind device work, and -- through the var queues -- every op still
waiting for a var. Each gets ``EngineShutdownError`` as its failure, stored on
what it writes, so a late read raises instead of finding no value; and every
var they touch is left idle, with its version caught up, so a read made by a
later exit handler (on the naive engine that takes over) raises at once
instead of waiting for a write that will never come.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable

from autopar.devices import Device
from autopar.engine import _ki
from autopar.engine._lanes import Lane
from autopar.engine._op import Op, OpState
from autopar.engine._var import Failure, Var
from autopar.engine._waiting import Waiting
from autopar.errors import EngineShutdownError

JOIN_BUDGET = 1.0  # seconds all idle threads together may take to stop at shutdown


def shutdown_failure(timeout: float) -> Failure:
    failure = Failure(
        "interpreter exit", "all devices",
        EngineShutdownError(f"cancelled: still pending {timeout:g} s after the interpreter began to exit"),
    )
    failure.observed = True  # reported at exit by the message, not again as an unobserved failure
    return failure


def fork_failure() -> Failure:
    failure = Failure(
        "process fork", "all devices",
        EngineShutdownError(
            "cancelled in a forked child process: the operation was pending in the parent when it "
            "forked, and its result exists only there; compute the value in the child, or wait for "
            "it (autopar.waitall()) before forking"
        ),
    )
    failure.observed = True  # the child's own failure, owed to nobody
    return failure


def cancel_ops(roots: Iterable[Op], failure: Failure) -> int:
    """Cancel ``roots`` and every op waiting behind them; leave their vars idle. Engine lock held."""
    found: dict[Op, None] = {}
    touched: dict[Var, None] = {}
    stack = list(roots)
    while stack:
        op = stack.pop()
        if op in found or op.finished:
            continue
        found[op] = None
        if op.dependents:
            stack.extend(op.dependents)
        for var in (*op.reads, *op.writes):
            if var not in touched:
                touched[var] = None
                stack.extend(waiting for waiting, _ in var._queue or ())
    for op in found:
        op.state = OpState.CANCELLED
        op.failure = failure
        op.fn = op.completion = op.dependents = op.upstream = None
        for var in op.writes:
            var.failure = failure
    for var in touched:
        var._reading = 0
        var._writing = False
        var._queue = None
        var.version = var._writes_pushed
        var._writer = var._readers = None
    return len(found)


class Lifecycle(Waiting):
    """Lane replacement and shutdown of the threaded engine (a base of ``ThreadedEngine``)."""

    _issued: dict[Op, None]
    _closed: bool
    _now: int  # small ops running now on their callers' threads (_bulk.py)
    _fork_waiting: bool

    @_ki.entry
    def reset_lanes(self) -> None:
        """Drop the CPU lanes (their thread shares changed); new ones start on next push."""
        with self._lock:
            old = [lane for dev in [d for d in self._lanes if d.kind == "cpu"] for lane in self._lanes.pop(dev).values()]
            for lane in old:
                lane.stop()
        for lane in old:
            lane.join(5.0)

    @_ki.entry
    def shutdown(self, timeout: float, finish_running: float = 0.0) -> None:
        """Finish pending work (up to ``timeout`` s, then cancel it) and stop the threads.

        ``finish_running``: how long a worker still running an op may take to end it after the
        rest was cancelled (an interrupted exit wait: the op runs in torch, and a thread left
        inside torch when the interpreter finalizes aborts the process)."""
        self._shutdown(timeout, finish_running)

    def _shutdown(self, timeout: float, finish_running: float = 0.0) -> None:
        if self._closed:
            return
        finished = not self._pending or self._wait_idle(None, timeout)
        report = ""
        with self._lock:
            lanes = [lane for lanes in self._lanes.values() for lane in lanes.values()]
            stuck = {lane for lane in lanes if lane.running is not None}
            stuck.update(op._lane for op in self._issued)
            if not finished:
                report = self._cancel_locked(timeout, lanes, finish_running > 0)
            self._closed = True
            for lane in lanes:
                lane.stop()
        if report:
            print(report, file=sys.stderr, flush=True)
        deadline = time.monotonic() + JOIN_BUDGET
        for lane in lanes:
            if lane not in stuck:
                lane.join(max(0.0, deadline - time.monotonic()))
        deadline = time.monotonic() + finish_running
        for lane in stuck:
            lane.join(max(0.0, deadline - time.monotonic()))

    def lock_for_fork(self, timeout: float) -> None:
        """Take the engine lock for a fork, once no small op runs now on another thread (waiting up
        to ``timeout`` s). Such an op holds its vars outside the lock (``_bulk.py``): forked
        meanwhile, the child would find them held by a thread it does not have, and a read of
        what the op writes would wait forever. (One still running after ``timeout``: the child
        fails its vars instead, ``release_after_fork``.)"""
        self._lock.acquire()
        if not self._now:
            return
        self._fork_waiting = True
        deadline = time.monotonic() + timeout
        try:
            while self._now:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._progress.wait(left)
        finally:
            self._fork_waiting = False

    def release_after_fork(self, failure: Failure) -> None:
        """In a forked child: the small ops that ran now on another thread at the fork (the wait
        timed out) will never finish here. Only their count is kept (the path is hot), so the vars
        they held are found among all objects -- in this rare case only: after the pending ops were
        cancelled, a var still granted is one of theirs. Each is left idle, what they write failed."""
        if not self._now:
            return
        import gc

        for obj in gc.get_objects():
            if isinstance(obj, Var) and (obj._writing or obj._reading):
                if obj._writing:
                    obj.failure = failure
                    obj.version = obj._writes_pushed
                obj._writing = False
                obj._reading = 0
        self._now = 0

    def abandon_after_fork(self) -> None:
        """In a forked child: the lanes' threads did not survive the fork. Cancel every op still
        pending (its result exists only in the parent) and leave its vars idle; the child makes a
        new engine. Nothing is joined or locked: the only thread left is this one."""
        lanes = [lane for lanes in self._lanes.values() for lane in lanes.values()]
        roots = [op for lane in lanes for _, _, op in lane.heap]
        roots.extend(lane.running for lane in lanes if lane.running is not None)
        roots.extend(self._issued)
        failure = fork_failure()
        cancel_ops(roots, failure)
        self.release_after_fork(failure)
        self._closed = True

    def _cancel_locked(self, timeout: float, lanes: list[Lane], interrupted: bool = False) -> str:
        pending = self._pending
        queued = [op for lane in lanes for _, _, op in lane.heap]
        running = [lane.running for lane in lanes if lane.running is not None]
        in_flight = list(self._issued)
        cancelled = cancel_ops([*queued, *running, *in_flight], shutdown_failure(timeout))
        for lane in lanes:
            lane.heap.clear()
            lane.pending = 0
        self._pending = 0
        self._issued.clear()
        self._progress.notify_all()
        self._space.notify_all()
        names = ", ".join(repr(op.name) for op in running[:3]) or "none"
        why = "at a Ctrl-C during the exit wait" if interrupted else \
            f"still pending {timeout:g} s after exit began (AUTOPAR_EXIT_TIMEOUT)"
        return (
            f"autopar: {pending} operation(s) {why}; cancelled {cancelled} with EngineShutdownError: {len(queued)} queued, "
            f"{len(in_flight)} in flight on a device or awaiting complete(), "
            f"{max(cancelled - len(queued) - len(running) - len(in_flight), 0)} waiting, "
            f"and {len(running)} running, {'let finish' if interrupted else 'abandoned'} ({names})"
        )
