"""Engine overhead: microseconds per tiny op, pushed then ``waitall``.

Workloads of ``n`` no-op functions, *independent* (each writes its own var) and
*chained* (all write one var), on each engine, next to two baselines in the
same process: calling the function directly, and
``concurrent.futures.ThreadPoolExecutor.submit`` (one worker) then waiting.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor, wait

from autopar import engine
from autopar.benchmarks import Figure, median_of, timed


def _noop() -> None:
    return None


def _engine_run(n: int, chained: bool) -> float:
    vars_ = [engine.Var() for _ in range(1 if chained else n)]
    push = engine.push

    def body() -> None:
        if chained:
            w = (vars_[0],)
            for _ in range(n):
                push(_noop, (), w)
        else:
            for v in vars_:
                push(_noop, (), (v,))
        engine.waitall()

    return timed(body) / n * 1e6


def _direct(n: int) -> float:
    def body() -> None:
        for _ in range(n):
            _noop()

    return timed(body) / n * 1e6


def _executor(n: int) -> float:
    with ThreadPoolExecutor(max_workers=1) as pool:

        def body() -> None:
            futures = [pool.submit(_noop) for _ in range(n)]
            wait(futures)

        return timed(body) / n * 1e6


def run(n: int = 20_000, repeats: int = 5) -> list[Figure]:
    """Median µs per op of each workload; the engine is restored afterwards."""
    previous = engine.get_engine()
    figures = [
        Figure("direct call", *median_of(repeats, lambda: _direct(n)), unit="us/op"),
        Figure("ThreadPoolExecutor.submit", *median_of(repeats, lambda: _executor(n)), unit="us/op"),
    ]
    try:
        for name in ("threaded", "naive"):
            engine.set_engine(name)
            for chained in (False, True):
                _engine_run(min(n, 2000), chained)  # warm up: lanes, threads
                label = f"engine {name}, {'chained' if chained else 'independent'}"
                runs = median_of(repeats, functools.partial(_engine_run, n, chained))
                figures.append(Figure(label, *runs, unit="us/op"))
    finally:
        engine.set_engine(previous)
    pool = next(f for f in figures if f.name.startswith("ThreadPool"))
    for f in figures[2:]:
        f.note = f"{f.value / pool.value:.2f}x ThreadPoolExecutor"
        if f.name == "engine threaded, independent":
            f.note += " (target <= 10 us)"
    return figures
