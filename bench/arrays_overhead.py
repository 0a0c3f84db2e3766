"""µs per tiny array op (16 elements) on each engine, against torch eager.

    python bench/arrays_overhead.py [--n 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse

from autopar.benchmarks import arrays_overhead

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--n", type=int, default=20_000)
parser.add_argument("--repeats", type=int, default=5)
args = parser.parse_args()
for f in arrays_overhead.run(args.n, args.repeats):
    print(f"{f.name:<28} {f.value:8.2f} us/op  {f.note}")
