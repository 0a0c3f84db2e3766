"""A large node-to-node copy on a local 2-node cluster: small object stores (spilling) against sized ones.

    python bench/cluster_copy.py [--mb 1024] [--repeats 2] [--small-mb 400]

``x.to("node1/cpu:0")`` for an array of ``--mb`` MB made on node0, timed
(the first copy, and the best of ``--repeats``) on two local clusters started one after the other:
one with ``--small-mb`` MB object stores per node (what ``--cluster local``
used to start), one with the stores ``connect()`` sizes from free memory
(``autopar.cluster._local.store_bytes``). Also reports whether Ray spilled
objects to disk (a store too small for an object puts it in a file instead).
Needs autopar[cluster] and about 5x ``--mb`` of free memory.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import time


def measure(store_bytes: int | None, mb: int, repeats: int) -> tuple[list[float], int, bool]:
    """Seconds for each copy, the store size used, and whether anything went to disk."""
    import autopar as ap
    import autopar.cluster
    from autopar.cluster import LocalCluster

    with LocalCluster(nodes=2, cpus=1, object_store_memory=store_bytes) as cluster:
        autopar.cluster.connect(cluster.address)
        try:
            x = ap.ones((mb * 2**20 // 4,), dtype=ap.float32, device="node0/cpu:0")
            x.wait_to_read()
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                y = x.to("node1/cpu:0")
                y.wait_to_read()
                times.append(time.perf_counter() - start)
                del y
            return times, cluster.object_store_memory, _overflowed(cluster.tmpdir)
        finally:
            autopar.cluster.disconnect()


def _overflowed(tmpdir: str) -> bool:
    """Whether a raylet stored an object outside its object store (spilled, or allocated on disk)."""
    spilled = glob.glob(os.path.join(tmpdir, "ray", "session_*", "ray_spilled_objects", "*"))
    logs = glob.glob(os.path.join(tmpdir, "ray", "session_*", "logs", "raylet*.out"))
    overflow = re.compile(r"Spilled \d|fallback alloc", re.IGNORECASE)
    for log in logs:
        with open(log, errors="replace") as fh:
            if overflow.search(fh.read()):
                return True
    return bool(spilled)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024, help="the array's size in MB (default 1024)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small-mb", type=int, default=400, help="the small object stores, MB per node")
    args = parser.parse_args()
    print(f"load average before: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for label, size in ((f"{args.small_mb} MB stores", args.small_mb * 2**20), ("sized stores", None)):
        times, used, spilled = measure(size, args.mb, args.repeats)
        print(f"{args.mb} MB node0 -> node1, {label} ({used / 2**30:.2f} GiB per node): first {times[0]:.2f} s, "
              f"best of {len(times)} {min(times):.2f} s{', spilled to disk' if spilled else ''}", flush=True)
    print(f"load average after: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
