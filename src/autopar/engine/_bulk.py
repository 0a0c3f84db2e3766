"""Small ops: run at once when they can, else bulked into one engine op (MXNet's bulk execution).

Design note
-----------
The array layer hands its *small* trusted kernels -- work at most
``arrays._plan.TINY_WORK``, on a host lane -- to :meth:`Bulking.push_small`
instead of ``push_checked``. An engine op costs more than such a kernel
(an ``Op``, two lock round trips, a worker's wake-up), so a small op takes
one of two cheaper ways, decided under the engine lock:

**Run now.** When every var it reads and writes is free (no grant, nothing
queued, no device work in flight, no failure on what it reads), its lane has
nothing queued or running and the caller is in no op, it runs on the calling
thread without becoming an ``Op``, in one of two ways:

- a *pure* op -- its caller promises that the kernel runs no Python code but
  its own and waits for nothing: a torch kernel of plain tensors with no
  torch mode active (the array layer's lean paths decide it per call) -- runs
  *under* the engine lock, taken once: nobody can queue behind its vars
  meanwhile, so they are neither held nor passed on, only their versions
  moved and the outcome stored. The array layer promises it only for work
  up to ``THREADED_WORK`` (4,096: a few microseconds of kernel), so other
  threads never wait long for the lock; on the 2-core machine this made ``x +=
  2*y`` 1.76x torch eager instead of 1.92x in A/B runs. The array layer
  clears :data:`pure_allowed` for good (``engine.forbid_pure_kernels``) once
  a tensor subclass enters autopar: its ``__torch_function__`` may run any
  Python code, for instance wait for a thread that pushes work, which would
  then wait for the lock;
- any other op is never run under the lock -- it may take long or wait for
  another thread: its vars are granted in the tracker as an op's would be
  (``_writes_pushed``, ``_reading``/``_writing``), the lock is released while
  the kernel runs and taken again to pass the vars on, move their versions
  and store the outcome: the same steps ``_outcome.record`` and
  ``_tracker.release`` take, in the same order. A pure op that raised takes
  this way after its kernel (the failure is made off the lock).

Vars made for the op and seen by no one else yet (``fresh``: a new result's)
are neither checked nor held, only counted and finished. An exception is the
op's failure on the vars it writes (``_failures.new_named``, owed to
``waitall`` like any other); a ``KeyboardInterrupt`` raised by the kernel is
too, and is raised again to the caller once recorded. A Ctrl-C *signalled*
while the kernel runs is deferred like any in ``push_small`` (a protected
entry point, ``_ki``), and raised when it returns: the op has completed by
then, one of the two outcomes contract, failures rule 6 allows. While
someone listens (the profiler), an op that could run now is pushed as an
inline op instead, so it is an ``Op`` the listener sees.

**Bulk.** Otherwise it joins the *open segment*: one engine op (a
:class:`Segment` as its function) that stands for several small ops, run
one after the other by the lane's worker. The segment rule:

- a segment is open from its push until *any other op* is pushed
  (``_submit`` closes it) -- so it only ever grows with the ops pushed right
  after it, and every op that reads its results was pushed after it closed;
- an op joins only the open segment of its own device and lane, before the
  segment has started (state ``waiting`` or ``ready``), while nobody waits
  for a var or for idleness (``wait_for_var``, ``waitall`` on another thread:
  a waiter is never made to wait for ops pushed after it began), and while the
  segment holds fewer than :data:`MAX_OPS` (MXNet's default segment size);
- an op that writes a var the segment only reads closes it (the segment's
  read was granted in an earlier place of that var's queue than a write may
  take); a segment already ready takes only ops whose new vars are free now.

Joining appends the op's new vars to the segment op's ``reads``/``writes``
and requests them from the tracker at the end of their queues -- the place
the op itself would have taken, since nothing was pushed in between. So the
var queues see one op pushed at the time of its last member, which is what
step-by-step execution orders; ``_writes_pushed`` counts a var once per
segment, as ``version`` will.

the contract's failure rules per member, not per segment: the engine never skips a segment (its
op has ``bulk`` set: ``_failures.first_failure`` passes it, and
``_outcome.record`` leaves its vars' failures to it); when it runs, a member
that reads a failed var is skipped and its writes take that failure, a member
that raises fails its own writes with a new failure named after it, and the
others run -- so an independent op in the same segment still succeeds, as it
would alone. Reads observe the same values as without bulking: the segment's
vars are released only when all its members have run.

The profiler sees a segment as one op named ``bulk of N: a, b, ...``; while
someone listens, a small op that could run now is pushed as an inline op
instead (an ``Op`` the listener sees), so every one of them is in the
timeline, alone or in a segment.

**One intra-op thread.** Small ops run with one torch intra-op thread (the
caller's or the worker's setting is put back after): waking a second thread
costs more than such a kernel saves, and on a loaded machine a wake-up can
wait a whole time slice.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from autopar.devices import Device
from autopar.engine import _args, _failures, _hooks, _ki, _run, _tracker
from autopar.engine._op import Op, OpState
from autopar.engine._segment import Segment, Member
from autopar.engine._var import Var

if TYPE_CHECKING:
    from autopar.engine._lanes import Lane

# Cleared for good by engine.forbid_pure_kernels (the array layer, once a kernel may run Python code).
pure_allowed = True
MAX_OPS = 15  # ops per segment (MXNet's MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN default)

_WAITING = OpState.WAITING
_READY = OpState.READY
_LOCAL = _run._local


class _Grant:
    """The vars of an op run now, held in the tracker while its kernel runs."""

    __slots__ = ("reads", "writes")

    def __init__(self, reads: tuple[Var, ...], writes: tuple[Var, ...]) -> None:
        self.reads = reads
        self.writes = writes


def _on_one_thread(fn: Callable[..., Any], *args: Any) -> None:
    torch: Any = sys.modules["torch"]
    threads = torch.get_num_threads()
    if threads > 1:
        torch.set_num_threads(1)
        try:
            fn(*args)
        finally:
            torch.set_num_threads(threads)
    else:
        fn(*args)


class Bulking:
    """``push_small`` for the threaded policy (a base of ``ThreadedEngine``)."""

    _lock: Any
    _lanes: dict[Device, dict[str, Lane]]
    _pending: int
    _max_pending: int
    _var_waiters: int
    _idle_waiters: int
    _streams_used: bool
    _progress: Any
    _seq: Any
    _open_segment: Segment | None = None  # closed by every _submit
    _now: int  # small ops running now on their callers' threads
    _fork_waiting: bool  # a fork waits for them to end (_lifecycle.lock_for_fork)
    # The policy's own (this class comes last among its bases):
    push_checked: Callable[..., Op]
    _make_lane: Callable[[Device, str], Any]
    _submit: Callable[[Op, bool], None]
    _advance_all_locked: Callable[[list[Op]], None]

    @_ki.protect
    def push_small(self, fn: Callable[..., Any], args: tuple[Any, ...], reads: tuple[Var, ...],
                   writes: tuple[Var, ...], device: Device, name: str, lane: str = "compute",
                   one_thread: bool = False, rw: tuple[Var, ...] | None = None,
                   fresh: tuple[Var, ...] = (), pure: bool = False) -> None:  # fmt: skip
        """Push ``fn(*args)``, a small trusted kernel: run it now, or add it to the open segment, or open one.

        ``reads`` and ``writes`` are tuples of vars that may overlap, as for
        ``push_checked`` -- unless the caller gives ``rw``, the vars of
        ``writes`` it also reads, and then ``reads`` holds only those it reads
        and does not write; ``device`` a Device. ``one_thread``: the kernel is
        large enough that torch could split it across intra-op threads; it
        runs on one (module note). ``fresh``: more vars it writes, made for
        this op and seen by no one else yet (a new result's): an op run now
        neither checks nor holds them. ``pure``: the caller promises that
        ``fn`` runs no Python code beyond its own and waits for nothing (a
        torch kernel of plain tensors, no torch mode active): run now, it
        runs under the engine lock (module note).
        """
        try:
            if rw is None:
                reads, writes, rw = _args.split(reads, writes)
            lanes = self._lanes.get(device)
            lane_obj = lanes.get(lane) if lanes is not None else None
            if lane_obj is None:
                lane_obj = self._make_lane(device, lane)
            lock = self._lock
            error: BaseException | None = None
            lock.acquire()
            try:
                free = not lane_obj.heap and lane_obj.running is None and lane_obj.stream is None and _LOCAL.op is None
                if free:  # every var grantable now, none failed that the op reads, no device work in flight
                    for var in reads:
                        if var._writing or var._queue or var.failure is not None or var._writer is not None:
                            free = False
                            break
                    else:
                        for var in writes:
                            if var._writing or var._reading or var._queue or var._writer is not None or var._readers:
                                free = False
                                break
                        else:
                            for var in rw:
                                if var.failure is not None:
                                    free = False
                if not free:
                    self._bulk_locked(fn, args, reads, (*writes, *fresh) if fresh else writes, rw, device, name, lane,
                                      lane_obj, one_thread)  # fmt: skip
                    return
                watched = _hooks.listeners  # a tuple: empty while nobody listens
                if watched:
                    pass  # pushed as an op below, off the lock
                elif pure and pure_allowed:  # run under the lock (module note): nobody can queue behind it meanwhile
                    try:  # still protected: a Ctrl-C signalled meanwhile is raised once the op is recorded
                        if one_thread:
                            _on_one_thread(fn, *args)
                        else:
                            fn(*args)
                    except BaseException as raised:  # its failure: recorded below, off the lock, as for any
                        error = raised
                    else:  # its outcome, as _outcome.record stores one; its vars were never held
                        wake = False
                        for var in writes:
                            if var.failure is not None:
                                var.failure = None  # an overwrite that succeeded clears it (contract, failures rule 2)
                            var._writes_pushed += 1
                            var.version += 1
                            if var._waiters:
                                wake = True
                        for var in fresh:
                            var._writes_pushed += 1
                            var.version += 1
                        if wake:
                            self._progress.notify_all()
                        return
                if not watched:  # hold the vars as an op granted them would, while the lock is off
                    for var in reads:
                        var._reading += 1
                    for var in writes:
                        var._writing = True
                        var._writes_pushed += 1
                    self._now += 1  # a fork waits for it (_lifecycle.lock_for_fork)
            finally:
                lock.release()
            if watched:  # someone watches every op: this one too, as an op run inline
                call = partial(fn, *args)
                self.push_checked(partial(_on_one_thread, call) if one_thread else call, (*reads, *rw),
                                  (*writes, *fresh), device, 0, name, lane, True)  # fmt: skip
                return
            if error is None:  # not run yet, and never under the lock: it may take long, or wait for another thread
                try:  # still protected: a Ctrl-C signalled meanwhile is raised once the op is recorded (contract, failures rule 6)
                    if one_thread:
                        _on_one_thread(fn, *args)
                    else:
                        fn(*args)
                except BaseException as raised:  # the op's failure; a KeyboardInterrupt is raised again once recorded
                    error = raised
            failure = None if error is None else _failures.new_named(name, device, error)
            for var in fresh:  # nobody else has it: no lock needed to finish it
                var._writes_pushed += 1
                if failure is not None:
                    var.failure = failure
                var.version += 1
            lock.acquire()
            try:
                queued = False
                for var in reads:
                    var._reading -= 1
                    if var._queue:
                        queued = True
                wake = False
                for var in writes:
                    var._writing = False
                    if var._queue:
                        queued = True
                    if failure is not None:  # its outcome, as _outcome.record stores one
                        var.failure = failure
                    elif var.failure is not None:
                        var.failure = None  # an overwrite that succeeded clears it (contract, failures rule 2)
                    var.version += 1
                    if var._waiters:
                        wake = True
                if queued:  # someone pushed behind it meanwhile: grant them, as _tracker.release would
                    self._pass_on_locked(reads, writes)
                self._now -= 1
                if wake or (self._fork_waiting and not self._now):
                    self._progress.notify_all()
            finally:
                lock.release()
            if error is not None and not isinstance(error, Exception):
                raise error  # a Ctrl-C (or SystemExit) in an op run here reaches the caller, recorded
        finally:
            if _ki.deferred:
                _ki.check()

    def _pass_on_locked(self, reads: tuple[Var, ...], writes: tuple[Var, ...]) -> None:
        """Grant the vars of an op run now to the ops queued on them (its own hold already dropped)."""
        for var in reads:
            var._reading += 1  # held again for a moment, so _tracker.release grants as for any op
        for var in writes:
            var._writing = True
        ready: list[Op] = []
        _tracker.release(_Grant(reads, writes), ready)
        if ready:
            self._advance_all_locked(ready)

    def _bulk_locked(self, fn: Callable[..., Any], args: tuple[Any, ...], reads: tuple[Var, ...],
                     writes: tuple[Var, ...], rw: tuple[Var, ...], device: Device, name: str, lane: str,
                     lane_obj: Any, one_thread: bool) -> None:  # fmt: skip
        """The small op cannot run now: it joins the open segment, or opens one (engine lock held)."""
        member = Member(fn, args, reads, writes, rw, name)
        segment = self._open_segment
        if segment is not None and self._join(segment, member, device, lane):
            segment.one_thread = segment.one_thread or one_thread
            return
        segment = Segment(member, one_thread)
        op = Op(segment, reads, writes, device, lane, 0, name, next(self._seq), rw, lane_obj)
        op.bulk = True
        segment.op = op
        self._submit(op, False)
        self._open_segment = segment  # under the lock, right after its _submit: the last op pushed

    def _join(self, segment: Segment, member: Member, device: Device, lane: str) -> bool:
        """Add ``member`` to ``segment`` if the segment rule allows it (module note). Engine lock held."""
        reads, writes, rw = member.reads, member.writes, member.rw
        op = segment.op
        if op is None or (op.state is not _WAITING and op.state is not _READY) or op.lane != lane:
            return False
        if len(segment.members) >= MAX_OPS or self._var_waiters or self._idle_waiters or op.device != device:
            return False
        held = segment.held
        started = op.state is _READY  # queued on its lane: new vars must be granted at once
        new_reads: list[Var] = []
        new_writes: list[Var] = []
        for group in (reads, rw):
            for var in group:
                if var not in held:
                    if started and (var._writing or var._queue or var._writer is not None):
                        return False
                    new_reads.append(var)
        for var in (*rw, *writes):
            written = held.get(var)
            if written is None:
                if var not in new_writes:
                    if started and (var._writing or var._reading or var._queue or var._writer is not None
                                    or var._readers):  # fmt: skip
                        return False
                    new_writes.append(var)
            elif not written:
                return False  # the segment only reads it: a write here would take the wrong place
        new_reads = [v for v in new_reads if v not in new_writes]
        for var in new_reads:
            held[var] = False
            if not var._writing and not var._queue:
                var._reading += 1
            else:
                _tracker._queue_of(var).append((op, False))
                op.pending += 1
        for var in new_writes:
            held[var] = True
            var._writes_pushed += 1
            if not var._writing and not var._reading and not var._queue:
                var._writing = True
            else:
                _tracker._queue_of(var).append((op, True))
                op.pending += 1
        if new_reads:
            op.reads = (*op.reads, *new_reads)
        if new_writes:
            op.writes = (*op.writes, *new_writes)
        segment.members.append(member)
        return True


class NoBulking:
    """``push_small`` for the naive policy: a plain push, run at once (it is the reference)."""

    push_checked: Callable[[Callable[[], Any], tuple[Var, ...], tuple[Var, ...], Device, int, str | None, str, bool], Op]

    def push_small(self, fn: Callable[..., Any], args: tuple[Any, ...], reads: tuple[Var, ...],
                   writes: tuple[Var, ...], device: Device, name: str, lane: str = "compute",
                   one_thread: bool = False, rw: tuple[Var, ...] | None = None,
                   fresh: tuple[Var, ...] = (), pure: bool = False) -> None:  # fmt: skip
        self.push_checked(partial(fn, *args) if args else fn, (*reads, *rw) if rw else reads, (*writes, *fresh),
                          device, 0, name, lane, True)  # fmt: skip
