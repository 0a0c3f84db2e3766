"""The book chapter's experiments as ratios against the limit.

    python bench/chapter.py [--size N] [--repeat 50] [--json out.json]

both / max(T1, T2) (target <= 1.10) and run_and_copy / max(run, copy)
(target <= 1.10), on the devices `autopar demo` would pick.
"""

from __future__ import annotations

import argparse
import json

from autopar.benchmarks import chapter
from autopar.cli.demo import pick_devices

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--size", type=int)
parser.add_argument("--repeat", type=int, default=50)
parser.add_argument("--trials", type=int, default=3)
parser.add_argument("--json")
args = parser.parse_args()

devices, target, why = pick_devices()
size = args.size or chapter.calibrate(devices, args.repeat)
print(f"{devices[0]} and {devices[1]} ({why}); {args.repeat} products of {size}x{size}")
result = chapter.run_chapter(devices[0], devices[1], target, size, args.repeat, trials=args.trials)
print(f"both / max(T1, T2)        = {result.both_ratio:.3f}  (target <= 1.10)")
print(f"run+copy / max(run, copy) = {result.copy_ratio:.3f}  (target <= 1.10)")
if args.json:
    with open(args.json, "w") as fh:
        json.dump(result.as_dict(), fh, indent=2)
