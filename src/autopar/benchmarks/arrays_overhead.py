"""Array op overhead on tiny arrays, against torch eager in the same process.

``x + 1.0`` (the issue's figure) and ``x + y`` (two arrays), each against the
same expression in torch eager. torch wraps a Python number in a tensor on
every call, which costs it about as much as the add itself; autopar reuses a
0-d tensor of a repeated number (``arrays/_plan.py``), so the ``x + y``
ratio is the one that shows the dispatcher's and the engine's own cost.
"""

from __future__ import annotations

import statistics

import torch

import autopar as ap
from autopar import engine
from autopar.benchmarks import Figure, median_of, timed


def _torch(n: int, pair: bool = False) -> float:
    t = torch.ones(16)

    def body() -> None:
        y = t
        for _ in range(n):
            y = y + 1.0

    def body_pair() -> None:
        y = t
        for _ in range(n):
            y = y + t

    return timed(body_pair if pair else body) / n * 1e6


def _autopar(n: int, chained: bool = True, pair: bool = False) -> float:
    """Chained: each op reads the one before; independent: every op reads the same ready array.
    ``pair``: chained ``y + x`` (two arrays) instead of ``y + 1.0``."""
    x = ap.ones(16)
    x.wait_to_read()

    def body() -> None:
        y = x
        for _ in range(n):
            y = (y if chained else x) + 1.0
        y.wait_to_read()

    def body_pair() -> None:
        y = x
        for _ in range(n):
            y = y + x
        y.wait_to_read()

    return timed(body_pair if pair else body) / n * 1e6


def run(n: int = 20_000, repeats: int = 5) -> list[Figure]:
    """Median us per op of each workload; each autopar run is paired with a torch eager run made just
    before it, and the note gives the median of those pairs' ratios (load that comes and goes on a
    shared machine then hits both sides of a ratio alike). The engine is restored afterwards."""
    previous = engine.get_engine()
    eager = Figure("torch eager, tiny add", *median_of(repeats, lambda: _torch(n)), unit="us/op")
    eager_pair = Figure("torch eager, tiny add of two", *median_of(repeats, lambda: _torch(n, True)), unit="us/op")
    figures = [eager, eager_pair]
    try:
        for name in ("threaded", "naive"):
            engine.set_engine(name)
            _autopar(min(n, 2000))
            for label, chained, pair in (("chained", True, False), ("independent", False, False),
                                         ("of two, chained", True, True)):  # fmt: skip
                ratios, runs = [], []
                for _ in range(repeats):
                    base = _torch(n, pair)
                    runs.append(_autopar(n, chained, pair))
                    ratios.append(runs[-1] / base)
                f = Figure(f"autopar {name}, tiny add, {label}", statistics.median(runs), runs, unit="us/op")
                f.note = f"{statistics.median(ratios):.2f}x torch eager{' (target <= 2.5x)' if not pair else ''}"
                figures.append(f)
    finally:
        engine.set_engine(previous)
    return figures
