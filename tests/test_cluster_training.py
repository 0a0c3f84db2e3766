"""Gradients on a cluster node's device, and data-parallel training with one replica per node (issue 10 items 4-5).

Oracles: torch autograd on the same inputs, and the plain-PyTorch LeNet on one
device and the whole batch (as ``test_data_parallel.py``). On the session's
local 2-node cluster (``connected``); the test that kills node1's runtime comes last
and connects again.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import torch
from test_data_parallel import lenet_data_parallel

import autopar as ap
import autopar.cluster
from autopar import autograd, parallel
from autopar.arrays._autograd import Leaf

N0, N1 = "node0/cpu:0", "node1/cpu:0"


def _program(x, w, b, lib):  # type: ignore[no-untyped-def]
    """Ops, a view (transpose, slice, reshape), a value used twice, a reduction."""
    h = lib.tanh(x @ w + b)
    return (h * h.T.T).sum() + (h[1:] * 2.0).reshape(-1).sum() + (x @ w).sum()


def test_gradients_on_a_nodes_device_equal_torch_autograd(connected) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    xs, ws, bs = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=(5,))
    x, w, b = (ap.asarray(v.astype(np.float32), device=N1) for v in (xs, ws, bs))
    for a in (x, w, b):
        a.attach_grad()
    with autograd.record():
        loss = _program(x, w, b, ap)
    loss.backward()
    t = [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in (xs, ws, bs)]
    want = _program(*t, torch)
    want.backward()
    assert w.grad.device == ap.Device(N1)  # the gradient stays on the node
    np.testing.assert_allclose(loss.numpy(), want.detach().numpy(), rtol=1e-5)
    for ours, theirs in zip((x, w, b), t):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_pytorch_style_gradients_on_a_node_accumulate_and_no_grad_records_nothing(connected) -> None:  # type: ignore[no-untyped-def]
    w = ap.asarray(np.array([1.0, -2.0, 3.0], dtype=np.float32), device=N0, requires_grad=True)
    for _ in range(2):
        (w * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 4 * np.array([1.0, -2.0, 3.0]))  # 2w, twice
    with ap.no_grad():
        y = w * 3
    assert not y.requires_grad
    with pytest.raises(RuntimeError, match="already used by a backward"):
        z = (w * w).sum()
        z.backward()
        z.backward()


def test_a_failed_forward_on_a_node_fails_the_gradient_it_feeds(connected) -> None:  # type: ignore[no-untyped-def]
    w = ap.asarray(np.ones(3, dtype=np.float32), device=N1)
    w.attach_grad()

    def broken(t):  # type: ignore[no-untyped-def]
        raise FloatingPointError("bad batch")

    bad = ap.call(broken, ap.ones(3, device=N1), shape=(3,))
    with autograd.record():
        loss = (w * bad).sum()
    loss.backward()
    with pytest.raises(FloatingPointError, match="bad batch"):
        w.grad.numpy()


def _record_keys(head) -> set[int]:  # type: ignore[no-untyped-def]
    """The keys of the node's records that ``head`` was computed through."""
    keys, stack = set(), [head._ag.node]
    while stack:
        node = stack.pop()
        keys.add(node.remote.key)
        stack.extend(ag.node for ag in node.inputs if type(ag) is not Leaf)
    return keys


def test_a_nodes_records_are_kept_while_the_graph_lives_and_freed_when_it_is_dropped(connected) -> None:  # type: ignore[no-untyped-def]
    from autopar.cluster import _session

    node = _session.node("node1")
    w = ap.asarray(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32), device=N1)
    w.attach_grad()
    with autograd.record():
        loss = (w * w + 1.0).sum()
    ap.waitall()
    keys = _record_keys(loss)
    assert len(keys) == 3 and keys <= set(node.keys())  # mul, add, sum: recorded there
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0, 6.0, 8.0])
    del loss
    gc.collect()
    held = set(node.keys())  # sends the freed keys first
    assert not keys & held and w.grad._storage.key in held  # the records went; the gradient stays


