"""NumPy programs that draw random numbers, run with NumPy and with ``import autopar.numpy as np``.

autopar's streams are not NumPy's PCG64 bits, so each program is checked, for
both modules, against the known answer within a stated tolerance (6 standard
errors of the estimate: seeds are fixed, so a result either passes or fails
for good), and autopar's run twice with the same seed must repeat itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy
import pytest

import autopar.numpy as anp

STATISTICAL: dict[str, tuple[Callable[[Any], Any], float, float]] = {}  # name: (program, answer, tolerance)


def statistical(answer: float, tol: float) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def register(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        STATISTICAL[fn.__name__] = (fn, answer, tol)
        return fn

    return register


@statistical(answer=numpy.pi, tol=0.05)  # 6 standard errors of the estimate from 40,000 points
def monte_carlo_pi(np: Any) -> Any:
    rng = np.random.default_rng(0)
    pts = rng.random((40_000, 2))
    return 4 * np.mean((pts**2).sum(axis=1) <= 1)


@statistical(answer=1.0, tol=0.2)  # 6 standard errors of a variance from 2,000 walkers
def random_walk_variance_per_step(np: Any) -> Any:
    rng = np.random.default_rng(1)
    steps = rng.choice(np.array([-1, 1]), size=(2_000, 100))
    final = steps.cumsum(axis=1)[:, -1]
    return final.var() / 100


@statistical(answer=0.0, tol=0.01)  # the bootstrap's mean of means is the sample mean, within 6 of its errors
def bootstrap_mean(np: Any) -> Any:
    rng = np.random.default_rng(2)
    sample = rng.normal(2.0, 1.0, 2_000)
    idx = rng.integers(0, len(sample), size=(200, len(sample)))
    return np.mean(sample[idx].mean(axis=1)) - sample.mean()


@statistical(answer=3.0, tol=0.15)  # 6 standard errors of a mean of 5,000 Poisson(3)
def poisson_and_shuffle(np: Any) -> Any:
    rng = np.random.default_rng(3)
    counts = rng.poisson(3.0, 5_000)
    order = np.arange(10)
    rng.shuffle(order)
    assert sorted(np.asarray(order).tolist()) == list(range(10))
    return counts.mean()


@statistical(answer=0.3, tol=0.03)  # 6 standard errors of a frequency of 10,000
def weighted_choice_frequency(np: Any) -> Any:
    rng = np.random.default_rng(4)
    picks = rng.choice(3, size=10_000, p=[0.2, 0.5, 0.3])
    return np.mean(picks == 2)


@statistical(answer=0.6, tol=0.05)  # 6 standard errors of a covariance from 5,000 draws
def multivariate_normal_covariance(np: Any) -> Any:
    rng = np.random.default_rng(5)
    x = rng.multivariate_normal([1.0, -1.0], [[2.0, 0.6], [0.6, 1.0]], size=5_000)
    return np.cov(x, rowvar=False)[0, 1]


@statistical(answer=2.0, tol=0.1)  # 6 standard errors of a mean of 5,000 Gamma(2, 1) draws
def gamma_mean(np: Any) -> Any:
    return np.random.default_rng(6).gamma(2.0, 1.0, 5_000).mean()


@pytest.mark.parametrize("name", sorted(STATISTICAL))
def test_random_program_gives_the_known_answer(name: str) -> None:
    program, answer, tol = STATISTICAL[name]
    for module in (numpy, anp):
        value = float(numpy.asarray(program(module)))
        assert abs(value - answer) <= tol, (name, module.__name__, value, answer, tol)
    first, again = (float(numpy.asarray(program(anp))) for _ in range(2))
    assert first == again, "the same seed gives the same numbers"
