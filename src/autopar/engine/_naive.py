"""The naive policy: run each op on the calling thread, at push, in push order.

It is the reference every other policy is checked against: its results are
those of step-by-step execution by construction. Failures follow the same
rules as in the threaded engine. Ops on stream devices (CUDA, simulated) run
with one stream per device current and are waited for before push returns.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from typing import Any

from autopar.devices import Device, lane_specs
from autopar.engine import _base, _hooks
from autopar.engine._op import Op, OpState
from autopar.engine._var import Var


class NaiveEngine:
    name = "naive"

    def __init__(self) -> None:
        self._seq = itertools.count()
        self._streams: dict[Device, Any] = {}
        self._checked: set[Device] = set()

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
        reads_t, writes_t, dev = _base.normalize(fn, reads, writes, device, priority)
        return self.push_checked(fn, reads_t, writes_t, dev, priority, name, lane, inline)

    def push_checked(
        self,
        fn: Callable[[], Any],
        reads_t: tuple[Var, ...],
        writes_t: tuple[Var, ...],
        dev: Device,
        priority: int,
        name: str | None,
        lane: str,
        inline: bool,
    ) -> Op:
        """``push`` for callers that pass what ``normalize`` returns (the array layer)."""
        if dev not in self._checked or lane != "compute":
            specs = lane_specs(dev)
            if lane not in specs:
                raise ValueError(f"push: device {dev} has no lane {lane!r}; its lanes are {', '.join(specs)}")
            self._checked.add(dev)
        op = Op(fn, reads_t, writes_t, dev, lane, priority, name, next(self._seq))
        listeners = _hooks.listeners
        if listeners:
            op.t_push = time.perf_counter_ns()
            for listener in listeners:
                listener.op_pushed(op)
        for var in writes_t:
            var._writes_pushed += 1
        failure = _base.first_failure(op)
        if failure is not None:
            _base.skip(op, failure)
        else:
            op.state = OpState.RUNNING
            if listeners:
                op.t_start = time.perf_counter_ns()
                for listener in listeners:
                    listener.op_started(op)
            previous = _base.current_op()
            _base.set_current_op(op)
            try:
                if dev.has_streams:
                    stream = self._stream(dev)
                    with stream.activate():
                        fn()
                    stream.synchronize()  # step by step: the device finishes before the next op
                else:
                    fn()
            except Exception as error:
                _base.fail(op, error)
            else:
                op.state = OpState.DONE
            finally:
                _base.set_current_op(previous)
        for var in writes_t:
            var.version += 1
        if listeners:
            op.t_end = time.perf_counter_ns()
            for listener in listeners:
                listener.op_finished(op)
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
        self.push_checked(fn, reads, writes, device, 0, name, lane, True)

    def _stream(self, device: Device) -> Any:
        stream = self._streams.get(device)
        if stream is None:
            spec = lane_specs(device)["compute"]
            assert spec.make_stream is not None
            stream = self._streams[device] = spec.make_stream()
        return stream

    def _sync_streams(self, device: Device | None = None) -> None:
        for dev, stream in list(self._streams.items()):
            if device is None or dev == device:
                stream.synchronize()

    def wait_for_var(self, var: Var) -> None:
        _base.check_not_in_op("wait_for_var()")
        if self._streams:
            self._sync_streams()
        _base.raise_for_var(var)

    def waitall(self) -> None:
        _base.check_not_in_op("waitall()")
        self._sync_streams()
        _base.raise_unobserved()

    def synchronize(self, device: Device | None = None) -> None:
        _base.check_not_in_op("synchronize()")
        self._sync_streams(device)
        _base.raise_unobserved(device)

    def pending(self) -> int:
        return 0

    def drain(self, timeout: float | None = None, call: str = "drain()") -> bool:
        _base.check_not_in_op(call)  # as the threaded engine, so programs behave alike on both
        self._sync_streams()
        return True

    def set_max_pending(self, n: int | None) -> None:
        pass

    def reset_lanes(self) -> None:
        self._checked.clear()

    def shutdown(self, timeout: float) -> None:
        pass
