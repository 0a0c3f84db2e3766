"""The benchmark suite behind ``autopar bench`` and the scripts in ``bench/``.

Every figure is measured next to a baseline run in the same process, and
reported as a ratio against it: the machine is shared and noisy, so absolute
times mean little, but two runs side by side compare fairly.

The training baselines live here too: ``reference_models`` (d2l's LeNet-5 and
ResNet-18 in plain PyTorch, also the oracle of training tests) and
``ddp_baseline`` (PyTorch DistributedDataParallel on 127.0.0.1); importing
``reference_models`` imports torch, ``ddp_baseline`` only when it runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Figure:
    """One measured quantity: the median of ``runs`` repeats, in ``unit``."""

    name: str
    value: float
    runs: list[float] = field(default_factory=list)
    unit: str = ""
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_of(repeats: int, measure: Callable[[], float]) -> tuple[float, list[float]]:
    runs = [measure() for _ in range(repeats)]
    return statistics.median(runs), runs


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
