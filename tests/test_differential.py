"""Random programs: the threaded engine must match the naive one exactly.

Programs mix two CPU devices (compute and copy lanes), a simulated stream device (its
kernels run later on stream threads, ordered only by events), several pushing threads,
ops completed later (``push_async``), ops pushed from inside ops, updates and
overwrites, priorities, and failures of host functions and of device kernels.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from _workloads import Step, lanes_of, random_program, run_program
from autopar import devices, engine

DEVICES = ["cpu:0", "cpu:1", "sim:0"]


@pytest.fixture(autouse=True)
def _two_cpus_and_a_sim():  # type: ignore[no-untyped-def]
    engine.set_engine("threaded")
    engine.set_cpu_devices(2)
    devices.set_sim_devices(1)
    yield
    engine.set_engine("threaded")
    engine.current_engine().drain()
    engine.set_cpu_devices(1)


def both_engines(steps: list[Step], n_vars: int):  # type: ignore[no-untyped-def]
    engine.set_engine("naive")
    want = run_program(steps, n_vars)
    engine.set_engine("threaded")
    got = run_program(steps, n_vars)
    return got, want


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ten_thousand_random_ops_match_the_naive_engine(seed: int) -> None:
    steps = random_program(seed, n_ops=10_000, n_vars=60, devices=DEVICES, fail_rate=0.02, threads=2)
    got, want = both_engines(steps, 60)
    assert got[2] == want[2], "different vars failed"
    assert got[0] == want[0], "final values differ"
    assert got[1] == want[1], "some op read a different value"
    assert any(want[2]) and not all(want[2]), "the program should have failures, and survivors"
    assert len(want[1]) > 5_000, "most ops should have run"


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[Step], int]:
    n_threads = draw(st.sampled_from([1, 2, 2, 3, 3]))
    block = draw(st.integers(3, 5))
    steps = []
    for _ in range(draw(st.integers(20, 40))):
        t = draw(st.integers(0, n_threads - 1))
        own = list(range(t * block, (t + 1) * block))
        device = draw(st.sampled_from(DEVICES))
        host = device.startswith("cpu")
        steps.append(Step(
            reads=tuple(draw(st.lists(st.sampled_from(own), max_size=3, unique=True))),
            writes=tuple(draw(st.lists(st.sampled_from(own), min_size=1, max_size=2, unique=True))),
            device=device,
            lane=draw(st.sampled_from(lanes_of(device))),
            priority=draw(st.integers(-2, 2)),
            fails=draw(st.integers(0, 9)) == 0,
            kind=draw(st.sampled_from(["host", "host", "host", "async", "nested"])) if host else "host",
            update=draw(st.booleans()),
            thread=t,
        ))
    return steps, n_threads * block


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_random_programs_match_the_naive_engine(program: tuple[list[Step], int]) -> None:
    steps, n_vars = program
    event(f"{len({s.thread for s in steps})} thread(s)")
    for label, present in [("a failure", any(s.fails for s in steps)), ("a nested push", any(s.kind == "nested" for s in steps)),
                           ("a stream lane", any(s.device.startswith("sim") for s in steps)),
                           ("push_async", any(s.kind == "async" for s in steps))]:
        event(("with " if present else "without ") + label)
    got, want = both_engines(steps, n_vars)
    assert got == want
