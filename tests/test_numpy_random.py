"""``random.default_rng``/``Generator`` and the legacy draws: NumPy's distributions, shapes and dtypes.

autopar's streams are torch's, not NumPy's PCG64 bits, so these tests check
what NumPy documents -- statistics (within 6 standard errors of NumPy's own
formulas: a fluke fails about once in 10^8 runs), shapes, dtypes, supports --
and reproducibility (same seed, same numbers, on either engine).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import autopar as ap

N = 20_000


def _close(sample: np.ndarray, mean: float, var: float) -> None:
    assert abs(sample.mean() - mean) < 6 * math.sqrt(var / sample.size) + 1e-12, (sample.mean(), mean)
    # variance of the sample variance ~ (m4 - var^2) / n; 6 sigma with m4 <= 10 var^2 for these laws
    assert abs(sample.var() - var) < 6 * math.sqrt(10 * var * var / sample.size), (sample.var(), var)


def test_distributions_have_numpys_moments_shapes_and_dtypes() -> None:
    rng = ap.random.default_rng(123)
    u = rng.random(N, dtype="float64").numpy()
    assert u.dtype == np.float64 and u.min() >= 0 and u.max() < 1
    _close(u, 0.5, 1 / 12)
    _close(rng.uniform(-2.0, 4.0, N).numpy().astype(float), 1.0, 36 / 12)
    _close(rng.normal(3.0, 2.0, size=N).numpy().astype(float), 3.0, 4.0)
    _close(rng.standard_normal(N).numpy().astype(float), 0.0, 1.0)
    _close(rng.exponential(2.0, N).numpy().astype(float), 2.0, 4.0)
    _close(rng.lognormal(0.0, 0.5, N).numpy().astype(float), math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25))
    p = rng.poisson(3.5, N).numpy()
    assert p.dtype == np.int64 and p.min() >= 0
    _close(p.astype(float), 3.5, 3.5)
    b = rng.binomial(10, 0.3, N).numpy()
    assert b.dtype == np.int64 and 0 <= b.min() and b.max() <= 10
    _close(b.astype(float), 3.0, 2.1)
    i = rng.integers(-3, 7, N).numpy()
    assert i.dtype == np.int64 and i.min() == -3 and i.max() == 6
    _close(i.astype(float), 1.5, (10**2 - 1) / 12)
    e = rng.integers(1, 6, N, endpoint=True).numpy()
    assert e.min() == 1 and e.max() == 6
    assert rng.integers(5, size=(2, 3), dtype="int32").dtype == ap.int32
    assert rng.random().shape == () and rng.normal(size=(2, 3)).shape == (2, 3) and rng.poisson(size=4).shape == (4,)


def test_array_parameters_broadcast_as_numpy() -> None:
    rng = ap.random.default_rng(5)
    loc = np.array([0.0, 100.0, -50.0])
    draws = rng.normal(ap.asarray(loc), 0.5, size=(N // 10, 3)).numpy()
    assert draws.shape == (N // 10, 3)
    assert np.allclose(draws.mean(0), loc, atol=6 * 0.5 / math.sqrt(N // 10))
    lam = rng.poisson(ap.asarray([1.0, 50.0]), size=(N // 10, 2)).numpy()
    assert np.allclose(lam.mean(0), [1.0, 50.0], atol=6 * math.sqrt(50.0 / (N // 10)))
    assert rng.normal([0.0, 1.0], [1.0, 2.0]).shape == (2,)
    assert rng.uniform(ap.zeros(4, dtype="float64"), 2.0).shape == (4,)
    with pytest.raises(ValueError, match="size=\\(5,\\) does not fit the parameters' broadcast shape \\(3,\\)"):
        rng.normal(ap.asarray(loc), 1.0, size=5)


def test_choice_with_weights_without_replacement_and_along_an_axis() -> None:
    rng = ap.random.default_rng(9)
    p = np.array([0.1, 0.0, 0.6, 0.3])
    picks = rng.choice(4, size=N, p=p).numpy()
    freq = np.bincount(picks, minlength=4) / N
    assert freq[1] == 0 and np.allclose(freq, p, atol=6 * math.sqrt(0.25 / N))
    unique = rng.choice(ap.arange(10), size=10, replace=False).numpy()
    assert sorted(unique.tolist()) == list(range(10))
    weighted = rng.choice(5, size=3, replace=False, p=[0.2, 0.2, 0.2, 0.2, 0.2]).numpy()
    assert len(set(weighted.tolist())) == 3
    rows = np.arange(12).reshape(4, 3)
    got = rng.choice(ap.asarray(rows), size=2, replace=False).numpy()
    assert got.shape == (2, 3) and all(r.tolist() in rows.tolist() for r in got)
    cols = rng.choice(ap.asarray(rows), size=(2, 2), axis=1).numpy()
    assert cols.shape == (4, 2, 2)
    legacy = ap.random.choice(3, size=N, p=[0.5, 0.5, 0.0]).numpy()
    assert set(legacy.tolist()) == {0, 1}
    with pytest.raises(ValueError, match="p must be non-negative and sum to 1"):
        rng.choice(3, p=[0.5, 0.6, 0.1])
    with pytest.raises(ValueError, match="cannot take 5 samples from 3 without replacement"):
        rng.choice(3, size=5, replace=False)


def test_permutation_shuffle_and_permuted() -> None:
    rng = ap.random.default_rng(3)
    perm = rng.permutation(50).numpy()
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))
    m = np.arange(20).reshape(4, 5)
    rows = rng.permutation(ap.asarray(m)).numpy()
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, m.tolist()))
    cols = rng.permutation(ap.asarray(m), axis=1).numpy()
    assert (cols == m[:, cols[0]]).all()  # whole columns moved (row 0 of m is 0..4)
    x = ap.arange(30)
    assert rng.shuffle(x) is None
    assert sorted(x.tolist()) == list(range(30)) and x.tolist() != list(range(30))
    each = rng.permuted(ap.asarray(m), axis=1).numpy()
    assert (np.sort(each, axis=1) == m).all()
    with pytest.raises(TypeError, match="Generator.shuffle: x must be an autopar array"):
        rng.shuffle([1, 2, 3])


def test_seeding_is_reproducible_on_every_engine_and_streams_are_independent(eng) -> None:  # type: ignore[no-untyped-def]
    def program(seed: int) -> list[list[float]]:
        rng = ap.random.default_rng(seed)
        a = rng.normal(size=5)
        b = rng.integers(0, 100, 5)
        c = rng.choice(10, 3, replace=False)
        return [a.tolist(), b.tolist(), c.tolist()]

    first = program(2024)
    assert program(2024) == first
    assert program(2025) != first
    parent = ap.random.default_rng(1)
    kids = parent.spawn(2)
    again = ap.random.default_rng(1).spawn(2)
    assert kids[0].random(4).tolist() == again[0].random(4).tolist()
    assert kids[0].random(4).tolist() != kids[1].random(4).tolist()
    assert ap.random.default_rng(parent) is parent
    # a Generator is its own stream: draws from the global generator in between change nothing
    r1 = ap.random.default_rng(8)
    x1 = r1.random(3).tolist()
    r2 = ap.random.default_rng(8)
    ap.random.uniform(size=100)
    assert r2.random(3).tolist() == x1


def test_a_dropped_generator_with_draws_in_flight_still_draws() -> None:
    import gc

    outs = [ap.random.default_rng(i).normal(size=1000) for i in range(5)]
    gc.collect()
    assert [o.shape for o in outs] == [(1000,)] * 5 and all(np.isfinite(o.numpy()).all() for o in outs)


def test_legacy_module_draws_follow_random_seed() -> None:
    ap.random.seed(11)
    a = [ap.random.standard_normal(3).tolist(), ap.random.exponential(1.0, 3).tolist(), ap.random.poisson(2.0, 3).tolist(),
         ap.random.binomial(5, 0.5, 3).tolist(), ap.random.random_sample(3).tolist()]  # fmt: skip
    ap.random.seed(11)
    b = [ap.random.standard_normal(3).tolist(), ap.random.exponential(1.0, 3).tolist(), ap.random.poisson(2.0, 3).tolist(),
         ap.random.binomial(5, 0.5, 3).tolist(), ap.random.random_sample(3).tolist()]  # fmt: skip
    assert a == b


def test_bad_arguments_name_the_value() -> None:
    rng = ap.random.default_rng(0)
    with pytest.raises(ValueError, match="Generator.integers: high=3 must be above low=5"):
        rng.integers(5, 3)
    with pytest.raises(TypeError, match="expected ints"):
        rng.integers(0.5, 3)
    with pytest.raises(ValueError, match="scale=-1.0 must be non-negative"):
        rng.normal(0.0, -1.0)
    with pytest.raises(ValueError, match="p=1.5 must be within"):
        rng.binomial(3, 1.5)
    with pytest.raises(TypeError, match="default_rng: seed=1.5"):
        ap.random.default_rng(1.5)
    with pytest.raises(ValueError, match="must be non-negative"):
        ap.random.default_rng(-1)


def _moments(name: str, sample: np.ndarray, mean: float, var: float, kurtosis_bound: float = 10.0) -> None:
    x = np.asarray(sample, dtype=float)
    assert abs(x.mean() - mean) < 6 * math.sqrt(var / x.size), (name, x.mean(), mean)
    assert abs(x.var() - var) < 6 * math.sqrt(kurtosis_bound * var * var / x.size), (name, x.var(), var)


def test_more_distributions_have_numpys_moments() -> None:
    rng = ap.random.default_rng(77)
    n = 40_000
    g = math.gamma
    cases = [
        ("gamma", rng.gamma(2.0, 3.0, n), 6.0, 18.0), ("standard_gamma", rng.standard_gamma(0.5, n), 0.5, 0.5),
        ("beta", rng.beta(2.0, 5.0, n), 2 / 7, 10 / (49 * 8)), ("chisquare", rng.chisquare(4, n), 4.0, 8.0),
        ("f", rng.f(5, 12, n), 12 / 10, 2 * 144 * 15 / (5 * 100 * 8)), ("standard_t", rng.standard_t(10, n), 0.0, 1.25),
        ("negative_binomial", rng.negative_binomial(5, 0.4, n), 7.5, 18.75),
        ("geometric", rng.geometric(0.3, n), 1 / 0.3, 0.7 / 0.09), ("laplace", rng.laplace(1.0, 2.0, n), 1.0, 8.0),
        ("logistic", rng.logistic(1.0, 2.0, n), 1.0, 4 * math.pi**2 / 3),
        ("gumbel", rng.gumbel(1.0, 2.0, n), 1 + 2 * 0.5772156649015329, 4 * math.pi**2 / 6),
        ("weibull", rng.weibull(2.0, n), g(1.5), g(2.0) - g(1.5) ** 2), ("pareto", rng.pareto(5.0, n), 0.25, 5 / 48),
        ("rayleigh", rng.rayleigh(2.0, n), 2 * math.sqrt(math.pi / 2), (4 - math.pi) / 2 * 4),
        ("power", rng.power(3.0, n), 0.75, 3 / 80), ("triangular", rng.triangular(0.0, 1.0, 4.0, n), 5 / 3, 13 / 18),
        ("wald", rng.wald(2.0, 3.0, n), 2.0, 8 / 3), ("lognormal", rng.lognormal(0.0, 0.25, n), math.exp(1 / 32),
                                                     (math.exp(1 / 16) - 1) * math.exp(1 / 16)),
    ]  # fmt: skip
    for name, draws, mean, var in cases:
        _moments(name, draws.numpy(), mean, var, kurtosis_bound=40.0 if name in ("pareto", "wald", "f") else 10.0)
    assert rng.geometric(0.3, 100).dtype == ap.int64 and rng.negative_binomial(2, 0.5, 3).dtype == ap.int64
    cauchy = rng.standard_cauchy(n).numpy()
    assert abs(np.median(cauchy)) < 0.05 and abs(np.subtract(*np.percentile(cauchy, [75, 25])) - 2.0) < 0.1


def test_multivariate_dirichlet_multinomial() -> None:
    rng = ap.random.default_rng(78)
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    for method in ("svd", "eigh", "cholesky"):
        x = rng.multivariate_normal([1.0, -1.0], cov, 20_000, method=method).numpy()
        assert x.shape == (20_000, 2) and np.allclose(x.mean(0), [1.0, -1.0], atol=0.06)
        assert np.allclose(np.cov(x.T), cov, atol=0.1)
    d = rng.dirichlet([1.0, 2.0, 3.0], (100, 50)).numpy()
    assert d.shape == (100, 50, 3) and np.allclose(d.sum(-1), 1.0) and np.allclose(d.mean((0, 1)), [1 / 6, 1 / 3, 1 / 2], atol=0.02)
    m = rng.multinomial(10, [0.2, 0.3, 0.5], (4000,)).numpy()
    assert m.dtype == np.int64 and (m.sum(1) == 10).all() and np.allclose(m.mean(0), [2.0, 3.0, 5.0], atol=0.1)
    assert rng.multinomial(3, [0.5, 0.5]).shape == (2,)
    ap.random.seed(5)
    first = [ap.random.gamma(2.0, size=3).tolist(), ap.random.multinomial(5, [0.5, 0.5]).tolist()]
    ap.random.seed(5)
    assert [ap.random.gamma(2.0, size=3).tolist(), ap.random.multinomial(5, [0.5, 0.5]).tolist()] == first
    with pytest.raises(ValueError, match="Generator.beta: a=0.0 must be positive"):
        rng.beta(0.0, 1.0)
    with pytest.raises(ValueError, match="random.geometric: p=1.5 must be within"):
        ap.random.geometric(1.5)


def test_noncentral_hypergeometric_logseries_and_legacy_aliases() -> None:
    rng = ap.random.default_rng(79)
    n = 40_000
    dfn, dfd, lam = 5.0, 20.0, 3.0
    ncf_var = 2 * ((dfn + lam) ** 2 + (dfn + 2 * lam) * (dfd - 2)) / ((dfd - 2) ** 2 * (dfd - 4)) * (dfd / dfn) ** 2
    p = 0.6
    a = -1 / math.log(1 - p)
    good, bad, taken = 7, 13, 5
    total = good + bad
    cases = [
        ("noncentral_chisquare", rng.noncentral_chisquare(3.0, 2.0, n), 5.0, 14.0),
        ("noncentral_f", rng.noncentral_f(dfn, dfd, lam, n), dfd * (dfn + lam) / (dfn * (dfd - 2)), ncf_var),
        ("hypergeometric", rng.hypergeometric(good, bad, taken, n), taken * good / total,
         taken * good / total * (bad / total) * (total - taken) / (total - 1)),
        ("logseries", rng.logseries(p, n), a * p / (1 - p), -(p**2 + p * math.log(1 - p)) / ((1 - p) ** 2 * math.log(1 - p) ** 2)),
    ]  # fmt: skip
    for name, draws, mean, var in cases:
        _moments(name, draws.numpy(), mean, var, kurtosis_bound=40.0)
    h = rng.hypergeometric(good, bad, taken, 1000).numpy()
    assert h.dtype == np.int64 and h.min() >= 0 and h.max() <= taken
    assert rng.logseries(p, 100).numpy().min() >= 1
    assert isinstance(rng.bytes(10), bytes) and len(rng.bytes(10)) == 10
    legacy = ap.random.random_integers(3, size=2000).numpy()
    assert legacy.min() == 1 and legacy.max() == 3
    assert ap.random.ranf(3).shape == (3,) and ap.random.sample((2, 2)).shape == (2, 2)


def test_rejection_samplers_vonmises_and_zipf() -> None:
    rng = ap.random.default_rng(80)
    n = 40_000
    kappa = 4.0
    t = np.linspace(0, np.pi, 200_001)
    i1 = np.trapezoid(np.exp(kappa * np.cos(t)) * np.cos(t), t) / np.pi
    resultant = i1 / np.i0(kappa)  # E[cos(x - mu)] for von Mises
    x = rng.vonmises(0.5, kappa, n).numpy().astype(float)
    assert x.shape == (n,) and x.min() >= -np.pi and x.max() < np.pi
    assert abs(np.cos(x - 0.5).mean() - resultant) < 6 * math.sqrt(0.5 / n)
    assert abs(np.angle(np.exp(1j * x).mean()) - 0.5) < 0.02
    z = rng.zipf(2.5, n).numpy()
    zeta = (np.arange(1, 1_000_001, dtype=float) ** -2.5).sum() + 1_000_000**-1.5 / 1.5
    p1 = 1 / zeta
    assert z.dtype == np.int64 and z.min() == 1 and abs((z == 1).mean() - p1) < 6 * math.sqrt(p1 * (1 - p1) / n)
    uniform = rng.vonmises(1.0, 0.0, 1000).numpy()
    assert uniform.min() >= -np.pi and uniform.max() < np.pi
    ap.random.seed(9)
    first = ap.random.zipf(3.0, 50).tolist()
    ap.random.seed(9)
    assert ap.random.zipf(3.0, 50).tolist() == first
    with pytest.raises(ValueError, match="a=1.0 must be a number above 1"):
        rng.zipf(1.0)


def test_integers_with_array_bounds_broadcast_as_numpy() -> None:
    rng = ap.random.default_rng(81)
    x = rng.integers([0, 10, 100], [5, 20, 105], size=(20_000, 3)).numpy()
    assert x.dtype == np.int64 and x.shape == (20_000, 3)
    assert (x.min(0) == [0, 10, 100]).all() and (x.max(0) == [4, 19, 104]).all()
    assert np.allclose(x.mean(0), [2.0, 14.5, 102.0], atol=6 * math.sqrt(8.25 / 20_000))
    y = rng.integers(np.array([1, 2]), 6, endpoint=True, size=(5000, 2)).numpy()
    assert (y.min(0) == [1, 2]).all() and (y.max(0) == [6, 6]).all()
    assert rng.integers(ap.arange(3), 10, size=(2, 3), dtype="int32").dtype == ap.int32
    with pytest.raises(TypeError, match="the bounds must be integers"):
        rng.integers(np.array([0.5]), 3)
