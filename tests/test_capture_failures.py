"""autopar.capture when an input fails while its producer is still pending at the call: only what
depends on the failure fails, as in step-by-step execution -- the oracle here is always the same
program run eagerly, on both engine policies (the ``eng`` fixture)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import autopar as ap
from autopar import autograd
from autopar._capture import _failed
from autopar._capture._backends import compiler_available

from _helpers import Gate


class Broken(Exception):
    pass


def _explode(t: Any) -> Any:
    raise Broken("bad input")


def _pending_failure(shape: tuple[int, ...] = (2,)) -> tuple[ap.NDArray, Gate]:
    """An array whose producer (an op that raises) is still pending until ``gate.open()``."""
    src = ap.ones(shape)
    gate = Gate(writes=[src._storage])
    return ap.call(_explode, src, shape=shape), gate


def _outcome(a: ap.NDArray) -> Any:
    """What a read of ``a`` gives: its value, or the error it raises (type and message)."""
    try:
        return a.numpy().copy()
    except Exception as error:  # noqa: BLE001 - the failure is what is compared
        return type(error), str(error)


def _same(got: list[Any], want: list[Any]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, np.ndarray):
            assert isinstance(g, np.ndarray), f"failed as {g}; step by step it is {w}"
            np.testing.assert_array_equal(g, w)
        else:
            assert g == w


@pytest.fixture
def stepwise_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the segments run step by step (a failed read) from now on."""
    runs: list[int] = []
    run = _failed.run

    def spy(*args: Any) -> None:
        runs.append(1)
        run(*args)

    monkeypatch.setattr(_failed, "run", spy)
    return runs


# -- the example: (a + 1, b * 2) with a failing while pending ------------------------------------------


def _pair(a: ap.NDArray, b: ap.NDArray) -> tuple[ap.NDArray, ap.NDArray]:
    return a + 1, b * 2


def _example(fn: Callable[..., Any], read_first: bool) -> list[Any]:
    bad, gate = _pending_failure()
    x, y = fn(bad, ap.arange(2.0))
    gate.open()
    seen: list[Any] = []
    if read_first:
        seen = [_outcome(y), _outcome(x)]
    try:  # rule 4: a failure no read raised is raised once by waitall, then cleared
        ap.waitall()
        seen.append("waitall: nothing")
    except Broken as error:
        seen.append(("waitall", str(error)))
    ap.waitall()
    return seen + [_outcome(y), _outcome(x)]


@pytest.mark.parametrize("read_first", [True, False])
def test_a_result_of_good_inputs_stays_good_when_another_input_fails_while_pending(
        eng: Any, read_first: bool, stepwise_runs: list[int]) -> None:  # fmt: skip
    captured = ap.capture(_pair, mode="replay")
    for _ in range(2):  # traced, then replayed
        captured(ap.ones(2), ap.ones(2))
    want = _example(_pair, read_first)
    got = _example(captured, read_first)
    _same(got, want)
    assert isinstance(got[-2], np.ndarray) and got[-2].tolist() == [0.0, 2.0]
    assert got[-1] == (Broken, "bad input [in autopar operation '_explode' on cpu:0]")
    assert stepwise_runs and captured.traced == 1
    runs = len(stepwise_runs)
    assert [t.tolist() for t in captured(ap.ones(2), ap.arange(2.0))] == [[2.0, 2.0], [0.0, 2.0]]
    assert len(stepwise_runs) == runs, "a call with no failure ran step by step"


@pytest.mark.skipif(bool(compiler_available()), reason="torch.compile cannot run here")
def test_a_compiled_segment_runs_step_by_step_on_a_failure_then_compiled_again(
        threaded: Any, stepwise_runs: list[int]) -> None:  # fmt: skip
    captured = ap.capture(_pair, mode="compile")
    for _ in range(2):
        captured(ap.ones(2), ap.ones(2))
    assert captured.traces[0].backend == "compile"
    _same(_example(captured, True), _example(_pair, True))
    assert len(stepwise_runs) == 1
    assert [t.tolist() for t in captured(ap.ones(2), ap.arange(2.0))] == [[2.0, 2.0], [0.0, 2.0]]
    assert len(stepwise_runs) == 1 and captured.traces[0].backend == "compile", repr(captured)


