"""Which lane an array op runs on, and what a blocking copy waits for -- each test here
catches one of issue 7's mutations that the suite used to miss: CPU copies routed to the
compute lane, ``to(non_blocking=False)`` not waiting."""

from __future__ import annotations

import threading

import pytest

import autopar as ap
from _helpers import within


@pytest.mark.parametrize("target", [0, 1])
def test_cpu_copies_run_on_the_copy_lane(two_cpus, target) -> None:  # type: ignore[no-untyped-def]
    x = ap.ones((4, 4), device=two_cpus[0])
    x.wait_to_read()
    with ap.profile() as prof:
        x.copyto(two_cpus[target]).wait_to_read()
    lanes = {(r.device, r.lane) for r in prof.records if r.name == "copyto"}
    assert lanes == {(f"cpu:{target}", "copy")}


def test_a_copy_on_the_same_device_does_not_wait_behind_its_compute_lane(two_cpus) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    x = ap.ones((4, 4), device=two_cpus[0])
    target = ap.zeros((4, 4), device=two_cpus[0])
    target.wait_to_read()
    blocker = ap.call(lambda t: (gate.wait(10), t + 1)[1], x, shape=(4, 4))  # holds cpu:0's compute lane
    try:
        copied = x.copyto(target)
        assert within(5, copied.numpy).sum() == 16  # finished while the compute lane is held
    finally:
        gate.set()
    assert blocker.numpy().sum() == 32


def test_to_without_non_blocking_returns_after_the_copy(two_cpus) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    x = ap.call(lambda t: (gate.wait(10), t + 1)[1], ap.ones(3, device=two_cpus[0]), shape=(3,))
    releaser = threading.Timer(0.2, gate.set)  # x is still being computed when to() is called
    releaser.start()
    y = x.to(two_cpus[1])
    assert y._storage.var.pending_writes == 0, "to(non_blocking=False) returned before the copy finished"
    releaser.join()
    z = x.to(two_cpus[0], non_blocking=True)  # already there: the array itself, at once
    assert z is x and y.tolist() == [2.0, 2.0, 2.0]
