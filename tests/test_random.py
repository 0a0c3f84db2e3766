"""Random numbers: reproducible under seed, whatever runs in parallel."""

from __future__ import annotations

import numpy as np
import pytest

import autopar as ap


def draw_program() -> list[np.ndarray]:
    ap.random.seed(1234)
    out = []
    for i in range(20):
        device = ap.cpu(i % 2)
        a = ap.random.uniform(-1, 1, size=(64, 64), device=device)
        b = ap.random.normal(0, 2, size=(64,), device=device)
        out += [a @ a, b * 2, ap.rand(3, 2, device=device), ap.randn(size=(4,), device=device)]
    return [x.numpy() for x in out]


def test_seeded_draws_match_across_engines_and_runs() -> None:
    ap.set_cpu_devices(2)
    try:
        ap.engine.set_engine("naive")
        reference = draw_program()
        ap.engine.set_engine("threaded")
        for _ in range(2):
            got = draw_program()
            for x, y in zip(got, reference):
                np.testing.assert_array_equal(x, y)
    finally:
        ap.engine.set_engine("threaded")
        ap.waitall()
        ap.set_cpu_devices(1)


def test_distributions_look_right() -> None:
    ap.random.seed(0)
    u = ap.random.uniform(2.0, 3.0, size=(10_000,)).numpy()
    assert u.min() >= 2.0 and u.max() < 3.0 and abs(u.mean() - 2.5) < 0.02
    n = ap.random.normal(1.0, 2.0, size=(10_000,)).numpy()
    assert abs(n.mean() - 1.0) < 0.1 and abs(n.std() - 2.0) < 0.1
    assert ap.random.uniform().shape == ()
    assert ap.rand(2, 3).shape == (2, 3) and ap.randn((4,)).shape == (4,)
    assert ap.random.uniform(size=(2,), ctx=ap.cpu()).dtype == np.float32


def test_different_seeds_differ() -> None:
    ap.random.seed(1)
    a = ap.rand(5).numpy()
    ap.random.seed(2)
    b = ap.rand(5).numpy()
    assert not np.array_equal(a, b)


def test_bad_parameters_raise_at_the_call() -> None:
    with pytest.raises(ValueError, match="high=0.0 is below low=1.0"):
        ap.random.uniform(1.0, 0.0)
    with pytest.raises(ValueError, match="scale=-1"):
        ap.random.normal(0, -1)
    with pytest.raises(TypeError, match="floating dtype"):
        ap.random.uniform(size=3, dtype="int64")
    with pytest.raises(TypeError, match="not both"):
        ap.rand(2, size=(2,))
