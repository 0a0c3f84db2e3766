"""The segment rule against eager execution where it is easy to get wrong: a recorded forward kept
in one engine op with its backward (else its gradients are lost), the segments a step may wait for
(what it joins stays as early as eagerly, and their count stays small), and a graph that cannot be
kept in one engine op refused at trace time."""

from __future__ import annotations

import random

import numpy as np
import pytest

import autopar as ap
from autopar import autograd
from autopar._capture._segments import split
from autopar._capture._trace import CONST, OpaqueStep, Slot
from autopar.errors import CaptureError


@pytest.fixture(autouse=True, params=["threaded", "naive"])
def _two_devices(request):  # type: ignore[no-untyped-def]
    ap.engine.set_engine(request.param)
    ap.set_cpu_devices(2)
    yield
    ap.waitall()
    ap.set_cpu_devices(1)
    ap.engine.set_engine("threaded")


def _leaves():  # type: ignore[no-untyped-def]
    w, v = ap.ones(3), ap.full(3, 2.0)
    for p in (w, v):
        p.attach_grad()
    return w, v


def _copied_first(w, v, x0, x1):  # type: ignore[no-untyped-def]
    a = x1.to(ap.cpu(0))  # an engine op of its own, before the recorded block
    with autograd.record():
        h = w * a  # waits for the copy
        g = v * x0  # does not
        loss = (h + g).sum()
    loss.backward()
    return loss


def _plain_step_between(w, v, x0, x1):  # type: ignore[no-untyped-def]
    a = x1.to(ap.cpu(0))
    with autograd.record():
        h = w * a
    z = x0 * 2  # not recorded, waits for nothing
    with autograd.record():
        loss = (h + v * z).sum()
    loss.backward()
    return loss


@pytest.mark.parametrize("fn", [_copied_first, _plain_step_between])
def test_a_recorded_forward_stays_with_its_backward_where_part_of_it_waits_for_a_copy(fn):  # type: ignore[no-untyped-def]
    x0, x1 = ap.arange(3.0), ap.arange(3.0, device=ap.cpu(1)) + 1
    (we, ve), (wm, vm) = _leaves(), _leaves()
    captured = ap.capture(fn, mode="replay")
    for _ in range(3):
        assert captured(wm, vm, x0, x1).item() == fn(we, ve, x0, x1).item()
        for e, m in ((we, wm), (ve, vm)):
            np.testing.assert_array_equal(m.grad.numpy(), e.grad.numpy())
    assert captured.traced == 1


def test_a_forward_that_must_span_two_engine_ops_is_refused_at_the_trace() -> None:
    def step(w, v, x0, x1):  # type: ignore[no-untyped-def]
        with autograd.record():
            g = v * x0
            a = x1.to(ap.cpu(0))  # copied after the recorded block began: what reads it is a later engine op
            loss = (w * a + g).sum()
        loss.backward()
        return loss

    x0, x1 = ap.arange(3.0), ap.arange(3.0, device=ap.cpu(1)) + 1
    w, v = _leaves()
    with pytest.raises(CaptureError, match="before autograd.record"):
        ap.capture(step, mode="replay")(w, v, x0, x1)
    step(w, v, x0, x1)  # eagerly it runs


