"""Small ops in the engine (``engine/_bulk.py``): run at once, or bulked into one engine op.

The oracle is the naive engine (where ``push_small`` is a plain push): random
programs of small and ordinary ops, with failures, give the same final values,
the same reads in every op that ran, and the same failures (by op name) on
the same vars. A *gate* -- a ``push_async`` op that writes every var, completed
once everything is pushed -- makes every small op wait, so segments form and
fill up; without it most small ops run at once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch

import autopar as ap
from autopar import engine
from autopar.devices import cpu
from autopar.engine import _bulk

from _workloads import MOD, Boom, Step, random_program


def _gated(vars_: list[engine.Var] | None = None) -> tuple[engine.Var, Any]:
    """A var (and ``vars_``) written by a push_async op that completes when the returned function is called."""
    gate = engine.Var("gate")
    release: list[Any] = []
    started = threading.Event()

    def hold(complete: Any) -> None:
        release.append(complete)
        started.set()

    engine.push_async(hold, writes=[gate, *(vars_ or ())], device=cpu(0), name="gate")

    def open_gate() -> None:
        started.wait()  # its function has run (on a worker), so complete() exists: no timeout needed
        release[0]()

    return gate, open_gate


def run_small_program(steps: list[Step], n_vars: int, small: set[int], gate: bool) -> tuple[Any, ...]:
    """Run ``steps`` on the current engine, those in ``small`` through ``push_small``; return the final
    values (None: failed), the reads of every op that ran and did not raise, and each var's failure's op name."""
    values = [i + 1 for i in range(n_vars)]
    vars_ = [engine.Var(f"v{i}") for i in range(n_vars)]
    seen: dict[int, tuple[int, ...]] = {}
    eng = engine.current_engine()
    device = cpu(0)

    def kernel(i: int, step: Step) -> Any:
        def run() -> None:
            got = tuple(values[r] for r in step.reads) + (tuple(values[w] for w in step.writes) if step.update else ())
            if step.fails:
                raise Boom(f"step {i} fails")
            seen[i] = got
            acc = (i * 2 + 1) * 1_000_003 % MOD
            for v in got:
                acc = (acc * 31 + v) % MOD
            for w in step.writes:
                values[w] = (acc + w) % MOD

        return run

    open_gate = _gated(vars_)[1] if gate else None
    for i, step in enumerate(steps):
        reads = tuple(vars_[r] for r in step.reads) + (tuple(vars_[w] for w in step.writes) if step.update else ())
        writes = tuple(vars_[w] for w in step.writes)
        if i in small:
            # every other one pure (it waits for nothing): run now, it runs under the engine lock
            eng.push_small(kernel(i, step), (), reads, writes, device, f"step{i}", "compute", i % 3 == 0, None, (),
                           i % 2 == 0)  # fmt: skip
        else:
            engine.push(kernel(i, step), reads=reads, writes=writes, device=device, lane=step.lane, name=f"step{i}")
    if open_gate is not None:
        open_gate()
    try:
        engine.waitall()
    except Boom:
        pass
    eng.drain()
    failures = [v.failure.op_name if v.failure is not None else None for v in vars_]
    final = [None if f else values[i] for i, f in enumerate(failures)]
    return final, seen, failures


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("gate", [True, False], ids=["gated", "free"])
def test_random_programs_of_small_ops_match_the_naive_engine(seed: int, gate: bool, monkeypatch: Any) -> None:
    steps = random_program(seed, n_ops=1500, n_vars=40, devices=["cpu:0"], fail_rate=0.03, async_rate=0, nested_rate=0)
    small = {i for i in range(len(steps)) if (i * 7 + seed) % 10 < 8}  # most of them
    sizes: list[int] = []  # members of each segment that ran
    run_segment = _bulk.Segment.__call__
    monkeypatch.setattr(_bulk.Segment, "__call__", lambda self: (sizes.append(len(self.members)), run_segment(self))[1])
    results = {}
    try:
        for name in ("naive", "threaded"):
            engine.set_engine(name)
            results[name] = run_small_program(steps, 40, small, gate)
    finally:
        engine.set_engine("threaded")
    if gate:  # every small op waits: they run in segments, several to one
        assert sum(sizes) == len(small) and max(sizes) > 1, sizes
    else:  # some run at once, on the calling thread; the others wait behind ordinary ops, bulked
        assert sum(sizes) < len(small) and max(sizes) > 1, sizes
    naive, threaded = results["naive"], results["threaded"]
    assert threaded[0] == naive[0], "final values"
    assert threaded[2] == naive[2], "which op's failure each var holds"
    assert threaded[1] == naive[1], "what every op that ran read"
    assert any(s.fails for s in steps) and not all(naive[2]), "the program should fail some ops, not every var"




def test_a_segment_runs_each_member_with_its_own_outcome(threaded: Any) -> None:
    # a, b and c join one segment (the gate holds it); a raises, c reads a's result, b is independent
    eng = engine.current_engine()
    gate, open_gate = _gated()
    va, vb, vc = engine.Var("a"), engine.Var("b"), engine.Var("c")
    ran = []

    def boom() -> None:
        raise Boom("a fails")

    eng.push_small(boom, (), (gate,), (va,), cpu(0), "a")
    eng.push_small(lambda: ran.append("b"), (), (gate,), (vb,), cpu(0), "b")
    eng.push_small(lambda: ran.append("c"), (), (va,), (vc,), cpu(0), "c")
    with ap.profile() as prof:
        open_gate()
        engine.current_engine().drain()
    assert ran == ["b"]
    assert vb.failure is None
    assert va.failure is not None and va.failure.op_name == "a"
    assert vc.failure is va.failure  # skipped: the same failure flowed on, named after the op that raised
    names = [r.name for r in prof.records]
    assert "bulk of 3: a, b, c" in names, names  # one engine op, shown by what it stands for
    with pytest.raises(Boom, match="a fails"):
        engine.waitall()


def test_any_other_push_closes_the_segment(threaded: Any) -> None:
    eng = engine.current_engine()
    gate, open_gate = _gated()
    out = [engine.Var(f"o{i}") for i in range(4)]
    eng.push_small(lambda: None, (), (gate,), (out[0],), cpu(0), "s0")
    eng.push_small(lambda: None, (), (gate,), (out[1],), cpu(0), "s1")
    engine.push(lambda: None, reads=[out[1]], writes=[out[2]], device=cpu(0), name="plain")  # reads the segment
    eng.push_small(lambda: None, (), (gate,), (out[3],), cpu(0), "s3")  # a new segment: never inside the first
    with ap.profile() as prof:
        open_gate()
        engine.waitall()
    names = sorted(r.name for r in prof.records if r.name != "gate")
    assert names == ["bulk of 2: s0, s1", "plain", "s3"], names


def test_a_small_op_that_can_run_runs_before_push_returns_on_the_calling_thread(threaded: Any) -> None:
    eng = engine.current_engine()
    where: list[int] = []
    out = engine.Var("out")
    eng.push_small(lambda: where.append(threading.get_ident()), (), (), (out,), cpu(0), "now")
    assert where == [threading.get_ident()]
    assert out.version == 1 and out.pending_writes == 0


def test_a_ctrl_c_in_a_small_op_run_now_fails_its_writes_and_reaches_the_caller(threaded: Any) -> None:
    eng = engine.current_engine()
    out = engine.Var("out")

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        eng.push_small(interrupted, (), (), (out,), cpu(0), "interrupted")
    assert out.failure is not None and isinstance(out.failure.error, KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        engine.wait_for_var(out)
    engine.push(lambda: None, writes=[out], name="overwrite")  # the var works on: an overwrite clears it
    engine.wait_for_var(out)


@pytest.mark.parametrize("gated", [False, True], ids=["run now", "in a segment"])
def test_small_ops_that_could_split_run_on_one_intra_op_thread(threaded: Any, gated: bool) -> None:
    eng = engine.current_engine()
    before = torch.get_num_threads()
    seen: list[int] = []
    reads: tuple[engine.Var, ...] = ()
    open_gate = None
    if gated:
        gate, open_gate = _gated()
        reads = (gate,)
    eng.push_small(lambda: seen.append(torch.get_num_threads()), (), reads, (engine.Var(),), cpu(0), "one", "compute", True)
    if open_gate is not None:
        open_gate()
    engine.waitall()
    assert seen == [1]
    assert torch.get_num_threads() == before  # the caller's setting is back


def test_a_waiter_keeps_new_ops_out_of_the_segment(threaded: Any) -> None:
    eng: Any = engine.current_engine()
    gate, open_gate = _gated()
    a, b = engine.Var("a"), engine.Var("b")
    eng.push_small(lambda: None, (), (gate,), (a,), cpu(0), "a")
    segment = eng._open_segment
    eng._var_waiters += 1  # as while another thread is in wait_for_var
    try:
        assert not eng._join(segment, _bulk.Member(print, (), (), (b,), (), "b"), cpu(0), "compute")
    finally:
        eng._var_waiters -= 1
    assert eng._join(segment, _bulk.Member(print, (), (), (b,), (), "b"), cpu(0), "compute")
    assert len(segment.members) == 2
    open_gate()
    engine.waitall()
    assert a.version == b.version == 1


def test_segments_stop_at_max_ops(threaded: Any) -> None:
    eng = engine.current_engine()
    gate, open_gate = _gated()
    n = _bulk.MAX_OPS + 3
    for i in range(n):
        eng.push_small(lambda: None, (), (gate,), (engine.Var(),), cpu(0), f"s{i}")
    with ap.profile() as prof:
        open_gate()
        engine.waitall()
    counts = sorted(int(r.name.split()[2].rstrip(":")) for r in prof.records if r.name != "gate")
    assert counts == [3, _bulk.MAX_OPS]
