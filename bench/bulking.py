"""Automatic bulking, seen in the profiler and timed: small ops pushed while their lane is busy.

    python bench/bulking.py [--ops 600] [--rounds 5] [--trace bulk.json] [--plot bulk.png]

A 700x700 product keeps cpu:0's compute lane busy while the driver pushes a
chain of small elementwise ops that read its result: they cannot run at once,
so they join segments -- one engine op for up to 15 of them (engine/_bulk.py).
The same chain is timed with segments of one op each (each small op its own
engine op), and the profile of one bulked round is summarised by op name:
``bulk of 15: multiply, add, ...`` is one engine op standing for 15.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time

import autopar as ap
from autopar.engine import _bulk

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--ops", type=int, default=600, help="small ops per round (default 600)")
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--trace", help="Chrome-trace JSON of one bulked round")
parser.add_argument("--plot", help="timeline PNG of one bulked round (needs matplotlib)")
args = parser.parse_args()

big = ap.random.uniform(size=(700, 700))
big.wait_to_read()


def round_trip(n: int) -> float:
    """Seconds from the first push to the last small op's result: the product, then ``n`` small ops."""
    start = time.perf_counter()
    y = big @ big  # the lane is busy for milliseconds
    z = y[:4, 0]  # a view: no op
    for i in range(n):
        z = z * 1.0001 + 1 if i % 2 else z - 0.5
    z.wait_to_read()
    return time.perf_counter() - start


def measure(max_ops: int) -> list[float]:
    _bulk.MAX_OPS = max_ops
    round_trip(args.ops)  # warm
    return [round_trip(args.ops) for _ in range(args.rounds)]


default = _bulk.MAX_OPS
try:
    times = {}
    for max_ops in (default, 1, default, 1):  # interleaved: load hits both alike
        times.setdefault(max_ops, []).extend(measure(max_ops))
finally:
    _bulk.MAX_OPS = default
with ap.profile() as prof:
    round_trip(args.ops)
names = collections.Counter(r.name.split(":")[0] for r in prof.records)
bulked = [r for r in prof.records if r.name.startswith("bulk of")]
print(f"one round: {len(prof.records)} engine ops for {args.ops} small ops and the product")
for name, count in names.most_common(6):
    print(f"  {count:4d} x {name}")
if bulked:
    print(f"  e.g. {bulked[0].name!r}")
on, off = statistics.median(times[default]), statistics.median(times[1])
print(f"a round (the product, then the small ops) with segments of up to {default} ops: {on * 1e3:.1f} ms; "
      f"with one op per segment: {off * 1e3:.1f} ms ({off / on:.2f}x)")
if args.trace:
    prof.export_chrome_trace(args.trace)
    print(f"trace written to {args.trace}")
if args.plot:
    prof.plot(args.plot, title="small ops behind a product: bulked")
    print(f"timeline written to {args.plot}")
