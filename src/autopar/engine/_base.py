"""What every engine policy shares: argument checks, failure bookkeeping, the
blocking-call guard.

Failures (SPEC §4). A failed op stores one :class:`Failure` on each var it
writes. An op that reads or writes a failed var is *skipped* and its writes
carry the same Failure object, so one error raised once is one failure,
however far it flowed. Failures not yet raised by a read wait in
``_unobserved`` (in the order they happened) for ``waitall``/``synchronize``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from autopar.devices import Device, cpu
from autopar.engine._op import Op, OpState
from autopar.engine._var import Failure, Var
from autopar.errors import BlockingCallError

_local = threading.local()
_failures_lock = threading.Lock()
_unobserved: dict[Failure, None] = {}
# Until the first failure, no var can hold one, and schedulers skip the check.
failures_seen = False


def current_op() -> Op | None:
    """The op whose function is running on this thread, if any."""
    return getattr(_local, "op", None)


def set_current_op(op: Op | None) -> None:
    _local.op = op


def check_not_in_op(call: str) -> None:
    """Raise BlockingCallError when a blocking ``call`` is made inside an engine op."""
    op = getattr(_local, "op", None)
    if op is not None:
        raise BlockingCallError(
            f"{call} was called inside engine operation {op.name!r} on {op.device}/{op.lane}; "
            f"it would wait for work queued behind that operation. Push the code that needs "
            f"the value as another operation that reads it (engine.push(fn, reads=...)), "
            f"or call {call} outside the operation"
        )


_DEFAULT_DEVICE = cpu(0)  # cpu:0 always exists


def _var_tuple(items: Any, what: str) -> tuple[Var, ...]:
    if type(items) is Var:
        return (items,)
    out = items if type(items) is tuple else tuple(items)
    for item in out:
        if type(item) is not Var:
            raise TypeError(f"push: {what} must hold engine.Var objects; got {item!r} ({type(item).__name__})")
    return out


def dedupe(reads: tuple[Var, ...], writes: tuple[Var, ...]) -> tuple[tuple[Var, ...], tuple[Var, ...]]:
    """Drop repeated vars, and reads of vars also written (a var in both counts as written)."""
    if reads and (writes or len(reads) > 1):
        if len(reads) == 1 and len(writes) == 1:
            if reads[0] is writes[0]:
                reads = ()
        else:
            seen = set(writes)
            kept = []
            for var in reads:
                if var not in seen:
                    seen.add(var)
                    kept.append(var)
            if len(kept) != len(reads):
                reads = tuple(kept)
    if len(writes) > 1:
        unique = tuple(dict.fromkeys(writes))
        if len(unique) != len(writes):
            writes = unique
    return reads, writes


def normalize(
    fn: Callable[[], Any],
    reads: Iterable[Var],
    writes: Iterable[Var],
    device: Any,
    priority: int,
) -> tuple[tuple[Var, ...], tuple[Var, ...], Device]:
    """Check push's arguments; return reads (without written or repeated vars), writes, device."""
    if not callable(fn):
        raise TypeError(f"push: fn must be callable with no arguments; got {fn!r}")
    writes_t = _var_tuple(writes, "writes") if writes else ()
    reads_t = _var_tuple(reads, "reads") if reads else ()
    reads_t, writes_t = dedupe(reads_t, writes_t)
    if device is None:
        device = _DEFAULT_DEVICE
    elif type(device) is not Device:
        device = Device(device)
    if type(priority) is not int:
        raise TypeError(f"push: priority must be an int; got {priority!r}")
    return reads_t, writes_t, device


def first_failure(op: Op) -> Failure | None:
    for var in op.reads:
        if var.failure is not None:
            return var.failure
    for var in op.writes:
        if var.failure is not None:
            return var.failure
    return None


def fail(op: Op, error: BaseException) -> None:
    """``op``'s function raised ``error``: store a new failure on what it writes."""
    global failures_seen
    failures_seen = True
    failure = Failure(op.name, op.device, error)
    op.failure = failure
    op.state = OpState.FAILED
    for var in op.writes:
        var.failure = failure
    with _failures_lock:
        _unobserved[failure] = None


def skip(op: Op, failure: Failure) -> None:
    """``op`` touches a failed var: it does not run, and its writes carry ``failure``."""
    op.failure = failure
    op.state = OpState.SKIPPED
    for var in op.writes:
        var.failure = failure


def raise_for_var(var: Var) -> None:
    """A blocking read of ``var``: raise its failure (every time), marking it observed."""
    failure = var.failure
    if failure is not None:
        mark_observed(failure)
        raise failure.exception()


def mark_observed(failure: Failure) -> None:
    with _failures_lock:
        failure.observed = True
        _unobserved.pop(failure, None)


def raise_unobserved(device: Device | None = None) -> None:
    """Raise the first failure no read has raised (on ``device``, or any); clear the rest."""
    with _failures_lock:
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


def unobserved_count() -> int:
    with _failures_lock:
        return len(_unobserved)
