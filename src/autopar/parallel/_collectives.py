"""Moving a batch and gradients between devices: ``split_and_load``, ``broadcast``, ``allreduce``.

Only public array operations, on the devices' copy lanes: copies
(``copyto``) and adds written into arrays (``bind_into`` on a copy lane). No
op touches memory of a device other than its own, so the same calls work for
devices of other machines (``<node>/cpu:0``), whose copies the engine turns
into transfers.

``allreduce([a_0, ..., a_n-1])`` on n devices: each device gathers copies
of the others' arrays on its copy lane, then sums them into its own, in
device order (``a_0 + a_1 + ...``) -- the same additions in the same order
everywhere, so every device ends with the same bits. For two devices that is
two copies that run side by side and two adds: two steps deep, where reducing
to one device and broadcasting back takes three. Because everything is
pushed, each sum waits for exactly the gradients it reads: it starts as soon
as they are ready on every device, while the rest of backward runs on the
compute lanes. ``n (n - 1)`` copies: fine for the few devices of one machine;
a ring would be the choice for many.

CPU devices of one process share its memory: there ``allreduce`` of whole
arrays is one op that reads them all and writes the sum, with the same
additions in the same order, into each (``_local.py``) -- except inside a
function ``autopar.capture`` traces, which records the copies and sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from autopar.arrays._array import NDArray
from autopar.arrays._copy import copy_to_device
from autopar.arrays._creation import asarray
from autopar.arrays._dispatch import bind_into
from autopar.arrays._table import TABLE
from autopar.devices import COPY, COPY_H2D, Device
from autopar.engine._group import atomic


# The names of allreduce's ops, as the profiler shows them (it finds traffic by what ops do, not by name).
COPY_NAME = "allreduce copy"
SUM_NAME = "allreduce sum"


def _devices(op: str, devices: Any) -> list[Device]:
    if isinstance(devices, (Device, str)):
        devices = [devices]
    out = [d if type(d) is Device else Device(d) for d in devices]
    if not out:
        raise ValueError(f"{op}: give at least one device")
    return out


def split_and_load(data: Any, devices: Any, batch_axis: int = 0, even_split: bool = True) -> list[NDArray]:
    """``data`` split along ``batch_axis`` into one part per device, each on its device (MXNet's).

    Host data (NumPy, lists) is split on the host and each part uploaded to its
    device; an autopar array is split into views, each copied to its device
    (the part already on the array's device is the view itself). With
    ``even_split`` (the default) the size along the axis must divide evenly.
    """
    devs = _devices("split_and_load", devices)
    arr = data if type(data) is NDArray else np.asarray(data)
    n = len(devs)
    size = arr.shape[batch_axis]
    if even_split and size % n:
        raise ValueError(f"split_and_load: {size} samples along axis {batch_axis} do not split evenly over {n} devices; "
                         f"use a batch size divisible by {n}, or even_split=False")  # fmt: skip
    if size < n:
        raise ValueError(f"split_and_load: {size} samples cannot be split over {n} devices")
    bounds = [size * i // n for i in range(n + 1)]
    parts = []
    for d, lo, hi in zip(devs, bounds, bounds[1:]):
        index = (slice(None),) * batch_axis + (slice(lo, hi),)
        part = arr[index]
        if type(part) is NDArray:
            parts.append(part if part.device == d else copy_to_device(part, d))
        else:
            parts.append(asarray(part, device=d))
    return parts


def broadcast(array: NDArray, devices: Any) -> list[NDArray]:
    """``array`` on every device of ``devices``: itself where it lives, a copy (on a copy lane) elsewhere."""
    if type(array) is not NDArray:
        raise TypeError(f"broadcast: expected an autopar array, got {type(array).__name__}")
    return [array if d == array.device else copy_to_device(array, d) for d in _devices("broadcast", devices)]


def _sum_lane(device: Device) -> str:
    return COPY_H2D if device.kind == "cuda" else COPY


def allreduce(arrays: Sequence[NDArray]) -> None:
    """Sum ``arrays`` (one per device, same shape and dtype) and write the sum into each; returns at once.

    All-or-nothing under Ctrl-C: an interrupt landing while it pushes is raised once every copy and
    sum is pushed, so no device is left with the sum while another keeps its own value."""
    arrays = list(arrays)
    if not arrays or any(type(a) is not NDArray for a in arrays):
        raise TypeError("allreduce: expected a list of autopar arrays, one per device")
    first = arrays[0]
    for a in arrays[1:]:
        if a.shape != first.shape or a.dtype != first.dtype:
            raise ValueError(f"allreduce: arrays of shape {a.shape} {a.dtype} and {first.shape} {first.dtype}; "
                             "every device's array must have one shape and dtype")  # fmt: skip
    devices = [a.device for a in arrays]
    if len(set(devices)) != len(devices):
        raise ValueError(f"allreduce: two arrays on one device ({', '.join(map(str, devices))}); give one per device")
    if len(arrays) == 1:
        return
    from autopar.arrays import _interpreters
    from autopar.parallel import _local

    # (one op bound to these arrays, which a capture may trace only on arrays its function closes over:
    # a captured function's sums go through copies and sums, kernels it records for any arrays)
    if _local.shared_memory(arrays) and _interpreters.current() is None:
        _local.push_sums([arrays], (), SUM_NAME)
        return
    _push_allreduce(arrays, devices)


@atomic("allreduce()")
def _push_allreduce(arrays: list[NDArray], devices: list[Device]) -> None:
    # every copy is pushed before any sum: a sum writes an array the copies read
    gathered = [[a if j == i else copy_to_device(a, d, COPY_NAME) for j, a in enumerate(arrays)]
                for i, d in enumerate(devices)]  # fmt: skip
    add = TABLE["add"]
    for target, terms in zip(arrays, gathered):
        lane = _sum_lane(target.device)
        if len(terms) == 2:
            bind_into(add, target, terms, what=SUM_NAME, device=target.device, lane=lane)
            continue
        total = terms[0]
        for term in terms[1:-1]:
            from autopar.arrays._dispatch import bind

            total = bind(add, (total, term), device=target.device, lane=lane, name=SUM_NAME)
        bind_into(add, target, (total, terms[-1]), what=SUM_NAME, device=target.device, lane=lane)
