"""The data-parallel training step: backward on every device, gradients summed as they become
ready, then the optimizer's update -- all pushed, nothing waited for.

``DataParallel(replicas, optimizer).step(losses)``, where ``replicas[d]`` are
device ``d``'s copies of the parameters (in the order the forward uses them)
and ``losses[d]`` its loss, pushes, in this order:

1. the backward of every loss (one gradient op per recorded op, ``_backward.py``);
2. for each parameter, last used first -- the order backward makes their
   gradients, as DDP's buckets assume --: ``allreduce`` of its gradients on
   the copy lanes, then its update on every device.

Each sum reads only its own parameter's gradients, so it starts when those
are ready on every device, while backward goes on computing the gradients of
earlier layers on the compute lanes; each update starts when its sum is done.
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
from autopar.parallel._collectives import allreduce, broadcast
from autopar.parallel._optim import Optimizer


def replicate(params: Sequence[NDArray], devices: Any) -> list[list[NDArray]]:
    """One copy of ``params`` per device (copies on copy lanes; the device a parameter lives on
    keeps it), each a leaf that requires grad: ``replicas[d][i]`` is parameter ``i`` on ``devices[d]``."""
    with _autograd.no_grad():
        columns = [broadcast(p.detach() if p.requires_grad else p, devices) for p in params]
    replicas = [list(row) for row in zip(*columns)]
    for row in replicas:
        for i, p in enumerate(row):
            original = params[i]
            if p._storage is original._storage and original.requires_grad:
                row[i] = original
            else:
                p.attach_grad()
    return replicas


class DataParallel:
    """A data-parallel training step for parameters replicated on several devices (module docstring).

    ``average=True`` (default) divides the summed gradient by the number of
    devices, as DDP does: with a mean loss per device, the update equals one
    device's on the whole batch. The step owns the gradients: each backward
    overwrites them (MXNet's ``grad_req="write"``).
    """

    def __init__(self, replicas: Sequence[Sequence[NDArray]], optimizer: Optimizer, *, average: bool = True) -> None:
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
        self.devices = devices
        self.optimizer = optimizer
        self.average = average
        self.states = [[optimizer.state(p) for p in row] for row in self.replicas]

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
            for i in reversed(range(len(self.replicas[0]))):
                params = [row[i] for row in self.replicas]
                grads = [p.grad for p in params]
                if sync:
                    allreduce(grads)
                for p, g, state in zip(params, grads, (s[i] for s in self.states)):
                    optimizer.update(p, g, state, scale)
