"""Dependency tracking: the var queues. Plain data structures, no threads.

Every var keeps three things:

- ``_reading``: how many granted reads have not finished;
- ``_writing``: whether a granted write has not finished;
- ``_queue``: the requests not yet granted, as ``(op, is_write)`` in push order.

(``append`` also counts the writes pushed to a var, ``_writes_pushed``, in the
loop it walks anyway: the waits compare it with ``version``. The rules below
never read it.)

The rules, for one var:

- a read is granted at once when no write is granted or queued before it;
  any number of reads can be granted together;
- a write is granted when nothing is granted and nothing is queued before it;
- when a write finishes, the reads at the head of the queue are granted
  together; if the head is a write, it is granted alone;
- when the last granted read finishes, the write at the head is granted.
  (The head of a queue with no write granted is always a write: a read can only
  be queued behind a write.)

An op is ready when each of its vars has granted it (``op.pending`` counts the
vars still to grant). ``op.reads`` and ``op.writes`` never share a var: a var
an op both reads and writes is in ``writes`` only (``_args.split``), so it is
ordered as a write. Nothing else of an op matters here: what ran, what
failed, which versions finished is the policies' business (``_outcome.py``).

Worked example. Three ops are pushed in this order (``A`` and ``B`` are vars)::

    op1: writes A            A: writing=True                      op1 ready
    op2: reads A, writes B   A: queue=[op2 r]   B: writing=True   op2 waits for A
    op3: reads A             A: queue=[op2 r, op3 r]              op3 waits for A
    op4: writes A            A: queue=[op2 r, op3 r, op4 w]       op4 waits for A

    op1 finishes  -> A grants op2 and op3 together (reading=2): both ready
    op3 finishes  -> A: reading=1, op4 still waits
    op2 finishes  -> A: reading=0, grants op4

op2 and op3 run at the same time; op4 (a write) waits for both reads pushed
before it, and neither read ever sees op4's value: the order of the program
is kept.

Because every op appends to all its vars in one step, under one lock, the
per-var queues agree on one global push order, so no cycle (deadlock) can form.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from autopar.engine._op import Op
    from autopar.engine._var import Var


class Holder(Protocol):
    """What ``release`` reads of an op: its vars (an ``Op``, or a small op run now: ``_bulk.py``)."""

    reads: tuple[Var, ...]
    writes: tuple[Var, ...]


def append(op: Op) -> bool:
    """Enqueue ``op`` on the queues of its vars (and count its writes pushed to each,
    ``Var.pending_writes``); return True when it is ready at once."""
    pending = 0
    for var in op.reads:
        if not var._writing and not var._queue:
            var._reading += 1
        else:
            _queue_of(var).append((op, False))
            pending += 1
    for var in op.writes:
        var._writes_pushed += 1
        if not var._writing and not var._reading and not var._queue:
            var._writing = True
        else:
            _queue_of(var).append((op, True))
            pending += 1
    op.pending = pending
    return pending == 0


def _queue_of(var: Var) -> deque[tuple[Op, bool]]:
    queue = var._queue
    if queue is None:
        queue = var._queue = deque()
    return queue


def release(op: Holder, ready: list[Op]) -> None:
    """``op`` has finished: release its vars and append the ops now ready to ``ready``."""
    for var in op.reads:
        var._reading -= 1
        queue = var._queue
        if not var._reading and queue:
            writer = queue.popleft()[0]
            var._writing = True
            writer.pending -= 1
            if not writer.pending:
                ready.append(writer)
    for var in op.writes:
        var._writing = False
        queue = var._queue
        while queue and not queue[0][1]:
            reader = queue.popleft()[0]
            var._reading += 1
            reader.pending -= 1
            if not reader.pending:
                ready.append(reader)
        if queue and not var._reading:
            writer = queue.popleft()[0]
            var._writing = True
            writer.pending -= 1
            if not writer.pending:
                ready.append(writer)
