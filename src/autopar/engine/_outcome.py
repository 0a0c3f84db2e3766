"""Recording how an op ended: the one place every path of both policies writes an outcome.

``record`` sets the op's state and failure, tells the listeners, and stores
the outcome on the vars the op writes: its failure, or -- when it succeeded
-- no failure (an overwrite clears one, contract, failures rule 2); and each var's
``version`` moves on. It runs with the engine lock held, before the op's vars
are passed on, so an op granted a var next always sees the outcome.

An op whose vars were passed on before it finished (device work in flight,
``op.released``) owns the outcome of a var only while it is still that var's
last writer on the device: a later op that wrote the var since has the last
word on it.
"""

from __future__ import annotations

import time

from autopar.engine import _failures, _hooks, _run
from autopar.engine._op import Op, OpState
from autopar.engine._var import Failure

DONE = OpState.DONE
FAILED = OpState.FAILED


def record(op: Op, state: OpState, failure: Failure | None) -> None:
    """``op`` ended in ``state`` (DONE, FAILED, SKIPPED or CANCELLED) with ``failure``."""
    op.state = state
    if failure is not None:
        op.failure = failure
    if _hooks.listeners:
        if not op.t_end:
            op.t_end = time.perf_counter_ns()
        # The engine lock is held: a listener that blocks (reads an array, waits) would wait for
        # this very op. As inside an op, such a call raises BlockingCallError instead.
        local = _run._local
        outer, local.op, local.where = local.op, op, "an engine listener's op_finished"
        try:
            fault = _hooks.call("op_finished", op)
        finally:
            local.op, local.where = outer, ""
        if fault is not None and state is DONE:
            failure = op.failure = _failures.new(op, fault[0], fault[1])
            state = op.state = FAILED
    released = op.released
    for var in op.writes:
        if released:
            if var._writer is not op:
                var.version += 1
                continue
            var._writer = None
        if failure is not None:
            var.failure = failure
        elif var.failure is not None and not op.bulk:  # a bulk op's members stored their own outcomes
            var.failure = None
        var.version += 1
    if op._name is None:
        op.name  # noqa: B018 - resolve the name before the function is dropped
    op.fn = None  # nothing keeps what the function captured alive once it has run
    if op.completion is not None:
        op.completion = None


def error_state(op: Op, error: BaseException | Failure | None) -> tuple[OpState, Failure | None]:
    """The state and failure of ``op`` that ended with ``error`` (None: succeeded; a
    Failure: a fault outside its function, already made), or with the failure of
    an op in flight on the device whose output it read."""
    if error is not None:
        return FAILED, error if isinstance(error, Failure) else _failures.new(op, error)
    upstream = op.upstream
    if upstream:
        for up in upstream:
            if up.state is FAILED and up.failure is not None:
                return FAILED, up.failure
    return DONE, None
