"""What a device is: naming, discovery, and the lanes each device offers.

A *device* is a place where operations run: ``cpu:i`` (a share of the
machine's cores) or ``cuda:i`` (a GPU). A *lane* is an ordered queue of work on
a device with its own worker: every device has a ``compute`` lane and copy
lanes, so a copy of one result never waits behind the computation of the next.

| device | lanes                                  | what runs there                         |
|--------|----------------------------------------|-----------------------------------------|
| cpu:i  | ``compute``, ``copy``                  | host threads; torch intra-op threads = the device's share of the cores |
| cuda:i | ``compute``, ``copy_h2d``, ``copy_d2h``| a host thread each, issuing onto its own CUDA stream |

This layer imports torch only when a CUDA device is asked about.
"""

from __future__ import annotations

from autopar.devices._device import (
    Device,
    cpu,
    cpu_device_count,
    cpu_threads,
    cuda,
    gpu,
    num_gpus,
    set_sim_devices,
    sim_device_count,
    try_all_gpus,
    try_gpu,
)
from autopar.devices._lanes import COMPUTE, COPY, COPY_D2H, COPY_H2D, LaneSpec, lane_specs


def launch(kernel):  # type: ignore[no-untyped-def]
    """Queue ``kernel`` on the current simulated stream (inside an op on a ``sim`` lane)."""
    from autopar.devices._sim import launch as _launch

    _launch(kernel)


__all__ = [
    "COMPUTE",
    "COPY",
    "COPY_D2H",
    "COPY_H2D",
    "Device",
    "LaneSpec",
    "cpu",
    "cpu_device_count",
    "cpu_threads",
    "cuda",
    "gpu",
    "lane_specs",
    "launch",
    "num_gpus",
    "set_sim_devices",
    "sim_device_count",
    "try_all_gpus",
    "try_gpu",
]
