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
        "each GPU with its name and memory, and every device's lanes. With --cluster, also the devices of "
        "every node of a Ray cluster, with the node's address and Ray node id.",
    )
    p.add_argument("--cpu-devices", type=int, metavar="N", help="split the cores into N CPU devices first")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="also join the Ray cluster at ADDRESS ('auto', 'host:port', 'ray://host:port', or "
                   "'local' to start one on 127.0.0.1) and list its nodes' devices (needs autopar[cluster])")
    p.set_defaults(run=run)


def print_cluster(address: str) -> None:
    """Join the cluster at ``address``, list its remote devices, leave."""
    from autopar import cluster

    cluster.connect(None if address == "local" else address)
    try:
        from autopar.cluster import _session

        session = _session.current()
        runtimes = session.live()
        print(f"cluster at {session.address}: {len(runtimes)} node(s)")
        for runtime in runtimes:
            node, info = runtime.node, runtime.info
            print(f"  {node.name}  {node.address}  Ray node {node.node_id[:12]}  {node.cpus} CPU(s), "
                  f"{node.gpus} GPU(s){'  (head)' if node.is_head else ''}")
            for name in runtime.devices:
                threads = info.torch_threads if info is not None and "/cpu:" in name else 1
                print(f"    {name}  {threads} intra-op thread(s)")
    finally:
        cluster.disconnect()


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
    if args.cluster is not None:
        print_cluster(args.cluster)
    return 0
