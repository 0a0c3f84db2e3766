"""The data-parallel training step: backward on every device, gradients summed as they become
ready, then the optimizer's update -- all pushed, nothing waited for.

``DataParallel(replicas, optimizer).step(losses)``, where ``replicas[d]`` are
device ``d``'s copies of the parameters (in the order the forward uses them)
and ``losses[d]`` its loss, pushes, in this order:

1. the backward of every loss (one gradient op per recorded op, ``_backward.py``);
2. for each *bucket* of parameters, last used first -- the order backward
   makes their gradients, as DDP's buckets assume --: ``allreduce`` of the
   bucket on the copy lanes, then the update of each of its parameters on
   every device.

Buckets are DDP's ``gradient_as_bucket_view``: on each device, the ``.grad``
of the parameters of a bucket are views of one flat array, so backward's
gradient ops write straight into it (each writes its part, ordered by the
bucket's var) and the bucket is summed as one array -- a few ops per bucket
instead of a few per parameter, and no copies in or out. The optimizer
updates a bucket's parameters together (``Optimizer.update_bucket``: one op
per bucket and device for plain SGD). Parameters join
the current bucket, in reverse order, until it would hold more than
``bucket_size`` elements (a parameter larger than that is a bucket alone).
A bucket's sum reads the whole bucket, so it starts when the last gradient
of the bucket is ready on every device, while backward goes on computing the
gradients of earlier layers on the compute lanes; each update starts when
its bucket is summed.
The next step's forward, pushed right after, waits for exactly the updates it
reads. ``step(losses, sync=False)`` skips the sums (each device updates with
its own gradients): the baseline against which the sums' cost is measured.

Only public array operations and engine pushes: nothing here assumes a
device's memory is in this process, so replicas may live on other machines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autopar.arrays import _autograd
from autopar.arrays._array import NDArray
from autopar.arrays._autograd import Leaf
from autopar.arrays._backward import backward
from autopar.arrays._copy import copy_to_device
from autopar.parallel._collectives import _devices, allreduce
from autopar.parallel._optim import Optimizer


BUCKET_SIZE = 1 << 15  # elements: LeNet's gradients fall in three buckets, ResNet-18's in one or two per stage


def _buckets(params: Sequence[NDArray], size: int) -> list[list[int]]:
    """Parameter indices grouped, last first, into buckets of at most ``size`` elements of one dtype."""
    buckets: list[list[int]] = []
    current: list[int] = []
    filled = 0
    for i in reversed(range(len(params))):
        n = params[i].size
        if current and (filled + n > size or params[i].dtype != params[current[0]].dtype):
            buckets.append(current)
            current, filled = [], 0
        current.append(i)
        filled += n
    if current:
        buckets.append(current)
    return buckets


def _bucket_view(row: Sequence[NDArray], indices: Sequence[int]) -> NDArray:
    """One flat array for the bucket on this device; each parameter's ``.grad`` becomes a view of it."""
    from autopar.arrays._creation import zeros

    first = row[indices[0]]
    flat = zeros(sum(row[i].size for i in indices), dtype=first.dtype, device=first.device)
    offset = 0
    for i in indices:
        p = row[i]
        p.grad = flat[offset : offset + p.size].reshape(p.shape)
        offset += p.size
    return flat


def replicate(params: Sequence[NDArray], devices: Any) -> list[list[NDArray]]:
    """A fresh copy of ``params`` on each device (copies on copy lanes), each a leaf that requires grad:
    ``replicas[d][i]`` is parameter ``i`` on ``devices[d]``.

    Every replica is a copy, on the device a parameter lives on too: training
    the replicas leaves ``params`` as they were, so a second ``replicate``
    starts from the same values as the first."""
    devs = _devices("replicate", devices)
    with _autograd.no_grad():
        sources = [p.detach() if p.requires_grad else p for p in params]
        replicas = [[p.copy() if d == p.device else copy_to_device(p, d) for p in sources] for d in devs]
    for row in replicas:
        for p in row:
            p.attach_grad()
    return replicas


