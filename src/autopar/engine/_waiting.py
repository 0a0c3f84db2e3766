"""Waiting: for a var, for a device, for everything; and back-pressure at push.

Every wait is on a condition of the engine lock, woken by the op that makes
it true: finishing an op wakes ``wait_for_var`` callers when it wrote a var
someone waits on, idle waiters when its lane has nothing pending left, and
blocked pushers when the pending count falls to 90% of the bound (so a
producer wakes once per batch, not once per op). An op on a stream lane is
pending until its device work has finished, so every wait covers device work
too, and none of them synchronizes a stream.

A wait made inside an op raises :class:`BlockingCallError` (the op may be what
it waits for). On the main thread a wait sleeps in slices (``_ki.WAIT_SLICE``)
so that a Ctrl-C ends it promptly: the waiter counts are undone first, then
``KeyboardInterrupt`` is raised (contract, failures rule 6).

Back-pressure: ``push`` blocks while ``max_pending`` ops are pushed and not
finished. Pushes made inside an op never block: the op may be what the others
wait for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from autopar.devices import Device
from autopar.engine import _failures, _ki, _run
from autopar.engine._lanes import Lane
from autopar.engine._var import Var


def wait(cond: threading.Condition, done: Callable[[], bool], deadline: float | None = None) -> bool:
    """Wait on ``cond`` (its lock held) until ``done()``; False when ``deadline`` passed.

    On the main thread, a Ctrl-C ends the wait by raising ``KeyboardInterrupt``.
    """
    sliced = _ki.installed and _ki.on_main_thread()
    while not done():
        if sliced and _ki.deferred:
            _ki.raise_now()
        if deadline is None:
            cond.wait(_ki.WAIT_SLICE if sliced else None)
        else:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            cond.wait(min(left, _ki.WAIT_SLICE) if sliced else left)
    return True


class Waiting:
    """The waits of the threaded engine (a base of ``ThreadedEngine``)."""

    _lock: threading.RLock
    _progress: threading.Condition
    _space: threading.Condition
    _lanes: dict[Device, dict[str, Lane]]
    _pending: int
    _max_pending: int
    _low_water: int
    _idle_waiters: int
    _var_waiters: int
    _space_waiters: int

    @_ki.entry
    def waitall(self) -> None:
        _run.check_not_in_op("waitall()")
        self._wait_idle(None)
        _failures.raise_unobserved()

    @_ki.entry
    def synchronize(self, device: Device | None = None) -> None:
        _run.check_not_in_op("synchronize()")
        self._wait_idle(device)
        _failures.raise_unobserved(device)

    @_ki.entry
    def wait_for_var(self, var: Var) -> None:
        _run.check_not_in_op("wait_for_var()")
        with self._lock:
            target = var._writes_pushed
            if var.version < target:
                var._waiters += 1
                self._var_waiters += 1
                try:
                    wait(self._progress, lambda: var.version >= target)
                finally:
                    var._waiters -= 1
                    self._var_waiters -= 1
        _failures.raise_for_var(var)

    @_ki.entry
    def drain(self, timeout: float | None = None, call: str = "drain()") -> bool:
        """Wait for pending work without raising failures; False on timeout.

        Inside an op it cannot wait (the op is pending work itself) and raises
        BlockingCallError naming ``call``, like every blocking call there."""
        _run.check_not_in_op(call)
        return self._wait_idle(None, timeout)

    def pending(self) -> int:
        return self._pending

    def _busy(self, device: Device | None) -> bool:
        if device is None:
            return self._pending > 0
        return any(lane.pending for lane in self._lanes.get(device, {}).values())

    def _wait_idle(self, device: Device | None, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            if not self._busy(device):
                return True
            self._idle_waiters += 1
            try:
                return wait(self._progress, lambda: not self._busy(device), deadline)
            finally:
                self._idle_waiters -= 1

    def _wait_for_space_locked(self) -> None:
        self._space_waiters += 1
        try:
            wait(self._space, lambda: self._pending < self._max_pending)
        finally:
            self._space_waiters -= 1

    @_ki.entry
    def set_max_pending(self, n: int) -> None:
        with self._lock:
            self._max_pending = n
            self._low_water = max(0, n - max(1, n // 10))
            if self._space_waiters:
                self._space.notify_all()
