"""Array op overhead on tiny arrays, against torch eager in the same process."""

from __future__ import annotations

import torch

import autopar as ap
from autopar import engine
from autopar.benchmarks import Figure, median_of, timed


def _torch(n: int) -> float:
    t = torch.ones(16)

    def body() -> None:
        y = t
        for _ in range(n):
            y = y + 1.0

    return timed(body) / n * 1e6


def _autopar(n: int, chained: bool = True) -> float:
    """Chained: each op reads the one before; independent: every op reads the same ready array."""
    x = ap.ones(16)
    x.wait_to_read()

    def body() -> None:
        y = x
        for _ in range(n):
            y = (y if chained else x) + 1.0
        y.wait_to_read()

    return timed(body) / n * 1e6


def run(n: int = 20_000, repeats: int = 5) -> list[Figure]:
    previous = engine.get_engine()
    eager = Figure("torch eager, tiny add", *median_of(repeats, lambda: _torch(n)), unit="us/op")
    figures = [eager]
    try:
        for name in ("threaded", "naive"):
            engine.set_engine(name)
            _autopar(min(n, 2000))
            for label, chained in (("chained", True), ("independent", False)):
                f = Figure(f"autopar {name}, tiny add, {label}", *median_of(repeats, lambda: _autopar(n, chained)),
                           unit="us/op")  # fmt: skip
                f.note = f"{f.value / eager.value:.2f}x torch eager (target <= 2.5x)"
                figures.append(f)
    finally:
        engine.set_engine(previous)
    return figures
