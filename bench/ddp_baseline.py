"""PyTorch DistributedDataParallel baseline (gloo on 127.0.0.1, 2 processes x 1 thread).

    python bench/ddp_baseline.py [--model lenet|resnet18|all] [--quick] [--json out.json]

Samples/s of 1 process x 1 thread and of DDP 2 x 1, their ratio, DDP step /
no_sync step, and one flat allreduce of all gradients; see
autopar/benchmarks/ddp_baseline.py for what exactly runs and how.
"""

from __future__ import annotations

import argparse
import json
import platform

from autopar.benchmarks import ddp_baseline
from autopar.benchmarks.reference_models import MODELS

if __name__ == "__main__":  # the workers are spawned: they must not run this again
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=[*MODELS, "all"], default="all")
    parser.add_argument("--quick", action="store_true", help="a few steps only (seconds; the figures are rough)")
    parser.add_argument("--steps", type=int, help="timed steps per round")
    parser.add_argument("--repeats", type=int, help="rounds (the figures are medians over them)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before the workers are killed")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    changes = {k: v for k, v in (("steps", args.steps), ("repeats", args.repeats)) if v is not None}
    results = []
    print("PyTorch DDP baseline: gloo on 127.0.0.1, 2 processes x 1 intra-op thread "
          "(1 process x 1 thread as the single device); synthetic Fashion-MNIST-shaped data; SGD")
    for model in MODELS if args.model == "all" else [args.model]:
        config = ddp_baseline.DDPConfig.for_model(model, args.quick, timeout_s=args.timeout, **changes)
        results.append(ddp_baseline.measure(config))
        print(ddp_baseline.report(results[-1:]), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "results": [r.as_dict() for r in results]}, fh, indent=2)
