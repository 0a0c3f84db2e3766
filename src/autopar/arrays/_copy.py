"""Moving data between devices, on the engine's copy lanes (table entry ``copy``).

| from -> to     | lane                       | how                                             |
|----------------|----------------------------|-------------------------------------------------|
| cpu -> cpu     | destination's ``copy``     | a one-thread copy on the copy worker            |
| cpu -> cuda    | destination's ``copy_h2d`` | pin (on the copy worker), then async copy       |
| cuda -> cpu    | source's ``copy_d2h``      | async copy into pinned host memory              |
| cuda -> cuda   | destination's ``copy_h2d`` | async peer copy on the destination's stream     |

To or from a cluster node's device (``node1/cpu:0``) the routes of the
cluster's remote interpreter apply (``_interpreters.remote``): the same lanes, the data moved through Ray.

Because copies run on copy lanes, copying result *i* overlaps computing result
*i+1* on the compute lane. A device-to-host copy is complete only when its
event is: the engine's event logic makes every reader wait for it. A copy
between two GPUs runs on the destination's lane stream with the source
device current for nothing: the kernel names both devices, and the
dispatcher records the source's memory on the copying stream whenever the
storage was allocated by another lane or by the user (``Storage.lane``).
"""

from __future__ import annotations

from typing import Any

import torch

from autopar.arrays import _interpreters
from autopar.arrays._array import NDArray, as_device
from autopar.arrays._dispatch import bind, bind_into
from autopar.arrays._table import TABLE, define, same
from autopar.devices import COPY, COPY_D2H, COPY_H2D, Device, _cuda


def _route(src: Device, dst: Device) -> tuple[Device, str]:
    if src.kind == "cuda" and dst.kind == "cpu":
        return src, COPY_D2H
    if dst.kind == "cuda":
        return dst, COPY_H2D
    return dst, COPY


def _move(t: torch.Tensor, target: str) -> torch.Tensor:
    if target == "cpu":
        if t.is_cuda:
            out = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
            _cuda.keep_on_loss(out)  # its free records a CUDA event: kept if the device is lost
            return out.copy_(t, non_blocking=True)
        return t.clone()
    if not t.is_cuda and not t.is_pinned():
        t = _cuda.keep_on_loss(t.pin_memory())
    return torch.empty(t.shape, dtype=t.dtype, device=target).copy_(t, non_blocking=True)


define("copy", _move, same(), shape=lambda op, shapes, s: shapes, kernel_dtype="bits")


def copy_to_device(src: NDArray, dst: Device, name: str = "copyto") -> NDArray:
    if src.device.node is not None or dst.node is not None:  # a cluster node's device: the cluster's routes
        moved: NDArray = _interpreters.remote.copy_to_device(src, dst, name)
        return moved
    lane_device, lane = _route(src.device, dst)
    target = "cpu" if dst.kind == "cpu" else f"cuda:{dst.index}"
    out: NDArray = bind(TABLE["copy"], (src,), {"target": target}, device=lane_device, lane=lane,
                        out_device=dst, inline=False, name=name)  # fmt: skip
    return out


def copy_into(src: NDArray, target: NDArray) -> NDArray:
    if src.shape != target.shape:
        raise ValueError(
            f"copyto: source shape {src.shape} differs from the target array's {target.shape}; "
            f"reshape one, or copy to a device instead"
        )
    if target is src or (target._storage is src._storage and target._view is src._view):
        return target
    if (src.device.node is not None or target.device.node is not None) and src.device != target.device:
        src = copy_to_device(src, target.device)  # to the target's node first; then written there
    lane_device, lane = _route(src.device, target.device)
    return bind_into(TABLE["assign"], target, (src,), what="copyto", casting="unsafe", device=lane_device, lane=lane)


def copyto(self: NDArray, target: Any) -> NDArray:
    """Copy to ``target``: a device (returns a new array there) or an array (written into).

    Always asynchronous, on a copy lane.
    """
    if type(target) is NDArray:
        return copy_into(self, target)
    return copy_to_device(self, as_device(target))


def to(self: NDArray, device: Any, non_blocking: bool = False) -> NDArray:
    """PyTorch's spelling: this array on ``device`` (itself if already there).

    With ``non_blocking=False`` it returns after the copy has finished (and
    raises its failure) -- also when the array is already there (the contract on arrays, §4.3).
    """
    dst = as_device(device)
    out = self if dst == self.device else copy_to_device(self, dst)
    if not non_blocking:
        out.wait_to_read()
    return out
