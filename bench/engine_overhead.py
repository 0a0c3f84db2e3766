"""µs per tiny op on each engine, against direct calls and ThreadPoolExecutor.

    python bench/engine_overhead.py [--n 20000] [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform

from autopar.benchmarks import engine_overhead

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n", type=int, default=20_000)
parser.add_argument("--repeats", type=int, default=5)
parser.add_argument("--json", help="write the figures here")
args = parser.parse_args()

figures = engine_overhead.run(args.n, args.repeats)
width = max(len(f.name) for f in figures)
print(f"{'workload':<{width}}  median us/op  note")
for f in figures:
    print(f"{f.name:<{width}}  {f.value:12.2f}  {f.note}")
if args.json:
    with open(args.json, "w") as fh:
        json.dump({"machine": platform.platform(), "n": args.n, "figures": [f.as_dict() for f in figures]}, fh, indent=2)