def _gather(a: ap.NDArray, b: ap.NDArray, x: ap.NDArray, idx: ap.NDArray) -> tuple[ap.NDArray, ...]:
    return a + 1, ap.take(x, idx), b * 2


def test_a_kernel_that_raises_while_the_segment_runs_step_by_step_fails_only_its_own_writes(
        eng: Any, stepwise_runs: list[int]) -> None:  # fmt: skip
    """Step by step, an index out of range fails ``take`` alone (a new failure, named after it)."""

    def run(fn: Callable[..., Any]) -> list[Any]:
        for _ in range(2):
            fn(ap.ones(2), ap.ones(2), ap.arange(4.0), ap.asarray([0, 3]) + 0)
        bad, gate = _pending_failure()
        results = fn(bad, ap.arange(2.0), ap.arange(4.0), ap.asarray([0, 7]) + 0)
        gate.open()
        return [_outcome(r) for r in results]

    want = run(_gather)
    captured = ap.capture(_gather, mode="replay")
    got = run(captured)
    _same(got, want)
    assert got[1][0] is IndexError and "'take'" in got[1][1] and isinstance(got[2], np.ndarray)
    assert captured.traced == 1 and stepwise_runs


# -- random programs: elementwise ops, in-place, partial and whole writes, views --------------------------


def _random_program(seed: int, inputs: int, devices: int = 1) -> tuple[Callable[..., Any], int]:
    """A program over ``inputs`` arrays of shape (4,) (on cpu:0), and which input to fail; with two
    devices, copies to the other device too (a segment per device and lane: failures cross them)."""
    rng = np.random.default_rng(seed)
    binary = [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, ap.maximum]
    unary = [lambda x: -x, ap.abs, lambda x: x * 2 + 1]
    kinds = ["bin", "bin", "un", "iadd", "iscale", "part", "cover", "view"] + ["to"] * 2 * (devices - 1)
    code: list[tuple[Any, ...]] = []
    where = [0] * inputs  # each register's device
    for _ in range(int(rng.integers(5, 11 + 4 * (devices - 1)))):
        kind = str(rng.choice(kinds))
        i = int(rng.integers(0, len(where)))
        same = [k for k, d in enumerate(where) if d == where[i]]
        j = same[int(rng.integers(0, len(same)))]
        code.append((kind, i, j, int(rng.integers(0, 4))))
        if kind in ("bin", "un", "view"):
            where.append(where[i])
        elif kind == "to":
            where.append(1 - where[i])

    def program(*arrays: ap.NDArray) -> tuple[ap.NDArray, ...]:
        regs = list(arrays)
        for kind, i, j, which in code:
            if kind == "bin":
                regs.append(binary[which](regs[i], regs[j]))
            elif kind == "un":
                regs.append(unary[which % 3](regs[i]))
            elif kind == "iadd":
                regs[i] += regs[j]
            elif kind == "iscale":
                regs[i] *= 3
            elif kind == "part":  # reads the rest of regs[i]: a failure on it stays
                regs[i][1:3] = regs[j][0:2]
            elif kind == "cover":  # reads nothing of regs[i]: clears a failure on it
                regs[i][...] = regs[j] * 2
            elif kind == "to":
                regs.append(regs[i].to(ap.cpu(1) if regs[i].device == ap.cpu(0) else ap.cpu(0), non_blocking=True))
            else:
                regs.append(regs[i][::-1])
        return tuple(regs)

    return program, int(rng.integers(0, inputs))


def _array(v: np.ndarray) -> ap.NDArray:
    return ap.asarray(v) + 0  # autopar's own memory, as a computed input (asarray may share NumPy's)


def _run_failing(fn: Callable[..., Any], values: list[np.ndarray], bad_at: int) -> list[Any]:
    bad, gate = _pending_failure((4,))
    arrays = [bad if k == bad_at else _array(v) for k, v in enumerate(values)]
    results = fn(*arrays)
    gate.open()
    seen = [_outcome(r) for r in (*results, *arrays)]
    try:  # a failure no read raised (the failed input overwritten whole before any read) is owed
        ap.waitall()
        seen.append("waitall: nothing")
    except Broken as error:
        seen.append(("waitall", str(error)))
    return seen


