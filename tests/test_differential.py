"""Random read/write programs: the threaded engine must match the naive one exactly.

Each program mixes two CPU devices (compute and copy lanes), a simulated
stream device (its kernels run later on stream threads, ordered only by
events), random read sets and priorities, and host ops that fail.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _workloads import Step, random_program, run_program
from autopar import devices, engine

DEVICES = ["cpu:0", "cpu:1", "sim:0"]


@pytest.fixture(autouse=True)
def _two_cpus_and_a_sim():  # type: ignore[no-untyped-def]
    engine.set_engine("threaded")
    engine.set_cpu_devices(2)
    devices.set_sim_devices(1)
    yield
    engine.set_engine("threaded")
    engine.waitall()
    engine.set_cpu_devices(1)


def both_engines(steps: list[Step], n_vars: int):  # type: ignore[no-untyped-def]
    engine.set_engine("naive")
    want = run_program(steps, n_vars)
    engine.set_engine("threaded")
    got = run_program(steps, n_vars)
    return got, want


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ten_thousand_random_ops_match_the_naive_engine(seed: int) -> None:
    steps = random_program(seed, n_ops=10_000, n_vars=60, devices=DEVICES, fail_rate=0.01)
    got, want = both_engines(steps, 60)
    assert got[2] == want[2], "different vars failed"
    assert got[0] == want[0], "final values differ"
    assert got[1] == want[1], "some op read a different value"
    assert any(want[2]) and not all(want[2]), "the program should have failures, and survivors"


step_strategy = st.builds(
    Step,
    reads=st.lists(st.integers(0, 5), max_size=3, unique=True).map(tuple),
    writes=st.lists(st.integers(0, 5), max_size=2, unique=True).map(tuple),
    device=st.sampled_from(DEVICES),
    lane=st.sampled_from(["compute", "copy", "copy_h2d", "copy_d2h"]),
    priority=st.integers(-2, 2),
    fails=st.booleans(),
)


def _fix_lane(step: Step) -> Step:
    cpu = step.device.startswith("cpu")
    lane = step.lane
    if cpu and lane.startswith("copy_"):
        lane = "copy"
    if not cpu and lane == "copy":
        lane = "copy_h2d"
    return Step(step.reads, step.writes, step.device, lane, step.priority, step.fails and cpu)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(step_strategy.map(_fix_lane), min_size=1, max_size=25))
def test_small_programs_match_the_naive_engine(steps: list[Step]) -> None:
    got, want = both_engines(steps, 6)
    assert got == want
