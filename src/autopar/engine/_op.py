"""Ops: one pushed function with the vars it reads and writes."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autopar.devices import Device
    from autopar.engine._var import Failure, Var


class OpState(enum.Enum):
    WAITING = "waiting"  # pushed; some var has not granted it yet
    READY = "ready"  # every var granted; queued on its lane
    RUNNING = "running"
    DONE = "done"  # finished (on a stream lane: issued; the device may still be working)
    FAILED = "failed"  # its function raised
    SKIPPED = "skipped"  # an input or output had failed, so it did not run
    CANCELLED = "cancelled"  # dropped at interpreter exit


FINISHED = frozenset({OpState.DONE, OpState.FAILED, OpState.SKIPPED, OpState.CANCELLED})


class Op:
    """A pushed operation. ``repr`` shows its name, device, lane and state.

    ``t_push``, ``t_start`` and ``t_end`` are ``time.perf_counter_ns()`` values,
    recorded only while an engine listener (the profiler) is attached; 0 otherwise.
    """

    __slots__ = (
        "fn",
        "reads",
        "writes",
        "device",
        "lane",
        "priority",
        "seq",
        "state",
        "pending",
        "failure",
        "event",
        "wait_events",
        "t_push",
        "t_start",
        "t_end",
        "_name",
        "_lane",
    )

    def __init__(
        self,
        fn: Callable[[], Any],
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        device: Device,
        lane: str,
        priority: int,
        name: str | None,
        seq: int,
    ) -> None:
        self.fn = fn
        self.reads = reads
        self.writes = writes
        self.device = device
        self.lane = lane
        self.priority = priority
        self.seq = seq
        self._name = name
        self.state = OpState.WAITING
        self.pending = 0
        self.failure: Failure | None = None
        self.event: Any = None
        self.wait_events: Any = None
        self.t_push = 0
        self.t_start = 0
        self.t_end = 0
        self._lane: Any = None

    @property
    def name(self) -> str:
        if self._name is None:
            fn = self.fn
            self._name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
        return self._name

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    def __repr__(self) -> str:
        extra = ""
        if self.failure is not None:
            extra = f" error={type(self.failure.error).__name__}"
        return f"<Op {self.name!r} on {self.device}/{self.lane} state={self.state.value}{extra}>"