def _compare_random(seed: int, devices: int) -> None:
    program, bad_at = _random_program(seed, 3, devices)
    rng = np.random.default_rng(100 + seed)
    values = [rng.integers(-3, 4, 4).astype(np.float32) for _ in range(3)]
    captured = ap.capture(program, mode="replay")
    for _ in range(2):
        captured(*[_array(v) for v in values])
    want = _run_failing(program, values, bad_at)
    got = _run_failing(captured, values, bad_at)
    _same(got, want)
    good = [_outcome(r) for r in captured(*[_array(v) for v in values])]  # and a good call after it
    _same(good, [_outcome(r) for r in program(*[_array(v) for v in values])])
    assert captured.traced == 1


@pytest.mark.parametrize("seed", range(10))
def test_random_programs_fail_only_what_depends_on_the_failed_input(eng: Any, seed: int) -> None:
    _compare_random(seed, 1)


def test_random_programs_on_two_devices_fail_only_what_depends_on_the_failed_input(eng: Any) -> None:
    """Segments on two devices and their copy lanes: a segment run step by step stores failures that
    the next segment's op meets as failed reads, and so on."""
    ap.set_cpu_devices(2)
    try:
        for seed in range(8):
            _compare_random(seed, 2)
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_the_random_programs_mix_failed_and_good_results() -> None:
    """The seeds above are worth running: each fails some results and leaves others good, and some
    clear a failure by a whole write."""
    mixed = 0
    for seed in range(10):
        program, bad_at = _random_program(seed, 3)
        got = _run_failing(program, [np.ones(4, np.float32)] * 3, bad_at)
        failed = sum(1 for g in got if not isinstance(g, np.ndarray))
        mixed += 0 < failed < len(got) - 2  # (the failed input itself is always among them)
    assert mixed >= 7


# -- training steps -------------------------------------------------------------------------------------


def _mlp(seed: int = 0) -> list[ap.NDArray]:
    rng = np.random.default_rng(seed)
    return [_array(rng.standard_normal(shape).astype(np.float32)) for shape in ((4, 8), (8,), (8, 3), (3,))]


def _forward(params: list[ap.NDArray], X: ap.NDArray) -> ap.NDArray:
    return (X @ params[0] + params[1]).relu() @ params[2] + params[3]


def _training_step() -> tuple[list[ap.NDArray], ap.NDArray, Callable[..., Any]]:
    from autopar.nn import functional as F

    params = _mlp()
    for p in params:
        p.attach_grad()
    count = ap.zeros(())  # state the step updates from nothing the failure touches

    def step(X: ap.NDArray, y: ap.NDArray) -> ap.NDArray:
        with autograd.record():
            loss = F.cross_entropy(_forward(params, X), y)
        loss.backward()
        for p in params:
            p -= 0.1 * p.grad
        c = count
        c += 1
        return loss

    return params, count, step


def test_a_training_step_whose_batch_fails_while_pending_fails_as_step_by_step(
        eng: Any, stepwise_runs: list[int]) -> None:  # fmt: skip
    rng = np.random.default_rng(1)
    X = [rng.standard_normal((5, 4)).astype(np.float32) for _ in range(2)]
    y = _array(np.arange(5) % 3)

    def run(step: Callable[..., Any], params: list[ap.NDArray], count: ap.NDArray) -> list[Any]:
        for _ in range(2):  # (traced, then replayed)
            step(_array(X[0]), y)
        bad, gate = _pending_failure((5, 4))
        loss = step(bad, y)
        gate.open()
        seen = [_outcome(a) for a in (loss, count, *params, *(p.grad for p in params))]
        later = step(_array(X[1]), y)  # the parameters failed: so does every later step, as eagerly
        return seen + [_outcome(a) for a in (later, count, *params)]

    params, count, step = _training_step()
    want = run(step, params, count)
    params, count, step = _training_step()
    captured = ap.capture(step, mode="replay")
    got = run(captured, params, count)
    _same(got, want)
    assert isinstance(got[1], np.ndarray) and got[1] == 3.0  # the counter never reads the failure
    assert all(not isinstance(g, np.ndarray) for g in got[2:10])  # every parameter and gradient failed
    assert captured.traced == 1 and stepwise_runs


