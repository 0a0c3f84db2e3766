"""Moving data between devices, on the engine's copy lanes.

| from -> to     | lane                       | how                                             |
|----------------|----------------------------|-------------------------------------------------|
| cpu -> cpu     | destination's ``copy``     | a one-thread copy on the copy worker            |
| cpu -> cuda    | destination's ``copy_h2d`` | pin (on the copy worker), then async copy       |
| cuda -> cpu    | source's ``copy_d2h``      | async copy into pinned host memory              |
| cuda -> cuda   | destination's ``copy_h2d`` | async peer copy                                 |

Because copies run on copy lanes, copying result *i* overlaps computing result
*i+1* on the compute lane. A device-to-host copy is complete only when its
event is: the engine's event logic makes every reader wait for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from autopar.ndarray._core import NDArray, launch, launch_inplace, make
from autopar.devices import COPY, COPY_D2H, COPY_H2D, Device


def _route(src: Device, dst: Device) -> tuple[Device, str]:
    if src.kind == "cuda" and dst.kind == "cpu":
        return src, COPY_D2H
    if dst.kind == "cuda":
        return dst, COPY_H2D
    return dst, COPY


def _copy_kernel(dst: Device, shape: tuple[int, ...], dtype: torch.dtype) -> Callable[[torch.Tensor], torch.Tensor]:
    if dst.kind == "cpu":

        def to_host(t: torch.Tensor) -> torch.Tensor:
            if t.is_cuda:
                out = torch.empty(shape, dtype=dtype, pin_memory=True)
                return out.copy_(t, non_blocking=True)
            return t.clone()

        return to_host
    target = f"cuda:{dst.index}"

    def to_cuda(t: torch.Tensor) -> torch.Tensor:
        if not t.is_cuda and not t.is_pinned():
            t = t.pin_memory()
        return torch.empty(shape, dtype=dtype, device=target).copy_(t, non_blocking=True)

    return to_cuda


def copy_to_device(src: NDArray, dst: Device) -> NDArray:
    lane_device, lane = _route(src.device, dst)
    out = make(src.shape, src._tdtype, dst)
    return launch("copyto", _copy_kernel(dst, src.shape, src._tdtype), out, (src,), lane=lane, device=lane_device)


def copy_into(src: NDArray, target: NDArray) -> NDArray:
    if src.shape != target.shape:
        raise ValueError(
            f"copyto: source shape {src.shape} differs from the target array's {target.shape}; "
            f"reshape one, or copy to a device instead"
        )
    if target is src or (target._storage is src._storage and target._view is src._view):
        return target
    lane_device, lane = _route(src.device, target.device)
    non_blocking = src.device.kind == "cuda" or target.device.kind == "cuda"

    def write(t: torch.Tensor, s: torch.Tensor) -> None:
        t.copy_(s, non_blocking=non_blocking)

    return launch_inplace("copyto", write, target, (src,), lane=lane, device=lane_device)


def copyto(self: NDArray, target: Any) -> NDArray:
    """Copy to ``target``: a device (returns a new array there) or an array (written into).

    Always asynchronous, on a copy lane.
    """
    if type(target) is NDArray:
        return copy_into(self, target)
    return copy_to_device(self, Device(target))


def to(self: NDArray, device: Any, non_blocking: bool = False) -> NDArray:
    """PyTorch's spelling: this array on ``device`` (itself if already there).

    With ``non_blocking=False`` it returns after the copy has finished (and
    raises its failure); with ``True`` at once.
    """
    dst = Device(device)
    if dst == self.device:
        return self
    out = copy_to_device(self, dst)
    if not non_blocking:
        out.wait_to_read()
    return out
