"""The naive policy: every op on the calling thread, one at a time, in push order.

It is the reference the threaded policy is checked against, so it is built to
be right by construction, on the same tracker (``_tracker.py``) and the same
outcome rules (``_run.run``, ``_outcome.record``):

- ``push`` appends the op to the var queues and, once every var granted it,
  to a FIFO of ready ops, then runs that FIFO to empty -- all under one lock,
  so ops pushed from several threads never interleave;
- an op pushed from *inside* an op is only queued: it runs after the outer op
  has finished (the outer op holds its vars, and the FIFO is run by whoever
  pushed the outer op), so it sees what the outer op wrote;
- an op on a stream lane runs with its device's stream current and is waited
  for before the next op runs (step by step), and so is an external event
  (``push_event``): nothing reads a tensor before its device work is done;
- a ``push_async`` op keeps its vars until ``complete()``; the ops behind it
  run on the thread that calls ``complete()`` (or at the next push or wait).

A ``KeyboardInterrupt`` (or other ``BaseException``) raised by an op is its
failure and is raised again to the pusher once the op is recorded; ops that
became ready meanwhile stay in the FIFO and run at the next push or wait.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from autopar.devices import Device, lane_specs
from autopar.engine import _device, _failures, _hooks, _ki, _outcome, _run, _tracker
from autopar.engine._bulk import NoBulking
from autopar.engine._lifecycle import cancel_ops, shutdown_failure
from autopar.engine._op import Completion, Op, OpState, claim
from autopar.engine._pushing import EXTERNAL, Pushing
from autopar.engine._var import Failure, Var
from autopar.engine._waiting import wait
from autopar.errors import DeviceError



@_ki.unprotect
def _wait_event(event: Any) -> BaseException | None:
    try:
        event.synchronize()
    except BaseException as error:  # a failed kernel (or a Ctrl-C while waiting) fails the op
        return error
    return None


class NaiveEngine(Pushing, NoBulking):
    name = "naive"

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()
        self._progress = threading.Condition(self._lock)
        self._ready: deque[Op] = deque()
        self._lanes: dict[Device, dict[str, str]] = {}  # the lanes checked to exist
        self._pending = 0
        self._per_device: dict[Device, int] = {}
        self._issued: dict[Op, None] = {}
        self._streams: dict[Device, Any] = {}
        self._lost: dict[Device, Failure] = {}  # devices left unusable by a sticky error
        self._closed = False

    def _make_lane(self, device: Device, name: str) -> str:
        if name != EXTERNAL:
            specs = lane_specs(device)
            if name not in specs:
                raise ValueError(f"push: device {device} has no lane {name!r}; its lanes are {', '.join(specs)}")
        with self._lock:
            self._lanes.setdefault(device, {})[name] = name
        return name

    def _submit(self, op: Op, inline: bool) -> None:
        if _hooks.listeners:
            op.t_push = time.perf_counter_ns()
            fault = _hooks.call("op_pushed", op)
            if fault is not None:
                op.error = _failures.new(op, *fault)
        with self._lock:
            self._pending += 1
            self._per_device[op.device] = self._per_device.get(op.device, 0) + 1
            if _tracker.append(op):
                self._ready.append(op)
            if _run.current_op() is None:
                self._run_ready_locked()

    # -- running -------------------------------------------------------------------

    @_ki.entry
    def flush(self) -> None:
        """Run what was queued while no op could run here (a group of pushes, ``_group.py``)."""
        with self._lock:
            if _run.current_op() is None:
                self._run_ready_locked()

    def _run_ready_locked(self) -> None:
        """Run the ready ops in order until none is left (an op pushed by one joins the end)."""
        ready = self._ready
        while ready:
            op = ready.popleft()
            failure = _failures.first_failure(op) if _failures.seen else None
            if failure is not None:
                self._end_locked(op, OpState.SKIPPED, failure)
                continue
            op.state = OpState.RUNNING
            error = self._run_op(op)
            if op.state is OpState.ISSUED:
                continue  # push_async: it finishes when complete() is called
            self._end_locked(op, *_outcome.error_state(op, error))
            if error is not None and not isinstance(error, (Exception, Failure)):
                _failures.raised_here(op)
                raise error  # a Ctrl-C (or SystemExit) in an op reaches the pusher, recorded, once

    def _run_op(self, op: Op) -> BaseException | Failure | None:
        lost = self._lost.get(op.device)
        if lost is not None:  # a sticky device error: nothing on the device runs or is waited for again
            return lost
        error = self._run_on_device(op)
        if error is not None and not isinstance(error, Failure) and op.device.has_streams:
            stream = self._stream(op.device)
            try:
                fatal = bool(stream.is_fatal(error))
            except Exception:
                fatal = True
            if fatal:
                self._lost[op.device] = _failures.new(op, DeviceError(
                    f"{op.device} is unusable: {type(error).__name__} in {op.name!r} -- an error of this kind is "
                    f"sticky; restart the process to use {op.device} again"), f"the device {op.device}")
                stream.abandon()
        return error

    def _run_on_device(self, op: Op) -> BaseException | Failure | None:
        if op.fn is None:  # push_event: the device work is queued already; wait for it
            return self._wait(op.event)
        stream = self._stream(op.device) if op.device.has_streams else None
        if stream is None:
            error = _run.run(op)
        else:
            with stream.activate():
                error = _run.run(op, stream)
        if op.completion is not None:
            if error is None:
                if not op.completion.called:
                    op.state = OpState.ISSUED
                    self._issued[op] = None
                    return None
                error = self._complete_on_device(op, op.error)
            return error
        if op.event is not None:  # step by step: its device work finishes before the next op
            device_error = self._wait(op.event)
            _device.device_times(op, stream)
            op.event = None
            error = error if error is not None else device_error
        return error

    def _wait(self, event: Any) -> BaseException | None:
        try:
            return _wait_event(event)
        except BaseException as error:  # a Ctrl-C that landed just after the event completed
            return error

    def _complete_on_device(self, op: Op, error: BaseException | Failure | None) -> BaseException | Failure | None:
        """A push_async op on a stream device is done when its stream gets there."""
        if error is None and op.device.has_streams:
            try:
                event = self._stream(op.device).record_event(timing=False)
            except BaseException as fault:
                return fault
            return self._wait(event)
        return error

    @_ki.entry
    def _on_complete(self, completion: Completion, error: BaseException | None) -> None:
        with self._lock:
            if self._closed or not claim(completion, error):
                return
            op = completion.op
            self._issued.pop(op, None)
            result = self._complete_on_device(op, error)
            self._end_locked(op, *_outcome.error_state(op, result))
            if _run.current_op() is None:
                self._run_ready_locked()

    def _end_locked(self, op: Op, state: OpState, failure: Failure | None) -> None:
        _outcome.record(op, state, failure)
        ready: list[Op] = []
        _tracker.release(op, ready)
        self._ready.extend(ready)
        self._pending -= 1
        self._per_device[op.device] -= 1
        self._progress.notify_all()

    def _stream(self, device: Device) -> Any:
        stream = self._streams.get(device)
        if stream is None:
            spec = lane_specs(device)["compute"]
            assert spec.make_stream is not None
            stream = self._streams[device] = spec.make_stream()
        return stream

    # -- waiting -------------------------------------------------------------------

    def _wait_locked(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        self._run_ready_locked()  # ops an interrupted push left behind
        deadline = None if timeout is None else time.monotonic() + timeout
        return wait(self._progress, done, deadline)

    @_ki.entry
    def wait_for_var(self, var: Var) -> None:
        _run.check_not_in_op("wait_for_var()")
        with self._lock:
            target = var._writes_pushed
            self._wait_locked(lambda: var.version >= target)
        _failures.raise_for_var(var)

    @_ki.entry
    def waitall(self) -> None:
        _run.check_not_in_op("waitall()")
        with self._lock:
            self._wait_locked(lambda: not self._pending)
        _failures.raise_unobserved()

    @_ki.entry
    def synchronize(self, device: Device | None = None) -> None:
        _run.check_not_in_op("synchronize()")
        with self._lock:
            if device is None:
                self._wait_locked(lambda: not self._pending)
            else:
                self._wait_locked(lambda: not self._per_device.get(device, 0))
        _failures.raise_unobserved(device)

    @_ki.entry
    def drain(self, timeout: float | None = None, call: str = "drain()") -> bool:
        _run.check_not_in_op(call)  # as the threaded engine, so programs behave alike on both
        with self._lock:
            return self._wait_locked(lambda: not self._pending, timeout)

    def pending(self) -> int:
        return self._pending

    # -- configuration and exit ------------------------------------------------------

    def set_max_pending(self, n: int | None) -> None:
        pass  # every op runs at push: nothing queues up

    def reset_lanes(self) -> None:
        with self._lock:
            self._lanes.clear()

    @_ki.entry
    def shutdown(self, timeout: float, finish_running: float = 0.0) -> None:
        """Wait up to ``timeout`` s for ops awaiting ``complete()``; cancel what is left."""
        self._shutdown(timeout)

    def abandon_after_fork(self) -> None:
        """In a forked child: cancel what the parent had pending (see the threaded engine's)."""
        from autopar.engine._lifecycle import fork_failure

        cancel_ops([*self._issued, *self._ready], fork_failure())
        self._closed = True

    def _shutdown(self, timeout: float) -> None:
        if self._closed:
            return
        finished = self.drain(timeout)
        with self._lock:
            self._closed = True
            if not finished:
                left = [*self._issued, *self._ready]
                cancel_ops(left, shutdown_failure(timeout))
                self._issued.clear()
                self._ready.clear()
                self._pending = 0
                self._per_device.clear()
                self._progress.notify_all()
            for stream in self._streams.values():
                stream.close()