def _data_parallel() -> tuple[list[list[ap.NDArray]], Callable[..., Any]]:
    from autopar import parallel
    from autopar.nn import functional as F

    replicas = parallel.replicate(_mlp(), [ap.cpu(0), ap.cpu(1)])
    trainer = parallel.DataParallel(replicas, parallel.sgd(lr=0.1), bucket_size=30)  # three buckets

    def train(X0: ap.NDArray, X1: ap.NDArray, y0: ap.NDArray, y1: ap.NDArray) -> list[ap.NDArray]:
        with autograd.record():
            losses = [F.cross_entropy(_forward(p, x), t) for p, x, t in zip(replicas, (X0, X1), (y0, y1))]
        trainer.step(losses)
        return losses

    return replicas, train


def test_a_data_parallel_step_cut_at_buckets_meets_a_pending_failure_as_step_by_step(
        eng: Any, stepwise_runs: list[int]) -> None:  # fmt: skip
    """Device 1's batch fails while pending: its backward (cut into pieces that share one environment)
    is skipped piece by piece, the gradient sums fail every parameter, device 0's loss stays good. The
    parameters restored (without reading the failure), the next step -- pushed while that failure is
    still pending -- succeeds, as eagerly: it overwrites the failed gradient buckets before writing them."""
    ap.set_cpu_devices(2)
    try:
        rng = np.random.default_rng(2)
        Xs = [[rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2)] for _ in range(2)]
        ys = [_array(np.arange(3) % 3), _array(np.arange(3) % 3).to(ap.cpu(1))]

        def inputs(k: int) -> list[ap.NDArray]:
            return [_array(Xs[k][0]), _array(Xs[k][1]).to(ap.cpu(1)), *ys]

        def run(replicas: list[list[ap.NDArray]], step: Callable[..., Any]) -> list[Any]:
            for _ in range(2):
                step(*inputs(0))
            kept = [[p.numpy().copy() for p in row] for row in replicas]
            bad, gate = _pending_failure((3, 4))
            failing = step(_array(Xs[1][0]), bad.to(ap.cpu(1), non_blocking=True), *ys)
            for row, values in zip(replicas, kept):
                for p, v in zip(row, values):
                    ap.asarray(v, device=p.device).copyto(p)
            after = step(*inputs(1))
            gate.open()
            return [_outcome(a) for a in (*failing, *after, *replicas[0], *replicas[1])]

        want = run(*_data_parallel())
        replicas, train = _data_parallel()
        captured = ap.capture(train, mode="replay")
        got = run(replicas, captured)
        _same(got, want)
        assert [isinstance(g, np.ndarray) for g in got[:4]] == [True, False, True, True]
        assert captured.traced == 1 and any(captured.traces[0].chained.values()), "the backward was not cut"
        assert stepwise_runs
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def test_a_backward_of_two_heads_one_failed_while_pending_fails_only_what_that_head_reaches(
        eng: Any, stepwise_runs: list[int]) -> None:  # fmt: skip
    def step(w: ap.NDArray, v: ap.NDArray, X: ap.NDArray, Y: ap.NDArray) -> tuple[ap.NDArray, ap.NDArray]:
        with autograd.record():
            first, second = (X * w).sum(), (Y * v * w[::-1]).sum()
        autograd.backward([first, second])
        return first, second

    def run(fn: Callable[..., Any]) -> list[Any]:
        w, v = ap.ones(2) + 0, ap.ones(2) + 0
        for p in (w, v):
            p.attach_grad()
        for _ in range(2):
            fn(w, v, ap.ones(2) + 0, ap.ones(2) + 0)
        bad, gate = _pending_failure()
        heads = fn(w, v, bad, ap.arange(2.0) + 0)
        gate.open()
        return [_outcome(a) for a in (*heads, w.grad, v.grad)]

    want = run(step)
    captured = ap.capture(step, mode="replay")
    got = run(captured)
    _same(got, want)
    assert [isinstance(g, np.ndarray) for g in got] == [False, True, False, True]  # w is reached from both
    assert captured.traced == 1 and stepwise_runs
