"""nn.models with parallel.replicate: replicas are copies, and each device keeps its own batch-norm statistics."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import numpy as np
import pytest

import autopar as ap
from autopar import autograd, parallel
from autopar.nn import functional as F, models

sys.path.insert(0, os.path.dirname(__file__))
import _d2l_oracle as oracle  # noqa: E402


@pytest.fixture
def two_devices() -> Iterator[list[ap.Device]]:
    with oracle.two_cpu_devices() as devices:
        yield devices


def test_replicate_copies_the_parameters_on_their_own_device_too(two_devices) -> None:  # type: ignore[no-untyped-def]
    """Training the replicas leaves net.params as they were: a second replicate starts untrained."""
    net = models.build("lenet")
    before = [p.numpy() for p in net.params]
    replicas = parallel.replicate(net.params, two_devices)
    assert all(r is not p for r, p in zip(replicas[0], net.params))
    trainer = parallel.DataParallel(replicas, parallel.sgd(lr=0.5))
    rng = np.random.default_rng(0)
    X, y = rng.random((8, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, 8)
    Xs, ys = parallel.split_and_load(X, two_devices), parallel.split_and_load(y, two_devices)
    with autograd.record():
        losses = [F.cross_entropy(net(x, p), t) for x, t, p in zip(Xs, ys, replicas)]
    trainer.step(losses)
    assert not np.array_equal(replicas[0][0].numpy(), before[0])  # the replicas trained
    for p, b in zip(net.params, before):
        np.testing.assert_array_equal(p.numpy(), b)
    again = parallel.replicate(net.params, two_devices)
    np.testing.assert_array_equal(again[0][0].numpy(), before[0])


def test_resnet_statistics_follow_the_input_device(two_devices) -> None:  # type: ignore[no-untyped-def]
    """The README's loop with ResNet-18 on two devices: each device's batch norms update that device's copy."""
    net = models.build("resnet18")
    replicas = parallel.replicate(net.params, two_devices)
    X = np.random.default_rng(1).random((4, 1, 8, 8), dtype=np.float32)
    Xs = parallel.split_and_load(X, two_devices)
    with autograd.record():
        outs = [net(x, p) for x, p in zip(Xs, replicas)]
    assert [o.device for o in outs] == two_devices
    own, other = net.buffers[0], net.buffers_for(ap.cpu(1))[0]
    assert own.device == ap.cpu(0) and other.device == ap.cpu(1)
    # each device's running mean moved from 0 by its own shard's statistics
    assert not np.allclose(own.numpy(), 0) and not np.allclose(own.numpy(), other.numpy())
    assert net.buffers_for(ap.cpu(1))[0] is other  # kept, not copied again
