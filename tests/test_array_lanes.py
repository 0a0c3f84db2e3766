"""Arrays big enough that ops go through the lanes, not the calling thread.

"Tiny" is judged by work (elements read and written, multiply-adds), so a
reduction of a big array runs on a worker even though its result has one
element (issue 7, defect 12, the array half). Values are checked against
NumPy, on views and in-place updates with overlap.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import autopar as ap
from autopar import engine
from autopar.arrays._dispatch import TINY_WORK

N = 200  # 40,000 elements: more work than TINY_WORK (32,768) for every op below


class Threads:
    """Records which thread started each op (the engine's hooks)."""

    def __init__(self) -> None:
        self.started: dict[str, list[str]] = {}
        self.lock = threading.Lock()

    def op_pushed(self, op: Any) -> None:
        pass

    def op_started(self, op: Any) -> None:
        with self.lock:
            self.started.setdefault(op.name, []).append(threading.current_thread().name)

    def op_finished(self, op: Any) -> None:
        pass


@pytest.fixture
def threads():  # type: ignore[no-untyped-def]
    engine.set_engine("threaded")
    recorder = Threads()
    engine.add_listener(recorder)
    yield recorder
    engine.remove_listener(recorder)
    ap.waitall()


def test_big_ops_run_on_lane_workers_and_match_numpy(threads: Threads) -> None:
    assert N * N > TINY_WORK
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((N, N)).astype(np.float32)
    x = ap.asarray(x_np)
    x.wait_to_read()
    total = x.sum()  # one element out, 40,000 in: not tiny
    results = {
        "add": (x + 1.0, x_np + 1.0),
        "matmul": (x @ x, x_np @ x_np),
        "exp": (ap.exp(x), np.exp(x_np)),
        "max": (x.max(axis=0), x_np.max(axis=0)),
        "sort": (ap.sort(x, axis=1), np.sort(x_np, axis=1)),
        "index": (x[::-1, ::2], x_np[::-1, ::2]),
    }
    for name, (got, want) in results.items():
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-3, err_msg=name)
    np.testing.assert_allclose(total.item(), x_np.sum(), rtol=1e-3)
    main = threading.main_thread().name
    for name in ("sum", "add", "matmul", "exp", "max", "sort"):
        assert threads.started[name] and main not in threads.started[name], (name, threads.started[name])


def test_tiny_ops_may_run_on_the_caller(threads: Threads) -> None:
    x = ap.ones(4)
    x.wait_to_read()
    (x + 1).wait_to_read()
    assert threading.main_thread().name in threads.started["add"]


@pytest.mark.parametrize("engine_name", ["threaded", "naive"])
def test_big_in_place_updates_with_overlap_match_numpy(engine_name: str) -> None:
    engine.set_engine(engine_name)
    try:
        m_np = np.arange(N * N, dtype=np.float64).reshape(N, N) / N
        m = ap.asarray(m_np)
        m += m.T
        m_np += m_np.T.copy()
        m[1:] = m[:-1]
        m_np[1:] = m_np[:-1].copy()
        v = m[::-1, ::3]
        v *= 2
        m_np[::-1, ::3] *= 2
        m[:, 0] = m[0, :]
        m_np[:, 0] = m_np[0, :].copy()
        np.testing.assert_allclose(m.numpy(), m_np)
    finally:
        ap.waitall()
        engine.set_engine("threaded")
