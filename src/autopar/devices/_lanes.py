"""Which lanes each device has, and what a lane's worker needs to run them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autopar.devices._device import Device, cpu_threads

COMPUTE = "compute"
COPY = "copy"
COPY_H2D = "copy_h2d"
COPY_D2H = "copy_d2h"


@dataclass(frozen=True, slots=True)
class LaneSpec:
    """One lane of a device.

    ``threads`` is the torch intra-op thread count its worker uses (host
    lanes); ``make_stream`` builds the lane's stream for stream lanes, and is
    ``None`` for host lanes. ``remote``: a lane of a cluster node's device,
    whose worker here only submits work to the node (its ops complete later,
    through ``engine.push_async``); the node's own lanes run it.
    """

    device: Device
    name: str
    threads: int
    make_stream: Callable[[], Any] | None = None
    remote: bool = False

    @property
    def is_stream_lane(self) -> bool:
        return self.make_stream is not None

    def __str__(self) -> str:
        return f"{self.device}/{self.name}"


def _cuda_stream_factory(index: int) -> Callable[[], Any]:
    def make() -> Any:
        from autopar.devices._cuda import CudaStream

        return CudaStream(index)

    return make


def _sim_stream_factory(name: str) -> Callable[[], Any]:
    def make() -> Any:
        from autopar.devices._sim import SimStream

        return SimStream(name)

    return make


def lane_specs(device: Device) -> dict[str, LaneSpec]:
    """The lanes of ``device``, by name (raises DeviceError if it no longer exists).

    A remote device has the lanes of the same kind of device here, as host
    lanes that only submit (``LaneSpec.remote``): the copy routing of the
    array layer is the same for both.
    """
    device.check_exists()
    if device.node is not None:
        names = (COMPUTE, COPY) if device.kind == "cpu" else (COMPUTE, COPY_H2D, COPY_D2H)
        return {name: LaneSpec(device, name, 1, None, True) for name in names}
    if device.kind == "cpu":
        return {
            COMPUTE: LaneSpec(device, COMPUTE, cpu_threads(device.index)),
            COPY: LaneSpec(device, COPY, 1),
        }
    specs = {}
    for name in (COMPUTE, COPY_H2D, COPY_D2H):
        if device.kind == "cuda":
            factory = _cuda_stream_factory(device.index)
        else:
            factory = _sim_stream_factory(f"{device}/{name}")
        specs[name] = LaneSpec(device, name, 1, factory)
    return specs