def test_two_chains_fed_by_two_copies_are_two_engine_ops_not_one_per_step() -> None:
    def f(a1, b1):  # type: ignore[no-untyped-def]
        a = a1.to(ap.cpu(0))
        b = (b1 * 2).to(ap.cpu(0))  # a second copy, waiting for work on cpu:1
        u, v = a, b
        for _ in range(20):
            u = u * 1.01 + a
            v = v * 1.01 + b
        return u, v

    captured = ap.capture(f, mode="replay")
    a1, b1 = ap.ones(3, device=ap.cpu(1)), ap.full(3, 2.0, device=ap.cpu(1))
    for _ in range(2):
        for got, want in zip(captured(a1, b1), f(a1, b1)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    (program,) = captured.traces
    compute = [s for s in program.segments if s.device == ap.cpu(0) and s.lane == "compute"]
    assert len(compute) <= 2, [len(s.steps) for s in compute]


def _opaque(device: ap.Device, lane: str, reads: set[int], writes: set[int]) -> OpaqueStep:
    return OpaqueStep("op", None, device, lane, set(reads), set(writes))


def test_a_sum_that_is_ready_never_joins_a_segment_that_waits_for_later_backward() -> None:
    # what a captured LeNet step records, reduced: piece 0 of backward on cpu:0 makes the first bucket
    # (slot 0); piece 1, on another lane, the last bucket (slot 1); the copy lane then sums the first
    # bucket, then the last. The sum of the first bucket must not wait for piece 1 (apache/mxnet#14200).
    cpu0 = ap.cpu(0)
    slots = [Slot(i, CONST, (4,), None, cpu0) for i in range(6)]
    steps = [
        _opaque(cpu0, "compute", set(), {0, 5}),  # piece 0 (slot 5: the var that orders the pieces)
        _opaque(cpu0, "other", {5}, {1}),  # piece 1, its own engine op, after piece 0
        _opaque(cpu0, "copy", {0}, {2}),  # the first bucket's sum: waits for piece 0 only
        _opaque(cpu0, "copy", {1}, {3}),  # the last bucket's sum: waits for piece 1
    ]
    segments = split("step", slots, steps, set())
    where = {i: k for k, seg in enumerate(segments) for i in seg.steps}
    assert where[2] != where[3], "the first bucket's sum was made to wait for the last piece of backward"
    assert 1 not in segments[where[2]].reads
    # a step that adds nothing to wait for still joins (the average of the last sum, say)
    steps.append(_opaque(cpu0, "copy", {3}, {4}))
    assert len(split("step", slots, steps, set())) == len(segments)


def test_one_buckets_copy_from_the_other_device_and_its_sum_are_one_engine_op() -> None:
    # the add waits for this device's piece, the copy before it for the other device's: neither comes
    # after the other, so they join (one engine op, not two hops of the copy lane)
    cpu0 = ap.cpu(0)
    slots = [Slot(i, CONST, (4,), None, cpu0) for i in range(4)]
    steps = [
        _opaque(cpu0, "compute", set(), {0}),  # this device's bucket
        _opaque(cpu0, "other", set(), {1}),  # the other device's
        _opaque(cpu0, "copy", {1}, {2}),  # copied here
        _opaque(cpu0, "copy", {0, 2}, {0}),  # summed into this device's
    ]
    where = {i: k for k, seg in enumerate(split("step", slots, steps, set())) for i in seg.steps}
    assert where[2] == where[3]


def test_an_independent_step_is_not_held_behind_a_segment_that_waits() -> None:
    cpu0 = ap.cpu(0)
    slots = [Slot(i, CONST, (4,), None, cpu0) for i in range(3)]
    steps = [
        _opaque(cpu0, "compute", set(), {0}),
        _opaque(cpu0, "copy", {0}, {1}),  # waits for the compute segment
        _opaque(cpu0, "copy", set(), {2}),  # waits for nothing: eagerly it would run first
    ]
    where = {i: k for k, seg in enumerate(split("f", slots, steps, set())) for i in seg.steps}
    assert where[1] != where[2]


def test_what_a_joined_step_waits_for_counts_for_the_steps_after_it() -> None:
    # the copy lane's segment comes to wait for both devices' first pieces (the second joined alongside);
    # a step that then waits for the other device's second piece -- after its first -- must not join it
    cpu0 = ap.cpu(0)
    slots = [Slot(i, CONST, (4,), None, cpu0) for i in range(8)]
    steps = [
        _opaque(cpu0, "compute", set(), {0}),  # 0: this device's first piece (P0)
        _opaque(cpu0, "other", set(), {1}),  # 1: the other device's first piece (Q0)
        _opaque(cpu0, "third", {1}, {2}),  # 2: its second piece (Q1), after Q0
        _opaque(cpu0, "copy", {0}, {3}),  # 3: waits for P0
        _opaque(cpu0, "copy", {0, 1}, {4}),  # 4: for P0 and Q0: joins (alongside)
        _opaque(cpu0, "copy", {0, 2}, {5}),  # 5: for P0 and Q1: Q1 comes after Q0, which the segment waits for
    ]
    where = {i: k for k, seg in enumerate(split("step", slots, steps, set())) for i in seg.steps}
    assert where[3] == where[4]
    assert where[5] != where[4], "a segment was made to wait for a later piece than the one it waited for"


def test_what_a_segment_comes_to_wait_for_counts_for_the_segments_that_wait_for_it() -> None:
    # segment C (copy lane) waits for P0; segment X (lane "x") for C; then a step joins C alongside (it
    # waits for Q0 too). X now waits for Q0 through C: a step that waits for X and for Q1 (after Q0)
    # must not join X.
    cpu0 = ap.cpu(0)
    slots = [Slot(i, CONST, (4,), None, cpu0) for i in range(8)]
    steps = [
        _opaque(cpu0, "compute", set(), {0}),  # 0: P0
        _opaque(cpu0, "other", set(), {1}),  # 1: Q0
        _opaque(cpu0, "third", {1}, {2}),  # 2: Q1, after Q0
        _opaque(cpu0, "copy", {0}, {3}),  # 3: C, waits for P0
        _opaque(cpu0, "x", {3}, {4}),  # 4: X, waits for C
        _opaque(cpu0, "copy", {0, 1}, {5}),  # 5: joins C (P0 and Q0 run alongside)
        _opaque(cpu0, "x", {4, 2}, {6}),  # 6: waits for X and Q1
    ]
    where = {i: k for k, seg in enumerate(split("step", slots, steps, set())) for i in seg.steps}
    assert where[5] == where[3]
    assert where[6] != where[4], "X was made to wait for Q1, a later piece than the Q0 it waits for"


def _two_device_program(seed: int):  # type: ignore[no-untyped-def]
    """A random program over x, y on cpu:0 and z on cpu:1: copies between the devices, in-place writes,
    writes through views, reductions, products; then (mostly) a backward on each device."""
    r = random.Random(seed)
    pools: list[list[str]] = [["x", "y"], ["z"]]
    lines = []
    for n in range(r.randint(6, 16)):
        d = r.randrange(2)
        a, b = r.choice(pools[d]), r.choice(pools[d])
        mine = r.choice(["x", "y"] if d == 0 else ["z"])
        made = f"t{n}"
        c = r.random()
        if c < 0.2:
            lines.append(f"{made} = {a}.to(ap.cpu({1 - d})) * 1.0")
            pools[1 - d].append(made)
            continue
        if c < 0.35:
            lines.append(f"{mine} += {a} * 0.5")
        elif c < 0.45:
            lines.append(f"{mine}[1:] = {b}[:-1] - 1")
        elif c < 0.55:
            lines.append(f"{mine} *= ap.exp(-ap.abs({a}))")
        elif c < 0.7:
            lines.append(f"{made} = ap.matmul({a}, {b}) / 4")
        elif c < 0.85:
            lines.append(f"{made} = {a}.sum(axis=1, keepdims=True) + {b}[::-1]")
        else:
            lines.append(f"{made} = ap.tanh({a}.T) - ap.where({a} > 0, {b}, 0.0)")
        if not lines[-1].startswith(mine):
            pools[d].append(made)
    if r.random() < 0.7:
        lines += [f"with autograd.record():",
                  f"    l0 = (ap.tanh({r.choice(pools[0])} * w0) * {r.choice(pools[0])}).sum()",
                  f"    l0 = l0 + ({r.choice(pools[0])} * w0).sum()",
                  f"    l1 = (w1 * {r.choice(pools[1])}).sum()",
                  "l0.backward()", "l1.backward()"]  # fmt: skip
    lines.append(f"return {pools[0][-1]}.sum(), {pools[1][-1]}.sum()")
    source = "def f(x, y, z, w0, w1):\n" + "".join(f"    {line}\n" for line in lines)
    namespace = {"ap": ap, "autograd": autograd}
    exec(source, namespace)
    return namespace["f"], source


def _two_device_inputs(seed: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    made = [ap.asarray(rng.standard_normal((4, 4)).astype(np.float32), device=ap.cpu(d)) for d in (0, 0, 1, 0, 1)]
    for w in made[3:]:
        w.attach_grad()
    return made


@pytest.mark.parametrize("seeds", [range(0, 12), range(12, 24)])
def test_random_programs_over_two_devices_match_eager(seeds: range) -> None:
    for seed in seeds:
        f, source = _two_device_program(seed)
        captured = ap.capture(f, mode="replay")
        eager, mine = _two_device_inputs(seed), _two_device_inputs(seed)
        for call in range(3):
            for w, g in zip(f(*eager), captured(*mine)):
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"call {call}\n{source}")
            for e, m in zip(eager, mine):
                np.testing.assert_allclose(m.numpy(), e.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"call {call}\n{source}")
                if e.grad is not None:
                    np.testing.assert_allclose(m.grad.numpy(), e.grad.numpy(), rtol=1e-5, atol=1e-5,
                                               err_msg=f"gradient, call {call}\n{source}")  # fmt: skip
