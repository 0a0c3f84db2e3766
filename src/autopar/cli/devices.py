"""``autopar devices``: the devices here, their lanes, threads and memory."""

from __future__ import annotations

import argparse
import os
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "devices",
        help="list the devices with their lanes",
        description="List the devices autopar can run on: each CPU device with its share of the cores, "
        "each GPU with its name and memory, and every device's lanes.",
    )
    p.add_argument("--cpu-devices", type=int, metavar="N", help="split the cores into N CPU devices first")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import autopar as ap
    from autopar.devices import cpu_device_count, cpu_threads, lane_specs

    if args.cpu_devices is not None:
        ap.set_cpu_devices(args.cpu_devices)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    n = cpu_device_count()
    print(f"{cores} core(s), split into {n} CPU device(s) (AUTOPAR_CPU_DEVICES / autopar.set_cpu_devices)")
    for i in range(n):
        lanes = ", ".join(f"{name} ({spec.threads} thread{'s' if spec.threads != 1 else ''})"
                          for name, spec in lane_specs(ap.cpu(i)).items())
        print(f"  cpu:{i}   {cpu_threads(i)} intra-op thread(s); lanes: {lanes}")
    gpus = ap.num_gpus()
    if gpus == 0:
        import torch

        why = "torch is a CPU-only build" if torch.version.cuda is None else "no CUDA device is visible"
        print(f"no GPU ({why})")
    for i in range(gpus):
        import torch

        props = torch.cuda.get_device_properties(i)
        lanes = ", ".join(lane_specs(ap.gpu(i)))
        print(f"  cuda:{i}  {props.name}, {props.total_memory / 2**30:.1f} GiB, "
              f"{props.multi_processor_count} SMs; lanes (one CUDA stream each): {lanes}")
    return 0
