"""Baselines for remote devices on a local 2-node Ray cluster (1 CPU per node).

    python bench/cluster_baseline.py [--quick] [--repeats 5] [--json out.json]

Plain Ray actors -- call round trip, pipelined calls/s, a 64 MB actor-to-actor
handoff across nodes, the chapter's 50 products with one actor per node -- and
the same work through autopar's node runtimes, measured in one run
(needs autopar[cluster]).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys

from autopar.benchmarks import cluster_baseline

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--quick", action="store_true", help="few calls, 10 small products (a smoke run)")
parser.add_argument("--repeats", type=int, default=5)
parser.add_argument("--json", help="write the figures here")
args = parser.parse_args()

if args.quick:
    sections = cluster_baseline.run(repeats=2, calls=200, repeat=10, trials=1, size=256,
                                    report=lambda s: print("...", s, file=sys.stderr))
else:
    sections = cluster_baseline.run(repeats=args.repeats, report=lambda s: print("...", s, file=sys.stderr))
width = max(len(f.name) for _, figs in sections for f in figs)
for title, figs in sections:
    print(f"\n{title}")
    for f in figs:
        print(f"  {f.name:<{width}}  {f.value:10.3f} {f.unit:<8} {f.note}")
if args.json:
    with open(args.json, "w") as fh:
        json.dump({"machine": platform.platform(),
                   "sections": [{"title": t, "figures": [f.as_dict() for f in figs]} for t, figs in sections]},
                  fh, indent=2)
