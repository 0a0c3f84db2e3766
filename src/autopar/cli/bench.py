"""``autopar bench``: the benchmark suite, each figure next to a same-process baseline."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from typing import Any

from autopar.cli._cluster import HELP, joined


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="run the benchmark suite (overheads, two-device and overlap ratios, data-parallel training)",
        description="Measure per-op overhead of the engine and the arrays against baselines run in the same "
        "process (direct calls, ThreadPoolExecutor, torch eager, Dask's threaded scheduler when installed), "
        "eager ops against torch eager and NumPy (x += 2*y, x + 1 with results held, index assignment, a "
        "first epoch), the cost of profiling, autopar.capture against torch.compile (without --quick: a "
        "captured loop, a LeNet step, a data-parallel step on 2 devices against 1), the chapter's two-device "
        "and copy-overlap ratios, and data-parallel training of LeNet: 2 devices against 1, the step with "
        "gradient sums against the step without, and (without --quick) the step against PyTorch DDP run "
        "alongside.",
    )
    p.add_argument("--quick", action="store_true", help="small sizes and few repeats (for CI; with --cluster, an 8 MB copy)")
    p.add_argument("--json", metavar="FILE", help="also write the figures, with machine info, as JSON")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="instead, measure remote devices against plain Ray actors in the same run: per-op overhead, "
                   "a 64 MB copy between nodes, the chapter's products with one device per node. " + HELP)
    p.set_defaults(run=run)


def _dask_figure(n: int, repeats: int) -> Any:
    try:
        import dask.threaded  # type: ignore[import-not-found]
    except ImportError:
        return None
    from autopar.benchmarks import Figure, median_of, timed

    def noop(*_: Any) -> None:
        return None

    graph = {f"t{i}": (noop,) for i in range(n)}

    def once() -> float:
        return timed(lambda: dask.threaded.get(graph, list(graph), num_workers=1)) / n * 1e6

    return Figure("Dask threaded scheduler", *median_of(repeats, once), unit="us/op")


def _profiler_figures(n: int, repeats: int) -> list[Any]:
    import autopar as ap
    from autopar import engine
    from autopar.benchmarks import Figure, engine_overhead, median_of

    engine.set_engine("threaded")
    off_before = Figure("engine, profiler never on", *median_of(repeats, lambda: engine_overhead._engine_run(n, False)), unit="us/op")
    with ap.profile():
        on = Figure("engine, profiler on", *median_of(repeats, lambda: engine_overhead._engine_run(n, False)), unit="us/op")
    off_after = Figure("engine, profiler off again", *median_of(repeats, lambda: engine_overhead._engine_run(n, False)), unit="us/op")
    on.note = f"{on.value / off_before.value:.2f}x off"
    off_after.note = f"{off_after.value / off_before.value:.2f}x never on (1.00: profiling off costs nothing)"
    return [off_before, on, off_after]


def step(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.cluster is not None:
        return _cluster(args)
    import torch

    import autopar as ap
    from autopar.benchmarks import Figure, arrays_overhead, chapter, engine_overhead

    n, repeats = (3000, 3) if args.quick else (20_000, 5)
    sections: list[tuple[str, list[Figure]]] = []

    step("engine overhead")
    figures = engine_overhead.run(n, repeats)
    dask = _dask_figure(n, repeats)
    if dask is not None:
        figures.insert(2, dask)
    sections.append(("engine: us per tiny op, pushed then waitall", figures))
    step("array overhead")
    sections.append(("arrays: us per tiny op (16 elements)", arrays_overhead.run(n, repeats)))
    step("eager per-op cost")
    from autopar.benchmarks import per_op

    sections.append(("eager ops against torch eager, NumPy and plain PyTorch run alongside"
                     + (" (--quick: no LeNet step, no first epoch)" if args.quick else ""), per_op.run(args.quick)))
    step("profiler cost")
    sections.append(("profiling", _profiler_figures(n, repeats)))
    if not args.quick:  # torch.compile takes tens of seconds here: not in --quick
        step("capture against torch.compile")
        from autopar.benchmarks import captured

        lenet, _ = captured.lenet_step()
        sections.append(("autopar.capture against torch.compile and torch eager run alongside (python "
                         "bench/captured.py adds DDP)", captured.captured_loop() + lenet + captured.data_parallel(ddp=False)))

    step("the chapter's experiments")
    from autopar.cli.demo import pick_devices

    devices, target, why = pick_devices()
    repeat = 10 if args.quick else 50
    size = 256 if args.quick else chapter.calibrate(devices, repeat)
    result = chapter.run_chapter(devices[0], devices[1], target, size, repeat, report=lambda line: None,
                                 trials=2 if args.quick else 5)
    sections.append((f"chapter on {devices[0]} and {devices[1]} ({why}; {repeat} products of {size}x{size})", [
        Figure("both / max(T1, T2)", result.both_ratio, [result.t1, result.t2, result.both], unit="ratio",
               note="target <= 1.10"),
        Figure("run+copy / max(run, copy)", result.copy_ratio, [result.run, result.copy, result.run_and_copy],
               unit="ratio", note="target <= 1.10"),
    ]))

    step("data-parallel training (LeNet)" + ("" if args.quick else ", then PyTorch DDP alongside"))
    from autopar.benchmarks import ddp_baseline, training

    steps, rounds = (3, 1) if args.quick else (20, 3)
    devices, _ = training.training_devices()
    times = training.measure("lenet", devices, steps, rounds)
    ddp = None if args.quick else ddp_baseline.measure(ddp_baseline.DDPConfig.for_model("lenet", steps=steps, repeats=rounds))
    sections.append((f"data-parallel training on {devices[0]} and {devices[1]} ({steps} steps x {rounds} rounds"
                     f"{'; DDP: run without --quick' if ddp is None else ''})", times.figures(ddp) + (ddp.figures() if ddp else [])))  # fmt: skip

    _print(sections)
    if args.json:
        info = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "gpus": [torch.cuda.get_device_name(i) for i in range(ap.num_gpus())],
            "quick": args.quick,
        }
        _write(args.json, info, sections, chapter=result.as_dict())
    return 0


_TARGET = re.compile(r"target\s*(<=|>=)\s*([0-9.]+)\s*(x|us)?")
_LEADING_RATIO = re.compile(r"\s*([0-9.]+)x\b")


def verdict(figure: Any) -> str:
    """"met" or "NOT met" for a figure whose note states a target ("... (target <= 2.5x)"), else "".

    The target bounds the ratio the note starts with ("2.11x torch eager") when
    it is a ratio (an ``x``, or no unit after a leading ratio), else the figure's value."""
    target = _TARGET.search(figure.note)
    if target is None:
        return ""
    op, bound, unit = target.group(1), float(target.group(2)), target.group(3)
    leading = _LEADING_RATIO.match(figure.note)
    measured = float(leading.group(1)) if leading and unit != "us" else figure.value
    return "met" if (measured <= bound if op == "<=" else measured >= bound) else "NOT met"


