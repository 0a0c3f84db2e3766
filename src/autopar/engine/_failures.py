"""Failures (the contract's failure rules): which one stops an op, and which ones ``waitall`` still owes.

A failed op stores one :class:`Failure` on each var it writes. An op that
reads a failed var (or writes one it also reads) is *skipped* and its writes
carry the same Failure object, so one error raised once is one failure,
however far it flowed. An op that only overwrites a failed var runs, and
clears the failure when it succeeds (``_outcome.py`` stores both).

Failures not yet raised by a read wait in ``_unobserved`` (in the order they
happened) for ``waitall``/``synchronize``, each raised at most once.
"""

from __future__ import annotations

import threading
import traceback

from autopar.devices import Device
from autopar.engine._op import Op
from autopar.engine._var import Failure, Var

_lock = threading.Lock()
_unobserved: dict[Failure, None] = {}
# Until the first failure, no var can hold one, and schedulers skip the check.
# Set under the engine lock, read under it: a check never misses a failure
# stored before it.
seen = False


def first_failure(op: Op) -> Failure | None:
    """The failure that stops ``op``: one on a var it reads, or writes and reads.

    None for a bulk op: each small op in it is stopped, or not, by its own inputs (``_bulk.py``;
    a captured segment, each step: ``autopar/_capture/_failed.py``)."""
    if op.bulk:
        return None
    for var in op.reads:
        if var.failure is not None:
            return var.failure
    for var in op.rw:
        if var.failure is not None:
            return var.failure
    return None


def new(op: Op, error: BaseException, origin: str = "") -> Failure:
    """``error`` failed ``op``: a new failure, owed to ``waitall`` until observed."""
    return new_named(op.name, op.device, error, origin)


def new_named(name: str, device: Device, error: BaseException, origin: str = "") -> Failure:
    """``error`` failed the op called ``name`` on ``device`` (one that has no ``Op``: ``_bulk.py``).

    The frames of its traceback (and of the exceptions chained to it) lose their
    locals: a failure nobody reads may wait long for ``waitall``, and the op's
    locals (its tensors) must not wait with it. The exception, its message and
    the traceback's lines are kept."""
    global seen
    seen = True
    _drop_locals(error)
    failure = Failure(name, device, error, origin)
    with _lock:
        _unobserved[failure] = None
    return failure


def _drop_locals(error: BaseException) -> None:
    chain: set[int] = set()
    item: BaseException | None = error
    while item is not None and id(item) not in chain:
        chain.add(id(item))
        if item.__traceback__ is not None:
            traceback.clear_frames(item.__traceback__)  # skips a frame still running
        item = item.__cause__ or item.__context__


def raise_for_var(var: Var) -> None:
    """A blocking read of ``var``: raise its failure (every time), marking it observed."""
    failure = var.failure
    if failure is not None:
        mark_observed(failure)
        raise failure.exception()


def raised_here(op: Op) -> None:
    """``op``'s own error (a Ctrl-C in an op run on the caller) is being raised to the caller now:
    it is observed, and ``waitall`` does not raise it again (contract, failures rule 4, §4.6: raised once)."""
    if op.failure is not None:
        mark_observed(op.failure)


def mark_observed(failure: Failure) -> None:
    with _lock:
        failure.observed = True
        _unobserved.pop(failure, None)


def raise_unobserved(device: Device | None = None) -> None:
    """Raise the first failure no read has raised (on ``device``, or any); clear the rest."""
    with _lock:
        if not _unobserved:
            return
        if device is None:
            chosen = list(_unobserved)
        else:
            chosen = [f for f in _unobserved if f.device == device]
        for failure in chosen:
            failure.observed = True
            del _unobserved[failure]
    if chosen:
        raise chosen[0].exception()


def unobserved() -> list[Failure]:
    with _lock:
        return list(_unobserved)


def after_fork() -> None:
    """In a forked child: a fresh lock (another thread may have held this one), and no failure owed:
    the parent raises its own."""
    global _lock
    _lock = threading.Lock()
    _unobserved.clear()


def forget_unobserved() -> None:
    """Drop every owed failure (tests start clean)."""
    with _lock:
        _unobserved.clear()
