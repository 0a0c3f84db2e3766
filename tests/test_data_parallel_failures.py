"""Random failures in a multi-step data-parallel run on two devices, against torch.optim step by step.

Each step fails with some chance (a bad label on one device, or a failing op in one device's
forward); a failed step leaves every parameter and optimizer state failed, the test restores them
from values kept before the step, and torch.optim does not take that step. Some good steps leave the
bias unused (torch: its .grad is None, skipped). After every good step the replicas equal torch's
parameters; after every failed one, once restored, they are what they were before it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from _helpers import within

import autopar as ap
import autopar.nn.functional as F
from autopar import autograd, parallel


@pytest.fixture
def devices(eng):  # type: ignore[no-untyped-def]
    ap.set_cpu_devices(2)
    yield [ap.cpu(0), ap.cpu(1)]
    ap.waitall()
    ap.set_cpu_devices(1)


def _broken(t):  # type: ignore[no-untyped-def]
    raise FloatingPointError("bad batch")


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam"])
def test_random_failed_steps_leave_parameters_as_before_and_good_steps_follow_torch(devices, kind: str, sums: str) -> None:  # type: ignore[no-untyped-def]
    """Each optimizer, each way of summing (plain SGD on CPU devices of one process: one op sums a
    bucket and updates both devices; momentum and Adam: one op sums, each device updates)."""
    rng = np.random.default_rng({"adam": 31, "momentum": 32, "sgd": 33}[kind])
    w0 = [rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)]
    replicas = parallel.replicate([ap.asarray(w) for w in w0], devices)
    ours = (parallel.adam(0.05, weight_decay=0.01) if kind == "adam"
            else parallel.sgd(0.1, momentum=0.9 if kind == "momentum" else 0.0, weight_decay=0.01))  # fmt: skip
    trainer = parallel.DataParallel(replicas, ours)
    tp = [torch.tensor(w, requires_grad=True) for w in w0]
    opt = (torch.optim.Adam(tp, lr=0.05, weight_decay=0.01) if kind == "adam"
           else torch.optim.SGD(tp, lr=0.1, momentum=0.9 if kind == "momentum" else 0.0, weight_decay=0.01))  # fmt: skip
    outcomes = []
    for step in range(14):
        xs = [rng.standard_normal((3, 4)).astype(np.float32) for _ in devices]
        ys = [rng.integers(0, 3, 3) for _ in devices]
        use_bias = bool(rng.random() < 0.7)
        fault = rng.choice(["none", "none", "label", "op"])
        bad = int(rng.integers(0, 2))
        if fault == "label":
            ys[bad] = np.array([0, 9, 1])
        kept = [[p.numpy().copy() for p in row] for row in replicas]
        kept_states = [[[s.numpy().copy() for s in state] for state in states] for states in trainer.states]
        xd = [ap.asarray(x, device=d) for x, d in zip(xs, devices)]
        if fault == "op":
            xd[bad] = ap.call(_broken, xd[bad], shape=xd[bad].shape)
        with autograd.record():
            losses = [F.cross_entropy(x @ p[0] + (p[1] if use_bias else 0.0), ap.asarray(y, device=d))
                      for x, y, p, d in zip(xd, ys, replicas, devices)]  # fmt: skip
        trainer.step(losses)
        if fault != "none":
            for row in replicas:
                with pytest.raises((IndexError, FloatingPointError)):
                    within(60, row[0].numpy)
            within(60, ap.waitall)
            with ap.no_grad():
                for row, values, states, saved in zip(replicas, kept, trainer.states, kept_states):
                    for p, v in zip(row, values):
                        ap.asarray(v, device=p.device).copyto(p)
                    for state, arrays in zip(states, saved):
                        for s, v in zip(state, arrays):
                            ap.asarray(v, device=s.device).copyto(s)
            for row, values in zip(replicas, kept):
                for p, v in zip(row, values):
                    np.testing.assert_array_equal(within(60, p.numpy), v)
            outcomes.append("failed")
            continue
        opt.zero_grad()
        total = sum(TF.cross_entropy(torch.from_numpy(x) @ tp[0] + (tp[1] if use_bias else 0.0), torch.from_numpy(y))
                    for x, y in zip(xs, ys))  # fmt: skip
        (total / 2).backward()  # type: ignore[union-attr]
        opt.step()
        for row in replicas:
            for p, t in zip(row, tp):
                np.testing.assert_allclose(within(60, p.numpy), t.detach().numpy(), rtol=1e-4, atol=1e-5,
                                           err_msg=f"step {step}")  # fmt: skip
        outcomes.append("good" if use_bias else "good, bias unused")
    assert {"failed", "good", "good, bias unused"} <= set(outcomes), outcomes
