"""Sums between CPU devices of this process: one op reads every device's array.

``allreduce`` copies each device's array to every other device before it
sums, because an op touches only its own device's memory -- a GPU's, or
another machine's, is not this thread's to read. CPU devices of one process
share its memory: there the copies are pure cost, and so are the extra
engine ops -- a data-parallel LeNet step on two CPU devices spent about a
millisecond of a 13 ms step on the copy lanes' copies and sums and on
updates queued behind backward, which for CPU devices is CPU time taken from
the compute lanes on the same cores.

So where every array is a whole array on a CPU device of this process, the
sum is *one* op on a copy lane: it reads every device's array and writes the
sum into each, with the same additions in the same order as ``allreduce``
(``a_0 + a_1 + ...``, device order), so every device holds the same bits as
it would have. A data-parallel step hands the op its devices' bucket updates
too (``Optimizer.bucket_kernel``, plain SGD, two parameters or more in the
bucket; a bucket of one parameter is updated by each device's own op after
the sum, as through copies): one op per bucket sums the
gradients and moves every device's parameters -- started, like the copies
and sums it replaces, as soon as the bucket's gradients are ready on every
device, while backward goes on on the compute lanes. The bucket backward
makes last has no backward left to overlap: the step runs its op on a
compute lane, where the next forward follows without a hand-over between
threads. The profiler counts the op as traffic: its function says it reads
every device's array (``between_devices``).

Failures and Ctrl-C are as before: the op writes every device's array (and
with updates, parameters), so a failed read fails all of them, which is what
the copies, sums and updates it replaces did between them; the step pushing
it is all-or-nothing as before (``engine/_group.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from autopar.arrays import _autograd
from autopar.arrays._array import NDArray
from autopar.arrays._eager import push
from autopar.devices import COPY, Device
from autopar.parallel._optim import BucketKernel


def shares_memory(devices: Sequence[Device]) -> bool:
    """Whether ``devices`` are several CPU devices of this process."""
    return len(devices) > 1 and all(d.kind == "cpu" and d.node is None for d in devices)


def shared_memory(arrays: Sequence[NDArray]) -> bool:
    """Whether every array is a whole array on a CPU device of this process (one op may read them all)."""
    for a in arrays:
        storage = a._storage
        if a.device.kind != "cpu" or storage.remote or a._view is not None:
            return False
    return True


def sum_kernel(arrays: Sequence[NDArray]) -> Callable[[], None]:
    """A function writing ``arrays[0] + arrays[1] + ...`` (in that order) into each of ``arrays``."""
    storages = [a._storage for a in arrays]
    # uint16/32/64, which torch's CPU add does not take: their bits read as the signed type of their width
    # (DType.moves) add to the bits the sums through copies give (computed in int64, cast back: both wrap)
    dtype = arrays[0].dtype
    signed = dtype.moves if dtype.moves is not dtype.torch else None

    def run() -> None:
        tensors = [s.base() for s in storages]
        if signed is not None:
            tensors = [t.view(signed) for t in tensors]
        first, rest = tensors[0], tensors[1:]
        if len(rest) == 1:
            torch.add(first, rest[0], out=first)
        else:
            total = torch.add(first, rest[0])
            for t in rest[1:]:
                total = torch.add(total, t)
            first.copy_(total)
        for t in rest:
            t.copy_(first)

    return run


def push_sums(groups: Sequence[Sequence[NDArray]], updates: Sequence[BucketKernel], name: str,
              lane: str = COPY) -> None:  # fmt: skip
    """One op on the first array's device's ``lane``: each group's sum written into every array of the
    group, then ``updates`` (functions with the vars they read and write) run in order.

    Raises at the call, as the copies' in-place adds do, where autograd would record a write into an
    array (a leaf that requires grad, a recorded result): the sum would be invisible to backward."""
    for arrays in groups:
        for a in arrays:
            _autograd.check_inplace(name, a, ())
    sums = [sum_kernel(arrays) for arrays in groups]
    kernels = sums + [run for run, _, _ in updates]
    summed = tuple(a._storage.var for arrays in groups for a in arrays)
    reads = summed + tuple(dict.fromkeys(v for _, r, _ in updates for v in r if v not in summed))
    writes = summed + tuple(v for _, _, w in updates for v in w)

    def run() -> None:
        for kernel in kernels:
            kernel()

    run.between_devices = True  # type: ignore[attr-defined]  # (the profiler's traffic: it reads every device)
    push(run, reads, writes, groups[0][0].device, name, lane)
