"""The PyTorch DDP baseline: real synchronised data parallelism, figures, and no process left behind.

Each test spawns real gloo workers on 127.0.0.1 with small sizes.
"""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
import torch

from autopar.benchmarks import ddp_baseline
from autopar.benchmarks.ddp_baseline import DDPConfig
from autopar.benchmarks.reference_models import build


def test_ddp_training_equals_one_process_on_the_whole_batch() -> None:
    """Two DDP ranks end with the parameters one process gets on the global batches.

    The oracle is plain torch training; catches: gradients not summed across
    ranks (each rank would follow its own shard), shards that overlap or are
    not the batch's halves, ranks starting from different parameters."""
    config = DDPConfig.for_model("lenet", batch_per_device=8, steps=3, lr=0.5, timeout_s=120)
    ranks = ddp_baseline.train(config)
    assert len(ranks) == 2 and not multiprocessing.active_children()
    np.testing.assert_array_equal(ranks[0], ranks[1])

    model = build("lenet", config.seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
    start = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()
    for x, y in ddp_baseline.global_batches(config)[: config.steps]:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        optimizer.step()
    expected = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
    assert not np.allclose(expected, start.numpy(), atol=1e-3)  # the steps moved the parameters
    np.testing.assert_allclose(ranks[0], expected, rtol=1e-4, atol=1e-5)


def test_measure_reports_every_figure_then_leaves_no_process() -> None:
    # catches: a figure missing or computed from the wrong list; workers left running after the call
    config = DDPConfig.for_model("lenet", quick=True, batch_per_device=16, repeats=2, timeout_s=120)
    result = ddp_baseline.measure(config)
    assert not multiprocessing.active_children()
    for runs in (result.single_step_s, result.ddp_step_s, result.nosync_step_s):
        assert len(runs) == 2 and all(0 < s < 10 for s in runs)
    assert len(result.allreduce_s) == config.allreduce_repeats and result.parameters == 61_706
    assert result.ddp_samples_per_s == pytest.approx(2 * 16 / np.median(result.ddp_step_s))
    assert result.speedup == pytest.approx(result.ddp_samples_per_s / result.single_samples_per_s)
    names = [f.name for f in result.figures()]
    assert names == ["lenet, batch 16/device: 1 process x 1 thread", "lenet, batch 16/device: DDP 2 x 1",
                     "lenet, batch 16/device: DDP step / no_sync step",
                     "lenet, batch 16/device: one flat allreduce of all gradients"]
    text = ddp_baseline.report([result])
    assert "DDP step / no_sync step" in text and "61,706 float32" in text
    assert result.as_dict()["sync_ratio"] == result.sync_ratio


def test_a_timeout_kills_every_worker() -> None:
    # catches: workers not terminated when the parent gives up; a wait without a deadline
    config = DDPConfig.for_model("lenet", quick=True, timeout_s=0.2)
    with pytest.raises(TimeoutError, match=r"no result from rank\(s\) 0, 1 within timeout_s=0.2.*raise timeout_s"):
        ddp_baseline.measure(config)
    assert not multiprocessing.active_children()


def test_a_failing_worker_reports_its_traceback_and_the_others_are_stopped() -> None:
    # catches: a worker's exception lost (the parent would wait for the deadline); survivors left running
    config = DDPConfig.for_model("lenet", quick=True, lr=-1.0, timeout_s=120)
    with pytest.raises(ChildProcessError, match=r"(?s)ddp baseline: rank \d failed:.*Invalid learning rate"):
        ddp_baseline.measure(config)
    assert not multiprocessing.active_children()


def test_config_refuses_what_cannot_run() -> None:
    with pytest.raises(ValueError, match=r"ddp baseline: model 'vgg'; expected one of lenet, resnet18"):
        DDPConfig.for_model("vgg")
    with pytest.raises(ValueError, match=r"DDPConfig: world=1; DDP needs at least 2 processes"):
        DDPConfig(world=1)
    with pytest.raises(ValueError, match=r"DDPConfig: steps=0; expected a whole number >= 1"):
        DDPConfig.for_model("lenet", steps=0)
    with pytest.raises(ValueError, match=r"DDPConfig: timeout_s=0; expected seconds > 0"):
        DDPConfig(timeout_s=0)