def _print(sections: list[tuple[str, list[Any]]]) -> None:
    width = max(len(f.name) for _, figs in sections for f in figs)
    for title, figs in sections:
        print(f"\n{title}")
        for f in figs:
            met = verdict(f)
            print(f"  {f.name:<{width}}  {f.value:9.2f} {f.unit:<7} {f.note}{f' -- {met}' if met else ''}")


def _write(path: str, info: dict[str, Any], sections: list[tuple[str, list[Any]]], **extra: Any) -> None:
    out = {"machine": info,
           "sections": [{"title": t, "figures": [{**f.as_dict(), "target": verdict(f) or None} for f in figs]}
                        for t, figs in sections],
           **extra}  # fmt: skip
    with open(path, "w") as fh:
        json.dump(out, fh, indent=2)
    print(f"\nfigures written to {path}")


def _cluster(args: argparse.Namespace) -> int:
    """``--cluster``: remote devices against plain Ray, measured in one run on one cluster."""
    from autopar.benchmarks import cluster_baseline

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    with joined(args.cluster) as devices:
        step(f"on {devices[0]} and {devices[1]}")
        if args.quick:
            sections = cluster_baseline.measure(devices, repeats=2, calls=200, repeat=10, trials=1, size=256,
                                                report=step, copy_mb=8)  # fmt: skip
        else:
            sections = cluster_baseline.measure(devices, report=step)
    _print(sections)
    after = os.getloadavg() if hasattr(os, "getloadavg") else None
    if load is not None and after is not None:
        print(f"\nload average (1 min) before / after: {load[0]:.2f} / {after[0]:.2f} "
              f"on {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()} core(s)")
    if args.json:
        info = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "platform": platform.platform(),
                "python": platform.python_version(), "cluster": args.cluster, "quick": args.quick,
                "load_before": load, "load_after": after}
        _write(args.json, info, sections)
    return 0
