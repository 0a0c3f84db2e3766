"""Ops: one pushed function with the vars it reads and writes, and its completion."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autopar.devices import Device
    from autopar.engine._var import Failure, Var


class OpState(enum.Enum):
    WAITING = "waiting"  # pushed; some var has not granted it yet
    READY = "ready"  # every var granted; queued on its lane (or waiting for device work it depends on)
    RUNNING = "running"  # its function is running
    ISSUED = "issued"  # its function returned; it finishes later (device work, or push_async's complete)
    DONE = "done"
    FAILED = "failed"  # it raised (or its device work, or an op it read from on the device, failed)
    SKIPPED = "skipped"  # an input had failed, so it did not run
    CANCELLED = "cancelled"  # dropped at interpreter exit


FINISHED = frozenset({OpState.DONE, OpState.FAILED, OpState.SKIPPED, OpState.CANCELLED})


class Op:
    """A pushed operation. ``repr`` shows its name, device, lane and state.

    ``reads`` holds the vars it only reads, ``writes`` every var it writes, and
    ``rw`` those of ``writes`` it also reads (contract, failures rule 2: a failure on a var it
    reads stops it; a var it only writes is an overwrite). ``t_push``,
    ``t_start`` and ``t_end`` are ``time.perf_counter_ns()`` values, recorded
    only while an engine listener (the profiler) is attached; 0 otherwise. For
    an op on a stream lane, ``t_start``/``t_end`` are when its device work
    started and ended, read from events.
    """

    # The fields every op has are slots; those only ops with device work in
    # flight, push_async ops or failing ops need are class-level defaults, set
    # per op in a __dict__ made on first assignment: a plain op costs less.
    __slots__ = (
        "fn",
        "reads",
        "writes",
        "device",
        "lane",
        "priority",
        "seq",
        "state",
        "pending",  # vars that have not granted it yet (set by _tracker.append)
        "_name",
        "_lane",
        "__dict__",
        "__weakref__",
    )

    pending: int  # a slot, set by _tracker.append before it is read
    rw: tuple[Var, ...] = ()
    failure: Failure | None = None

    error: BaseException | Failure | None = None  # what it will fail with, known before it finishes
    completion: Completion | None = None  # push_async's complete
    event: Any = None  # stream lanes: the event after its device work
    start_event: Any = None  # stream lanes, while profiling: the event before it
    wait_events: list[Any] | None = None  # stream lanes: events of other lanes to wait for
    upstream: list[Op] | None = None  # ops in flight on the device whose output it reads
    dependents: list[Op] | None = None  # ops waiting for this one to finish (_device.py)
    blockers = 0  # how many ops this one waits for, that way
    released = False  # its vars were passed on before it finished (device work in flight)
    bulk = False  # it stands for several steps, each with its own outcome (_bulk.py; a captured segment)
    t_push = 0
    t_start = 0
    t_end = 0

    def __init__(
        self,
        fn: Callable[..., Any] | None,
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        device: Device,
        lane: str,
        priority: int,
        name: str | None,
        seq: int,
        rw: tuple[Var, ...] = (),
        lane_obj: Any = None,
    ) -> None:
        self.fn = fn
        self.reads = reads
        self.writes = writes
        if rw:
            self.rw = rw
        self.device = device
        self.lane = lane
        self.priority = priority
        self.seq = seq
        self._name = name
        self.state = OpState.WAITING
        self._lane = lane_obj  # the policy's lane object

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


class Completion:
    """``complete(error=None)``: what a :func:`~autopar.engine.push_async` function receives.

    Call it exactly once, from any thread, when the op's work is done (with the
    exception that failed it, if any). The op keeps its vars until then. A
    second call raises ``RuntimeError``, and so does a call after the op's
    function itself raised (that error is the op's failure already).
    """

    __slots__ = ("op", "called", "_on_complete")

    def __init__(self, op: Op, on_complete: Callable[[Completion, BaseException | None], None]) -> None:
        self.op = op
        self.called = False
        self._on_complete = on_complete

    def __call__(self, error: BaseException | None = None) -> None:
        if error is not None and not isinstance(error, BaseException):
            raise TypeError(f"complete: error must be an exception instance or None; got {error!r}")
        self._on_complete(self, error)

    def __repr__(self) -> str:
        return f"<complete of {self.op!r}{' (called)' if self.called else ''}>"


def claim(completion: Completion, error: BaseException | None) -> bool:
    """Check a ``complete()`` call (engine lock held); True when the op finishes now.

    Raises on a second call, or after the op's function raised. A call made
    while the function is still running is kept in ``op.error`` for when it
    returns; a call after the op was cancelled at exit is ignored.
    """
    op = completion.op
    if completion.called:
        raise RuntimeError(f"complete() called twice for {op!r}; an op completes exactly once")
    if op.state is OpState.CANCELLED:
        return False
    if op.state in FINISHED:
        raise RuntimeError(
            f"complete() called for {op!r}, which has already finished: its function raised, "
            f"and that error is its failure"
        )
    completion.called = True
    if op.state is OpState.ISSUED:
        return True
    op.error = error  # its function has not returned yet: finish when it does
    return False
