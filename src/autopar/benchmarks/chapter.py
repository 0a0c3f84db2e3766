"""The book chapter's two experiments, on any pair of devices.

1. 50 matrix products on device 1, on device 2, then on both at once: with
   automatic parallelism, *both* takes about as long as the slower device alone.
2. The same products with each result copied to another device: run, copy,
   then run-and-copy together, where copies of result *i* overlap the
   computation of result *i+1*: about the slower of the two, not their sum.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from dataclasses import asdict, dataclass
from typing import Any

import autopar as ap


@dataclass
class ChapterResult:
    device1: str
    device2: str
    copy_target: str
    size: int
    repeat: int
    t1: float
    t2: float
    both: float
    run: float
    copy: float
    run_and_copy: float

    @property
    def both_ratio(self) -> float:
        """``both / max(T1, T2)``: 1.0 is perfect overlap, ``(T1+T2)/max`` none."""
        return self.both / max(self.t1, self.t2)

    @property
    def copy_ratio(self) -> float:
        """``run_and_copy / max(run, copy)``: 1.0 means the copies were hidden."""
        return self.run_and_copy / max(self.run, self.copy)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["both_ratio"] = self.both_ratio
        out["copy_ratio"] = self.copy_ratio
        return out


def products(x: ap.NDArray, repeat: int) -> list[ap.NDArray]:
    return [x.dot(x) for _ in range(repeat)]


def _seconds_per_product(device: ap.Device, size: int) -> float:
    x = ap.random.uniform(size=(size, size), device=device)
    products(x, 2)
    ap.waitall()
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        products(x, 3)
        ap.synchronize(device)
        best = min(best, (time.perf_counter() - start) / 3)
    return best


def calibrate(devices: list[ap.Device], repeat: int, target_s: float = 0.5) -> int:
    """The matrix size at which ``repeat`` products take about ``target_s`` on the slowest device.

    A first guess from a small probe, then one correction measured at the
    guessed size (a fast GPU's small probe is mostly launch overhead)."""
    per_product = target_s / repeat
    size = 384
    for _ in range(2):
        slowest = max(_seconds_per_product(d, size) for d in devices)
        size = int(size * (per_product / slowest) ** (1 / 3))
        size = min(max(round(size / 32) * 32, 64), 16384)
    return size


def _timed(body: Callable[[], Any]) -> float:
    start = time.perf_counter()
    body()
    return time.perf_counter() - start


def run_chapter(
    device1: ap.Device,
    device2: ap.Device,
    copy_target: ap.Device,
    size: int,
    repeat: int,
    report: Callable[[str], None] = print,
    trials: int = 3,
    phase: Callable[[str], ContextManager[Any]] | None = None,
) -> ChapterResult:
    """Run both experiments; ``report`` receives each timing in the book's
    format (``GPU1 time: 0.5091 sec``), the best of ``trials`` runs. ``phase(label)``,
    when given, wraps each run (``Profile.phase``: the timeline names them)."""
    mark = phase if phase is not None else (lambda label: contextlib.nullcontext())
    x1 = ap.random.uniform(size=(size, size), device=device1)
    x2 = ap.random.uniform(size=(size, size), device=device2)
    # Warm up every lane with the whole workload: a lane's first allocations of
    # this size (fresh pages, a new malloc arena per thread) cost far more than
    # the steady state the chapter measures.
    with mark("warm-up"):
        for y in products(x1, repeat):
            y.to(copy_target, non_blocking=True)
        products(x2, repeat)
        ap.waitall()

    ys: list[ap.NDArray] = []

    def alone(x: ap.NDArray, device: ap.Device) -> None:
        products(x, repeat)
        ap.synchronize(device)

    def together() -> None:
        products(x1, repeat)
        products(x2, repeat)
        ap.waitall()

    def run_only() -> None:
        ys[:] = products(x1, repeat)
        ap.waitall()

    def copy_only() -> None:
        for y in ys:
            y.to(copy_target)
        ap.waitall()

    def run_and_copy() -> None:
        for y in products(x1, repeat):
            y.to(copy_target, non_blocking=True)
        ap.waitall()

    experiments: list[tuple[str, str, Callable[[], Any]]] = [
        (f"{device1} time", f"apart: {device1}", lambda: alone(x1, device1)),
        (f"{device2} time", f"apart: {device2}", lambda: alone(x2, device2)),
        (f"{device1} & {device2}", "together", together),
        (f"Run on {device1}", "run", run_only),
        (f"Copy to {copy_target}", "copy", copy_only),
        (f"Run on {device1} and copy to {copy_target}", "run + copy", run_and_copy),
    ]
    # A shared machine is noisy: each experiment runs `trials` times, interleaved
    # with the others, and the fastest run counts (what the devices can do).
    best = [float("inf")] * len(experiments)
    for trial in range(trials):
        for i, (label, name, body) in enumerate(experiments):
            with mark(name):
                best[i] = min(best[i], _timed(body))
    for (label, _, _), seconds in zip(experiments, best):
        report(f"{label}: {seconds:.4f} sec")
    t1, t2, both, run, copy, both_copy = best
    return ChapterResult(str(device1), str(device2), str(copy_target), size, repeat, t1, t2, both, run, copy, both_copy)


def reading(ratio: float, ideal: str, none: str) -> str:
    if ratio <= 1.15:
        return ideal
    if ratio <= 1.6:
        return "partly overlapped"
    return none
