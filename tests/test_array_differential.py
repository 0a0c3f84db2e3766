"""Random array programs across two CPU devices: the threaded engine must give
NumPy's results. Ops, in-place updates, slice assignments, views and copies."""

from __future__ import annotations

import random

import numpy as np
import pytest

import autopar as ap

# Above TINY_NUMEL (16,384 elements), so no op runs inline: they all go through the lanes.
N = 144


def run_program(seed: int, n_ops: int, use_autopar: bool, devices: list[ap.Device] | None = None) -> list[np.ndarray]:
    """The program ``seed`` draws, on ``devices`` (default: cpu:0 and cpu:1), or in NumPy."""
    rng = random.Random(seed)
    gen = np.random.default_rng(seed)
    if devices is None:
        devices = [ap.cpu(0), ap.cpu(1)] if use_autopar else [None, None]  # type: ignore[list-item]
    k = len(devices)
    init = [gen.uniform(-1, 1, (N, N)).astype(np.float32) for _ in range(8)]
    if use_autopar:
        arrays = [ap.array(a, device=devices[i % k]) for i, a in enumerate(init)]
    else:
        arrays = [a.copy() for a in init]
    place = [i % k for i in range(8)]

    def fetch(i: int, dev: int):  # type: ignore[no-untyped-def]
        a = arrays[i]
        if use_autopar and place[i] != dev:
            return a.to(devices[dev], non_blocking=True)
        return a

    tanh = ap.tanh if use_autopar else np.tanh
    for _ in range(n_ops):
        kind = rng.randrange(9)
        out, i, j = rng.randrange(8), rng.randrange(8), rng.randrange(8)
        dev = place[out] if kind in (4, 5, 6) else place[i]
        a, b = fetch(i, dev), fetch(j, dev)
        if kind == 0:
            new = tanh(a @ b)
        elif kind == 1:
            new = a * b - 0.5 * a
        elif kind == 2:
            new = tanh(a.T + b)
        elif kind == 3:
            new = a.sum(axis=0) / N + b  # broadcasting a row
        elif kind == 4:
            arrays[out] *= 0.5
            arrays[out] += tanh(b)
            continue
        elif kind == 5:
            r, s = rng.randrange(N), rng.randrange(N)  # noqa: F841
            arrays[out][r] = b[s] * 0.9
            continue
        elif kind == 6:
            view = arrays[out][1:4, ::2]
            view -= 0.25
            continue
        elif kind == 7:
            target = rng.randrange(k)
            new = a.copyto(devices[target]) if use_autopar else a.copy()
            arrays[out], place[out] = new, target
            continue
        else:
            new = np.maximum(a, b) if not use_autopar else ap.maximum(a, b)
        if new.shape != (N, N):
            new = new + np.zeros((N, N), np.float32) if not use_autopar else new + ap.zeros((N, N), device=devices[dev])
        arrays[out], place[out] = new, dev
    return [a.numpy() if use_autopar else a for a in arrays]


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_random_array_programs_match_numpy(two_cpus, seed: int) -> None:  # type: ignore[no-untyped-def]
    want = run_program(seed, 600, use_autopar=False)
    got = run_program(seed, 600, use_autopar=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
