"""autopar.capture against torch.compile, torch eager and PyTorch DDP, each run alongside
(autopar.benchmarks.captured).

    python bench/captured.py [--quick] [--only loop|lenet|dp]

The captured x += 2*y loop against torch.compile (target: at most 2x per
iteration); a LeNet training step captured on one CPU device against the
torch.compile'd step (target: at most 1.1x); the captured data-parallel step
on two CPU devices against one (target: at least 1.8x) and against DDP's
eager step (target: faster by at least torch's compile factor).
"""

from __future__ import annotations

import argparse
import os

from autopar.benchmarks import captured


def main() -> None:  # (DDP's workers are spawned: they import this file, which must not run then)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    parser.add_argument("--only", choices=["loop", "lenet", "dp"], help="one figure only")
    parser.add_argument("--no-ddp", action="store_true", help="skip the DDP baseline (it starts two processes)")
    args = parser.parse_args()
    q = args.quick
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    factor = None
    if args.only in (None, "loop"):
        figures = captured.captured_loop(50 if q else 200, 2 if q else 7)
        for f in figures:
            print(f"{f.name:<56} {f.value:9.3f} {f.unit:<9} {f.note}", flush=True)
    if args.only in (None, "lenet"):
        figures, factor = captured.lenet_step(3 if q else 10, 2 if q else 5)
        for f in figures:
            print(f"{f.name:<56} {f.value:9.3f} {f.unit:<9} {f.note}", flush=True)
    if args.only in (None, "dp"):
        for f in captured.data_parallel(3 if q else 10, 2 if q else 5, ddp=not args.no_ddp, compile_factor=factor):
            print(f"{f.name:<56} {f.value:9.1f} {f.unit:<9} {f.note}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