class DataParallel:
    """A data-parallel training step for parameters replicated on several devices (module docstring).

    ``average=True`` (default) divides the summed gradient by the number of
    devices, as DDP does: with a mean loss per device, the update equals one
    device's on the whole batch. The step owns the gradients: each backward
    overwrites them (MXNet's ``grad_req="write"``).
    """

    def __init__(self, replicas: Sequence[Sequence[NDArray]], optimizer: Optimizer, *, average: bool = True,
                 bucket_size: int = BUCKET_SIZE) -> None:  # fmt: skip
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"DataParallel: optimizer={optimizer!r}; expected parallel.sgd(...) or parallel.adam(...)")
        self.replicas = [list(r) for r in replicas]
        if not self.replicas or not self.replicas[0]:
            raise ValueError("DataParallel: replicas must hold one list of parameters per device")
        count = len(self.replicas[0])
        devices = []
        for d, row in enumerate(self.replicas):
            if len(row) != count:
                raise ValueError(f"DataParallel: replica {d} has {len(row)} parameters, replica 0 has {count}")
            device = row[0].device
            for i, p in enumerate(row):
                if type(p) is not NDArray or type(p._ag) is not Leaf:
                    raise ValueError(f"DataParallel: parameter {i} of replica {d} does not require grad; "
                                     "use parallel.replicate(params, devices), or attach_grad() each")  # fmt: skip
                if p.device != device:
                    raise ValueError(f"DataParallel: replica {d} mixes devices {device} and {p.device}")
                if p.shape != self.replicas[0][i].shape:
                    raise ValueError(f"DataParallel: parameter {i} has shape {p.shape} on replica {d}, "
                                     f"{self.replicas[0][i].shape} on replica 0")  # fmt: skip
                p._ag.req = "write"
            devices.append(device)
        if len(set(devices)) != len(devices):
            raise ValueError(f"DataParallel: two replicas on one device ({', '.join(map(str, devices))})")
        if isinstance(bucket_size, bool) or not isinstance(bucket_size, int) or bucket_size < 1:
            raise ValueError(f"DataParallel: bucket_size={bucket_size!r}; expected a number of elements >= 1")
        self.devices = devices
        self.optimizer = optimizer
        self.average = average
        self.states = [[optimizer.state(p) for p in row] for row in self.replicas]
        self.buckets = _buckets(self.replicas[0], bucket_size)
        self.flats = [[_bucket_view(row, indices) for indices in self.buckets] for row in self.replicas]

    def __repr__(self) -> str:
        return (f"DataParallel({len(self.replicas[0])} parameters on {', '.join(map(str, self.devices))}, "
                f"{self.optimizer!r})")  # fmt: skip

    def step(self, losses: Sequence[NDArray], *, sync: bool = True) -> None:
        """Backward of ``losses`` (one per device), gradients summed across devices, update; returns at once."""
        if len(losses) != len(self.replicas):
            raise ValueError(f"DataParallel.step: {len(losses)} losses for {len(self.replicas)} devices; give one per device")
        for d, (loss, device) in enumerate(zip(losses, self.devices)):
            if type(loss) is not NDArray or loss.device != device:
                where = getattr(loss, "device", type(loss).__name__)
                raise ValueError(f"DataParallel.step: loss {d} is on {where}, its replica on {device}")
        backward(losses, None, what="DataParallel.step")
        scale = 1.0 / len(self.replicas) if self.average else 1.0
        optimizer = self.optimizer
        with _autograd.no_grad():
            optimizer.begin_step()
            for b, indices in enumerate(self.buckets):
                if sync:
                    allreduce([flats[b] for flats in self.flats])
                for row, states, flats in zip(self.replicas, self.states, self.flats):
                    optimizer.update_bucket([row[i] for i in indices], flats[b], [states[i] for i in indices], scale)
