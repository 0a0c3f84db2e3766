"""The training loop of ``autopar train`` / ``bench/training.py`` (``autopar.benchmarks.training``)."""

from __future__ import annotations

import numpy as np

import autopar as ap
from autopar.benchmarks.training import Trainer


def test_a_steps_statistics_run_after_its_forward_before_its_backward(two_cpus) -> None:  # type: ignore[no-untyped-def]
    # The loop waits for these statistics: run at the end of backward, they woke the driver
    # (and its pushes took the GIL) in the hand-overs the next forward waits for.
    trainer = Trainer("lenet", two_cpus, 0.1)
    rng = np.random.default_rng(0)
    images = rng.standard_normal((16, 1, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, 16)
    trainer.run_steps([(images, labels)])  # warm-up
    with ap.profile() as prof:
        stats = trainer.run_steps([(images, labels)])
    for device in ("cpu:0", "cpu:1"):
        ran = [r for r in prof.records if r.device == device and r.lane == "compute"]
        stats_start = next(r.start_ns for r in ran if r.name == "batch stats")
        forward_end = max(r.end_ns for r in ran if r.name == "cross_entropy")
        backward_start = min(r.start_ns for r in ran if r.name.startswith("backward"))
        assert forward_end <= stats_start < backward_start, device
    loss_times_n, correct = stats[0][0].numpy()
    assert np.isfinite(loss_times_n) and 0 <= correct <= 8
