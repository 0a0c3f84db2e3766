"""The eager per-op figures, each against its baseline run alongside (autopar.benchmarks.per_op).

    python bench/per_op.py [--quick] [--only update|held|general|load|lenet|first]

x += 2*y and x + 1 against torch eager (target: at most 2x) and NumPy; calls off
the operators' lean paths (sum, a small matmul, a transposed operand, maximum)
against torch eager; exp of
10,000 elements with a busy core beside, against NumPy and torch on one thread;
a LeNet training step against torch eager; the first epoch's one-off cost
(target: at most 0.5 s) against plain PyTorch's.
"""

from __future__ import annotations

import argparse
import os

from autopar.benchmarks import per_op

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
parser.add_argument("--only", choices=["update", "held", "general", "load", "lenet", "first"], help="one figure only")
args = parser.parse_args()
q = args.quick
parts = {
    "update": lambda: per_op.update_loop(1000 if q else 5000, 3 if q else 7),
    "held": lambda: per_op.held_results(5000 if q else 20_000, 3 if q else 7),
    "general": lambda: per_op.general_ops(1000 if q else 5000, 3 if q else 5),
    "load": lambda: per_op.small_under_load(300 if q else 2000, 2 if q else 5),
    "lenet": lambda: per_op.lenet_step(3 if q else 10, 2 if q else 5),
    "first": lambda: per_op.first_epoch(20 if q else 40, 1 if q else 3),
}
print(f"load average before: {os.getloadavg()[0]:.2f}")
for key, measure in parts.items():
    if args.only in (None, key):
        for f in measure():
            print(f"{f.name:<48} {f.value:9.2f} {f.unit:<3} {f.note}", flush=True)
print(f"load average after: {os.getloadavg()[0]:.2f}")
