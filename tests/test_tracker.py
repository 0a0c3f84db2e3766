"""The var queues alone: no threads, no engine (MXNet's basic cases, by hand)."""

from __future__ import annotations

from autopar.devices import cpu
from autopar.engine import _tracker
from autopar.engine._op import Op
from autopar.engine._var import Var


def op(reads=(), writes=(), name="op"):  # type: ignore[no-untyped-def]
    return Op(lambda: None, tuple(reads), tuple(writes), cpu(0), "compute", 0, name, 0)


def finish(o):  # type: ignore[no-untyped-def]
    ready: list[Op] = []
    _tracker.release(o, ready)
    return ready


def test_reads_of_one_var_are_granted_together() -> None:
    a = Var()
    r1, r2 = op(reads=[a]), op(reads=[a])
    assert _tracker.append(r1) and _tracker.append(r2)
    assert a._reading == 2


def test_read_after_write_waits() -> None:
    #  w --> r
    a = Var()
    w, r = op(writes=[a]), op(reads=[a])
    assert _tracker.append(w)
    assert not _tracker.append(r)
    assert finish(w) == [r]
    assert a._reading == 1 and not a._writing


def test_write_after_read_waits_for_every_read() -> None:
    #  r1 --+
    #       +--> w
    #  r2 --+
    a = Var()
    r1, r2, w = op(reads=[a]), op(reads=[a]), op(writes=[a])
    assert _tracker.append(r1) and _tracker.append(r2)
    assert not _tracker.append(w)
    assert finish(r1) == []
    assert finish(r2) == [w]


def test_writes_run_in_push_order() -> None:
    a = Var()
    ws = [op(writes=[a], name=str(i)) for i in range(4)]
    assert _tracker.append(ws[0])
    assert not any(_tracker.append(w) for w in ws[1:])
    for i in range(3):
        assert finish(ws[i]) == [ws[i + 1]]
    assert finish(ws[3]) == []
    assert not a._writing and not a._queue


def test_reads_after_a_write_are_released_together_but_not_past_the_next_write() -> None:
    #  w1 --> r1, r2 --> w2 --> r3
    a = Var()
    w1, r1, r2, w2, r3 = op(writes=[a]), op(reads=[a]), op(reads=[a]), op(writes=[a]), op(reads=[a])
    assert _tracker.append(w1)
    for o in (r1, r2, w2, r3):
        assert not _tracker.append(o)
    assert finish(w1) == [r1, r2]
    assert finish(r2) == []
    assert finish(r1) == [w2]
    assert finish(w2) == [r3]


def test_op_waits_for_all_its_vars() -> None:
    #  wa --+
    #       +--> c (reads a, b)
    #  wb --+
    a, b = Var(), Var()
    wa, wb, c = op(writes=[a]), op(writes=[b]), op(reads=[a, b])
    _tracker.append(wa), _tracker.append(wb)
    assert not _tracker.append(c) and c.pending == 2
    assert finish(wa) == []
    assert finish(wb) == [c]


def test_worked_example_of_the_design_note() -> None:
    a, b = Var("A"), Var("B")
    op1 = op(writes=[a])
    op2 = op(reads=[a], writes=[b])
    op3 = op(reads=[a])
    op4 = op(writes=[a])
    assert _tracker.append(op1)
    assert not _tracker.append(op2) and not _tracker.append(op3) and not _tracker.append(op4)
    assert finish(op1) == [op2, op3]
    assert finish(op3) == []
    assert finish(op2) == [op4]
    assert not b._writing and a._writing
