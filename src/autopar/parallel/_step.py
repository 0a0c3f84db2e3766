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

On CPU devices of one process (``_local.py``) a bucket's sum is one op on a
copy lane (the last bucket's: a compute lane) that reads every device's
bucket -- no copies -- and, with plain
SGD, updates every device's parameters too: one op per bucket in all (a
bucket of one parameter: the sum, then each device's update of it). There
buckets are larger by default (``SHARED_BUCKET_SIZE``: LeNet is one bucket),
since what a bucket costs besides its adds -- an op handed between threads on
busy cores, a cut in a captured backward -- is worth paying only for a sum
that takes a while (two CPU devices, captured LeNet step, samples/s against
one device: 1.66x with LeNet in three buckets, 1.79x in one).

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
from autopar.arrays._dispatch import push
from autopar.engine._group import atomic
from autopar.devices import COPY
from autopar.parallel import _local
from autopar.parallel._collectives import SUM_NAME, _devices, allreduce, broadcast
from autopar.parallel._optim import BucketKernel, Optimizer


SUM_AND_UPDATE_NAME = SUM_NAME + " and update"  # (the name of the one op that sums a bucket and updates)
BUCKET_SIZE = 1 << 15  # elements: LeNet's gradients fall in three buckets, ResNet-18's in one or two per stage
# elements, on CPU devices of this process: a bucket's sum there is one op of adds at memory speed (_local.py),
# and what a bucket costs besides -- an op's hand-overs between threads on busy cores, a cut in a captured
# backward -- is worth paying only for a sum that takes a while: LeNet is one bucket, ResNet-18 twelve
SHARED_BUCKET_SIZE = 1 << 20


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


def _keep() -> None:
    """A bucket every gradient of this step rewrites: nothing to do (its push clears a failure)."""


class DataParallel:
    """A data-parallel training step for parameters replicated on several devices (module docstring).

    ``average=True`` (default) divides the summed gradient by the number of
    devices, as DDP does: with a mean loss per device, the update equals one
    device's on the whole batch. The step owns the gradients: each backward
    overwrites them (MXNet's ``grad_req="write"``). ``capture=True`` (or a
    capture mode, ``"replay"``, ``"compile"``, ``"fastest"``): :meth:`step_batch`
    runs captured (``autopar.capture``; ``True`` is its default mode, ``"auto"``).
    """

    def __init__(self, replicas: Sequence[Sequence[NDArray]], optimizer: Optimizer, *, average: bool = True,
                 bucket_size: int | None = None, capture: bool | str = False) -> None:  # fmt: skip
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
        shared = _local.shares_memory(devices)
        if bucket_size is None:
            bucket_size = SHARED_BUCKET_SIZE if shared else BUCKET_SIZE
        if isinstance(bucket_size, bool) or not isinstance(bucket_size, int) or bucket_size < 1:
            raise ValueError(f"DataParallel: bucket_size={bucket_size!r}; expected a number of elements >= 1")
        self.devices = devices
        self.optimizer = optimizer
        self.average = average
        self.states = [[optimizer.state(p) for p in row] for row in self.replicas]
        self.buckets = _buckets(self.replicas[0], bucket_size)
        self.flats = [[_bucket_view(row, indices) for indices in self.buckets] for row in self.replicas]
        # devices of one process's memory: a bucket's sum is one op that reads every device's bucket (_local.py;
        # the buckets, made just above on those devices, are whole arrays there)
        self._shared = shared
        self._batch_step: Any = self._step_batch
        if capture:
            from autopar._capture import capture as captured

            self._batch_step = captured(self._step_batch, mode="auto" if capture is True else capture)
            self._batch_step.name = "DataParallel.step_batch"  # (the profiler's name of its captured ops)

    def step_batch(self, loss_fn: Any, X: Any, y: Any) -> list[NDArray]:
        """One step on a global batch: ``X`` and ``y`` split along axis 0 over the replicas' devices,
        each device's loss ``loss_fn(params, x, y)`` recorded on its own replica, then :meth:`step`.
        Returns each device's loss; returns at once.

        With ``capture=True`` the whole step -- split, each replica's forward and backward, the
        gradient sums, the updates -- is captured: after the first batch of a shape, one engine op
        per device and lane segment, each device's backward cut at the gradient buckets so that their
        sums still start while backward runs (the guide's capture section)."""
        from autopar.arrays._creation import asarray

        X = X if type(X) is NDArray else asarray(X)
        y = y if type(y) is NDArray else asarray(y)
        losses: list[NDArray] = self._batch_step(loss_fn, X, y)
        return losses

    def _step_batch(self, loss_fn: Any, X: NDArray, y: NDArray) -> list[NDArray]:
        from autopar.parallel._collectives import split_and_load

        xs, ys = split_and_load(X, self.devices), split_and_load(y, self.devices)
        with _autograd.record():
            losses = [loss_fn(params, x, t) for params, x, t in zip(self.replicas, xs, ys)]
        self.step(losses)
        return losses

    def __repr__(self) -> str:
        return (f"DataParallel({len(self.replicas[0])} parameters on {', '.join(map(str, self.devices))}, "
                f"{self.optimizer!r})")  # fmt: skip

    def step(self, losses: Sequence[NDArray], *, sync: bool = True) -> None:
        """Backward of ``losses`` (one per device), gradients summed across devices, update; returns at once.

        A parameter that no device's loss reaches is not moved by the step (as ``torch.optim`` skips
        a parameter whose ``.grad`` is None): its update is not pushed, its optimizer state is left
        as it was, and its ``.grad`` holds zeros. One reached on some devices only is updated on
        every device, with the sum of the gradients of those that reached it.

        A failed step fails what it would have written -- the parameters and the optimizer state of
        every device -- and the next step succeeds once they are restored (``copyto`` from values
        kept before the step), whether or not the failure was read first: each step overwrites its
        gradient buckets before writing them, which clears a failure they hold. Under Ctrl-C the
        step is all-or-nothing: an interrupt landing while it pushes is raised once all of it is
        pushed (``engine/_group.py``).
        """
        if len(losses) != len(self.replicas):
            raise ValueError(f"DataParallel.step: {len(losses)} losses for {len(self.replicas)} devices; give one per device")
        for d, (loss, device) in enumerate(zip(losses, self.devices)):
            if type(loss) is not NDArray or loss.device != device:
                where = getattr(loss, "device", type(loss).__name__)
                raise ValueError(f"DataParallel.step: loss {d} is on {where}, its replica on {device}")
        self._step(losses, sync)

    def _prepare_buckets(self, reached: set[int]) -> None:
        """Before backward pushes its gradients, one overwrite of each bucket on each device: zeros
        when it holds a parameter this device's loss does not reach (its slot must hold no earlier
        step's gradient: the bucket is summed whole); else an op that does nothing -- the gradients
        rewrite the whole bucket -- but, being an overwrite, clears a failure an earlier step left
        there (contract, failures rule 2; each gradient writes only its part of the bucket and so would keep it).

        Pushed every step, whether or not a failure is stored yet: the earlier step's failure may
        be recorded only after this push (the threaded policy), and what this step does must not
        depend on when that happens (the naive policy records it first)."""
        with _autograd.no_grad():
            for row, flats in zip(self.replicas, self.flats):
                for indices, flat in zip(self.buckets, flats):
                    storage = flat._storage
                    if storage.remote or any(id(row[i]._ag) not in reached for i in indices):
                        flat[...] = 0.0  # (a node's bucket: its failure is kept on the node too)
                    else:
                        push(_keep, (), (storage.var,), flat.device, "gradient bucket")

    @atomic("DataParallel.step()")
    def _step(self, losses: Sequence[NDArray], sync: bool) -> None:
        cuts = [[row[i]._ag for row in self.replicas for i in indices] for indices in self.buckets]
        reached = {id(leaf) for leaf in backward(losses, None, what="DataParallel.step", before=self._prepare_buckets,
                                                 cuts=cuts)}  # fmt: skip
        used = [any(id(row[i]._ag) in reached for row in self.replicas) for i in range(len(self.replicas[0]))]
        scale = 1.0 / len(self.replicas) if self.average else 1.0
        with _autograd.no_grad():
            self.optimizer.begin_step()
            for b, indices in enumerate(self.buckets):
                live = [i for i in indices if used[i]]
                if not live:
                    continue  # nothing reached it: nothing to sum, nothing to move
                if sync and self._shared:
                    if self._sum_shared(b, live, scale):
                        continue
                elif sync:
                    allreduce([flats[b] for flats in self.flats])
                self._update(b, live, scale)

    def _update(self, b: int, live: Sequence[int], scale: float) -> None:
        """Each device's update of the parameters of bucket ``b`` that its step reached (``live``)."""
        indices = self.buckets[b]
        for row, states, flats in zip(self.replicas, self.states, self.flats):
            if len(live) == len(indices):
                self.optimizer.update_bucket([row[i] for i in indices], flats[b], [states[i] for i in indices], scale)
            else:
                for i in live:
                    self.optimizer.update(row[i], row[i].grad, states[i], scale)

    def _sum_shared(self, b: int, live: Sequence[int], scale: float) -> bool:
        """Bucket ``b`` summed in one op, on devices of this process's memory (``_local.py``), which
        updates every device's parameters too where the optimizer makes one kernel of a bucket's
        update; returns whether it did (else the updates are still to push)."""
        indices = self.buckets[b]
        flats = [flats[b] for flats in self.flats]
        kernels: list[BucketKernel] = []
        if len(live) == len(indices):
            for row, states, flat in zip(self.replicas, self.states, flats):
                kernel = self.optimizer.bucket_kernel([row[i] for i in indices], flat, [states[i] for i in indices],
                                                      scale)  # fmt: skip
                if kernel is None:
                    kernels = []
                    break
                kernels.append(kernel)
        # The bucket backward makes last has no backward left to overlap: its sum runs on a compute lane,
        # where the next forward follows it without a hand-over between threads (two CPU devices, captured
        # LeNet step, in one bucket: 1.84x one device against 1.81x on a copy lane, 25 alternated rounds)
        last = b == len(self.buckets) - 1
        _local.push_sums([flats], kernels, SUM_AND_UPDATE_NAME if kernels else SUM_NAME, "compute" if last else COPY)
        return bool(kernels)