def test_lenet_with_one_replica_per_node_equals_one_device_on_the_whole_batch(connected) -> None:  # type: ignore[no-untyped-def]
    devices = [ap.Device(N0), ap.Device(N1)]
    replicas, want = lenet_data_parallel(devices, steps=2, batch=16)
    for replica, device in zip(replicas, devices):
        for ours, theirs in zip(replica, want):
            assert ours.device == device
            np.testing.assert_allclose(ours.numpy(), theirs, rtol=1e-4, atol=1e-5)


def test_adam_with_one_replica_per_node_equals_torch_optim(connected) -> None:  # type: ignore[no-untyped-def]
    """Adam on a node's device is table entries found by name (count, moments, parameter; the count
    an array of the state there): the replicas follow torch.optim.Adam on the whole batch."""
    devices = [ap.Device(N0), ap.Device(N1)]
    rng = np.random.default_rng(12)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in devices]
    replicas = parallel.replicate([ap.asarray(w0)], devices)
    trainer = parallel.DataParallel(replicas, parallel.adam(0.05, weight_decay=0.01))
    tw = torch.tensor(w0, requires_grad=True)
    opt = torch.optim.Adam([tw], lr=0.05, weight_decay=0.01)
    xd = [ap.asarray(x, device=d) for x, d in zip(xs, devices)]
    for _ in range(3):
        with autograd.record():
            trainer.step([(ap.tanh(x @ p[0]) ** 2).sum() for x, p in zip(xd, replicas)])
        opt.zero_grad()
        (sum((torch.tanh(torch.from_numpy(x) @ tw) ** 2).sum() for x in xs) / 2).backward()  # type: ignore[union-attr]
        opt.step()
    for row in replicas:
        np.testing.assert_allclose(row[0].numpy(), tw.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert [float(states[0][2].numpy()) for states in trainer.states] == [3.0, 3.0]


def test_train_cli_trains_across_nodes(connected) -> None:  # type: ignore[no-untyped-def]
    proc = subprocess.run([sys.executable, "-m", "autopar", "train", "--cluster", connected.address, "--quick",
                           "--steps", "2", "--test-samples", "64", "--batch-size", "16", "--quiet"],
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "devices: node0/cpu:0, node1/cpu:0 (one device on each of two cluster nodes)" in out
    two = out[out.index("2 devices (node0/cpu:0, node1/cpu:0), global batch 32"):]
    assert "epoch 1: loss" in two and "test acc" in two  # the data-parallel run trained and was tested


def test_a_lost_node_fails_the_gradients_and_sums_that_needed_it_and_nothing_hangs(connected) -> None:  # type: ignore[no-untyped-def]
    from autopar.cluster import _session

    node = _session.node("node1")
    w0, w1 = ap.ones(3, device=N0), ap.ones(3, device=N1)
    for w in (w0, w1):
        w.attach_grad()
    with autograd.record():
        l0, l1 = (w0 * 3.0).sum(), (w1 * w1).sum()
    l1.wait_to_read()  # the forward ran on node1: its record is there
    assert node.info is not None
    os.kill(node.info.pid, signal.SIGKILL)
    l0.backward()
    l1.backward()
    with pytest.raises(ap.NodeLostError, match="node1"):
        w1.grad.numpy()
    np.testing.assert_array_equal(w0.grad.numpy(), [3.0, 3.0, 3.0])  # the other node's gradient is unaffected
    parallel.allreduce([w0.grad, w1.grad])
    with pytest.raises(ap.NodeLostError, match="node1"):
        w0.grad.numpy()  # its sum needed node1's gradient
    with pytest.raises(ap.NodeLostError):
        ap.waitall()
    ap.waitall()  # returns: nothing hangs
    autopar.cluster.connect(connected.address)  # the next test gets a fresh runtime on node1
