"""Data-parallel training with autopar against PyTorch DDP, measured side by side.

    python bench/training.py [--model lenet|resnet18] [--steps 20] [--rounds 5] [--no-ddp] [--json out.json]

autopar (the CPU split into two devices, or two GPUs): samples/s on 1 device
and on 2 (same batch per device), and the 2-device step with its gradient sums
against the same step with the sums skipped (``DataParallel.step(sync=False)``),
interleaved in each round; then PyTorch DistributedDataParallel (gloo on
127.0.0.1, 2 processes x 1 thread) on the same model, batches and
initialisation (autopar/benchmarks/ddp_baseline.py). Figures are medians over
rounds; the machine is shared, so compare the figures of one run.
"""

from __future__ import annotations

import argparse
import json
import platform

from autopar.benchmarks import ddp_baseline, training

if __name__ == "__main__":  # DDP's workers are spawned: they must not run this again
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["lenet", "resnet18"], default="lenet")
    parser.add_argument("--steps", type=int, help="timed steps per configuration and round (default: 20 LeNet, 3 ResNet)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-ddp", action="store_true", help="autopar only")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    devices, _ = training.training_devices()
    steps = args.steps or (20 if args.model == "lenet" else 3)
    times = training.measure(args.model, devices, steps, args.rounds)
    ddp = None
    if not args.no_ddp:
        config = ddp_baseline.DDPConfig.for_model(args.model, steps=steps, repeats=args.rounds)
        ddp = ddp_baseline.measure(config)
    figures = times.figures(ddp) + (ddp.figures() if ddp is not None else [])
    print(f"{args.model} on {', '.join(map(str, devices))}: {steps} steps per configuration, {args.rounds} rounds, medians")
    width = max(len(f.name) for f in figures)
    for f in figures:
        print(f"  {f.name:<{width}}  {f.value:10.2f} {f.unit:<9} {f.note}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "figures": [f.as_dict() for f in figures]}, fh, indent=2)
