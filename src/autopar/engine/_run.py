"""Running an op's function: the one function every path of both policies uses.

``run(op, stream)`` calls the op's function on the calling thread -- a lane
worker, or the pusher for an op run inline or by the naive policy -- never with
the engine lock held, and returns what it raised (``None`` if nothing). It
never raises itself: whatever happens (a ``BaseException``, a Ctrl-C that
lands right after the function returned, a listener that raises, a stream
call that fails) becomes the returned error, which the caller records as the
op's outcome (``_outcome.record``). Only the policy decides what happens next
(a ``KeyboardInterrupt`` from an op run on the caller's thread is raised
again to the caller, after the bookkeeping).

On a stream lane ``run`` *issues* the op: it makes the lane's stream wait for
the events the op depends on, calls the function with the stream current (so
its kernels queue there), and records the event that completes after them in
``op.event`` (and, while profiling, one before them in ``op.start_event``).

While the function runs, ``current_op()`` names the op, so blocking calls made
inside it raise :class:`BlockingCallError` instead of waiting for themselves.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from autopar.engine import _failures, _hooks, _ki
from autopar.engine._op import Op
from autopar.engine._var import Failure
from autopar.errors import BlockingCallError

GROUP = "group"  # the lane of the marker op a group of pushes makes current (_group.py)


class _Local(threading.local):
    op: Op | None = None  # a class default: reading it on a new thread raises nothing (fast)
    # Set while ``op`` is not what runs here but what this thread is inside of: a listener told
    # about it under the engine lock, or a group of pushes (``_group.py``). Blocking calls name it.
    where = ""


_local = _Local()


def current_op() -> Op | None:
    """The op whose function is running on this thread, if any."""
    return _local.op


def check_not_in_op(call: str) -> None:
    """Raise BlockingCallError when a blocking ``call`` is made inside an engine op."""
    local = _local
    op = local.op
    if op is not None:
        if local.where:
            inside = local.where if op.lane == GROUP else f"{local.where} for {op.name!r}"
            raise BlockingCallError(
                f"{call} was called inside {inside}, where nothing may wait: it would wait for work "
                f"that cannot start until this returns. Read the value after it"
            )
        raise BlockingCallError(
            f"{call} was called inside engine operation {op.name!r} on {op.device}/{op.lane}; "
            f"it would wait for work queued behind that operation. Push the code that needs "
            f"the value as another operation that reads it (engine.push(fn, reads=...)), "
            f"or call {call} outside the operation"
        )


def run(op: Op, stream: Any = None) -> BaseException | Failure | None:
    """Run ``op``'s function here (issue it, on a stream lane); return its error."""
    if _hooks.listeners:
        op.t_start = time.perf_counter_ns()
        fault = _hooks.call("op_started", op)
        if fault is not None:
            return _failures.new(op, *fault)
    if op.error is not None:  # failed before it ran (a listener raised at push)
        return op.error
    local = _local
    local.op = op  # never nested: an op runs on the caller only when the caller is in none
    error: BaseException | Failure | None
    try:
        if stream is None:
            error = _call(op)
        else:
            error = _issue(op, stream)
    except BaseException as escaped:  # a Ctrl-C that landed in _call after the function returned
        error = escaped
    finally:
        local.op = None
    if _hooks.listeners and stream is None:
        op.t_end = time.perf_counter_ns()
    return error


@_ki.unprotect
def _call(op: Op) -> BaseException | None:
    fn = op.fn
    assert fn is not None
    try:
        if op.completion is None:
            fn()
        else:
            fn(op.completion)
    except BaseException as error:  # stored as the op's failure; the policy re-raises a Ctrl-C
        return error
    return None


def _issue(op: Op, stream: Any) -> BaseException | Failure | None:
    try:
        if op.wait_events:
            for event in op.wait_events:
                stream.wait_event(event)
        if _hooks.listeners:
            op.start_event = stream.record_event(timing=True)
    except BaseException as fault:  # a broken stream: the op fails before it is issued
        return _failures.new(op, fault, f"the {op.lane} stream of {op.device} (wait_event)")
    error: BaseException | Failure | None = _call(op)
    if op.completion is not None:  # push_async: the event is recorded when complete() is called
        return error
    try:
        op.event = stream.record_event(timing=op.start_event is not None)
    except BaseException as fault:  # no event: the op fails now, and nothing waits for its kernels
        op.event = None
        if error is None:
            return _failures.new(op, fault, f"the {op.lane} stream of {op.device} (record_event)")
    return error
