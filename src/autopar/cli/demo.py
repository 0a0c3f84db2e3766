"""``autopar demo``: the book chapter's experiments on the devices at hand."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from autopar.cli._cluster import HELP, joined

# Load average (1 min) before the run, per core, above which the demo gives no verdict: other work then
# decides the times. 0.75 on 2 cores: other processes already keep one and a half cores busy.
BUSY = 0.75


def too_busy(load: float | None, cores: int) -> bool:
    """Whether the load average before the run (None: unknown) leaves the verdicts to other work."""
    return load is not None and load > BUSY * cores


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run the book chapter's experiments and print their timings",
        description="Run the 'Automatic Parallelism' chapter's two experiments: matrix products on two devices, "
        "apart and together; then the same products with each result copied, apart and overlapped. "
        "Uses two GPUs if present, else a GPU and the CPU, else two CPU devices (splitting the cores); with "
        "--cluster, one device on each of two nodes of a Ray cluster.",
    )
    p.add_argument("--size", type=int, help="matrix size (default: sized so one run takes about 0.5 s)")
    p.add_argument("--repeat", type=int, default=50, help="matrix products per run (default: 50, as in the book)")
    p.add_argument("--trials", type=int, default=3, help="runs per experiment; the fastest counts (default: 3)")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome-trace / Perfetto JSON of the whole demo")
    p.add_argument("--plot", metavar="FILE", help="draw the demo's timeline as a PNG (needs matplotlib)")
    p.add_argument("--cluster", metavar="ADDRESS", help=HELP + "; the copies go from the first node to the second")
    p.set_defaults(run=run)


def pick_devices() -> tuple[list[Any], Any, str]:
    import autopar as ap

    gpus = ap.num_gpus()
    if gpus >= 2:
        return [ap.gpu(0), ap.gpu(1)], ap.cpu(), "two GPUs"
    if gpus == 1:
        return [ap.gpu(0), ap.cpu(0)], ap.cpu(), "one GPU and the CPU"
    ap.set_cpu_devices(2)
    return [ap.cpu(0), ap.cpu(1)], ap.cpu(1), "no GPU here: the cores are split into two CPU devices"


def run(args: argparse.Namespace) -> int:
    if args.repeat < 1 or args.trials < 1 or (args.size is not None and args.size < 1):
        raise ValueError("--size, --repeat and --trials must be whole numbers >= 1")
    if args.cluster is not None:
        with joined(args.cluster) as devices:
            return _demo(args, devices, devices[1], "one device on each of two cluster nodes")
    devices, copy_target, why = pick_devices()
    return _demo(args, devices, copy_target, why)


def _demo(args: argparse.Namespace, devices: list[Any], copy_target: Any, why: str) -> int:
    import autopar as ap
    from autopar.benchmarks import chapter
    from autopar.devices import cpu_threads

    def progress(message: str) -> None:
        print(f"... {message}", file=sys.stderr, flush=True)

    started = time.perf_counter()

    def describe(d: Any) -> str:
        if d.node is not None:
            return str(d)
        if d.kind == "cpu":
            return f"{d} ({cpu_threads(d.index)} thread{'s' if cpu_threads(d.index) != 1 else ''})"
        import torch

        return f"{d} ({torch.cuda.get_device_name(d.index)})"

    from autopar.cli._checks import cores, load_average

    load = load_average()  # before this run adds its own
    print(f"devices: {describe(devices[0])} and {describe(devices[1])} -- {why}")
    size = args.size
    if size is None:
        progress("sizing the workload")
        size = chapter.calibrate(devices, args.repeat)
    print(f"workload: {args.repeat} products of {size}x{size} float32 matrices per run, best of {args.trials}")
    progress("warming up, then timing (about 6 runs x %d trials)" % args.trials)

    profiler = ap.profile() if (args.trace or args.plot) else None
    if profiler is not None:
        profiler.__enter__()
    try:
        result = chapter.run_chapter(devices[0], devices[1], copy_target, size, args.repeat, trials=args.trials,
                                     phase=profiler.phase if profiler is not None else None)  # fmt: skip
    finally:
        if profiler is not None:
            profiler.__exit__(None, None, None)
    both = result.both_ratio
    copy = result.copy_ratio
    n = cores()
    busy = args.cluster is None and too_busy(load, n)

    def verdict(ratio: float, ideal: str, none: str) -> str:
        if busy:
            return "too busy to tell"
        return chapter.reading(ratio, ideal, none)

    none_both = (result.t1 + result.t2) / max(result.t1, result.t2)
    print()
    print(f"both / max(T1, T2)         = {both:.2f}  (1.00: side by side; {none_both:.2f}: one after the other) -- "
          + verdict(both, "the two devices ran side by side", "the devices ran one after the other"))
    none_copy = (result.run + result.copy) / max(result.run, result.copy)
    print(f"run+copy / max(run, copy)  = {copy:.2f}  (1.00: copies hidden behind compute; {none_copy:.2f}: no overlap) -- "
          + verdict(copy, "copies overlapped with computation", "copies waited for computation"))
    if load is not None:
        where = f"load average {load:.2f} on {n} core{'s' if n != 1 else ''} before the run"
        if busy:
            print(f"{where}: other work kept the cores busy, so these times say more about it than about autopar; "
                  "run again when the machine is quieter")
        else:
            print(where)
    if profiler is not None:
        if args.trace:
            profiler.export_chrome_trace(args.trace)
            print(f"trace written to {args.trace} (open it in https://ui.perfetto.dev or chrome://tracing)")
        if args.plot:
            profiler.plot(args.plot, title=f"autopar demo on {devices[0]} and {devices[1]} (phases shaded; the "
                          "copies zoomed below when they are too thin to see)", window=_timed_span(profiler))  # fmt: skip
            print(f"timeline drawn in {args.plot}")
    progress(f"done in {time.perf_counter() - started:.1f} s")
    return 0


def _timed_span(prof: Any) -> tuple[float, float] | None:
    """The timed phases, in ms from the profile's first op: the warm-up before them is left out of the picture."""
    ran = prof._ran()
    timed = [p for p in prof.phases if p.label != "warm-up"]
    if not ran or not timed:
        return None
    t0 = min(r.start_ns for r in ran)
    return (min(p.start_ns for p in timed) - t0) / 1e6, (max(p.end_ns for p in timed) - t0) / 1e6
