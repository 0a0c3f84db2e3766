"""Ordinary NumPy programs, run twice: with NumPy and with ``import autopar.numpy as np``.

Each program is written as a NumPy user writes it, against a module ``np``
passed in; only the module changes. Deterministic programs must agree with
NumPy at ``rtol=1e-9`` (what NumPy's own float64 results would pass between
two BLAS builds); programs that draw random numbers are in
test_numpy_programs_random.py, checked against the known answer. Inputs come from NumPy's generator so
both runs see the same data. Sizes are small: the file runs in seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy
import pytest
from _numpy_programs import check_same_answer

DATA = numpy.random.default_rng(2024)
X2 = DATA.standard_normal((40, 3))
Y2 = X2 @ numpy.array([1.5, -2.0, 0.5]) + 0.1 * DATA.standard_normal(40)
PTS = numpy.r_[DATA.normal(0, 0.3, (15, 2)), DATA.normal(3, 0.3, (15, 2)), DATA.normal((0, 3), 0.3, (15, 2))]
SERIES = numpy.cumsum(DATA.standard_normal(120))
SPD = (lambda a: a @ a.T + 8 * numpy.eye(8))(DATA.standard_normal((8, 8)))
EXACT: dict[str, Callable[[Any], Any]] = {}


def exact(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    EXACT[fn.__name__] = fn
    return fn


# -- linear algebra --------------------------------------------------------------------------------


@exact
def least_squares_line(np: Any) -> Any:
    x = np.linspace(0, 10, 25)
    y = 3.0 * x - 1.0 + np.sin(x)
    A = np.vstack([x, np.ones(len(x))]).T
    (m, c), res, rank, sv = np.linalg.lstsq(A, y, rcond=None)
    return m, c, res, rank, sv


@exact
def normal_equations(np: Any) -> Any:
    X, y = np.asarray(X2), np.asarray(Y2)
    beta = np.linalg.solve(X.T @ X, X.T @ y)
    r2 = 1 - ((y - X @ beta) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    return beta, r2


@exact
def pca_by_svd(np: Any) -> Any:
    X = np.asarray(X2) * np.array([3.0, 1.0, 0.2])
    Xc = X - X.mean(axis=0)
    U, S, Vt = np.linalg.svd(Xc, full_matrices=False)
    explained = S**2 / np.sum(S**2)
    rank1 = (U[:, :1] * S[:1]) @ Vt[:1]  # sign-free: the best rank-1 approximation
    return explained, rank1


@exact
def pca_by_eigh(np: Any) -> Any:
    C = np.cov(np.asarray(X2), rowvar=False)
    w, V = np.linalg.eigh(C)
    order = np.argsort(w)[::-1]
    return w[order], np.abs(V[:, order[0]])


@exact
def cholesky_solve(np: Any) -> Any:
    A = np.asarray(SPD)
    b = np.arange(1.0, 9.0)
    L = np.linalg.cholesky(A)
    z = np.linalg.solve(L, b)
    x = np.linalg.solve(L.T, z)
    return x, np.allclose(A @ x, b), np.linalg.det(A), np.linalg.cond(A)


@exact
def power_iteration(np: Any) -> Any:
    A = np.asarray(SPD)
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    for _ in range(60):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ A @ v, np.linalg.eigvalsh(A)[-1]


@exact
def matrix_functions(np: Any) -> Any:
    A = np.asarray(SPD)[:4, :4]
    return np.linalg.inv(A), np.linalg.matrix_power(A, 3), np.trace(A), np.linalg.norm(A, "fro"), np.linalg.pinv(A[:, :3])


@exact
def tridiagonal_thomas(np: Any) -> Any:
    n = 12
    a, b, c = np.full(n, -1.0), np.full(n, 2.5), np.full(n, -1.0)
    d = np.arange(n, dtype=float)
    cp, dp = np.zeros(n), np.zeros(n)
    cp[0], dp[0] = c[0] / b[0], d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.zeros(n)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return x


# -- numerical methods -----------------------------------------------------------------------------


@exact
def heat_equation(np: Any) -> Any:
    u = np.zeros(51)
    u[20:31] = 1.0
    r = 0.4
    for _ in range(200):
        u[1:-1] = u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2])
    return u, u.sum()


@exact
def mandelbrot(np: Any) -> Any:
    x = np.linspace(-2.0, 0.6, 48)
    y = np.linspace(-1.2, 1.2, 32)
    c = x[None, :] + 1j * y[:, None]
    z = np.zeros_like(c)
    counts = np.zeros(c.shape, dtype=int)
    for _ in range(30):
        inside = np.abs(z) <= 2
        z[inside] = z[inside] ** 2 + c[inside]
        counts += inside
    return counts


@exact
def newton_sqrt(np: Any) -> Any:
    a = np.array([2.0, 10.0, 0.5, 1e4])
    x = np.ones_like(a)
    for _ in range(30):
        x = 0.5 * (x + a / x)
    return x, np.abs(x * x - a).max() < 1e-9


@exact
def trapezoid_integral(np: Any) -> Any:
    x = np.linspace(0, np.pi, 101)
    return np.trapezoid(np.sin(x), x), np.trapezoid(x**2, dx=x[1] - x[0])


@exact
def horner_polynomial(np: Any) -> Any:
    coeffs = [2.0, -3.0, 0.5, 1.0]
    x = np.linspace(-2, 2, 9)
    y = np.zeros_like(x)
    for c in coeffs:
        y = y * x + c
    return y


@exact
def game_of_life(np: Any) -> Any:
    grid = np.zeros((10, 10), dtype=int)
    grid[1, 2] = grid[2, 3] = grid[3, 1] = grid[3, 2] = grid[3, 3] = 1  # a glider
    for _ in range(8):
        n = sum(np.roll(np.roll(grid, i, 0), j, 1) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
        grid = ((n == 3) | ((grid == 1) & (n == 2))).astype(int)
    return grid, np.argwhere(grid)


@exact
def sieve_of_eratosthenes(np: Any) -> Any:
    n = 100
    is_prime = np.ones(n + 1, dtype=bool)
    is_prime[:2] = False
    for i in range(2, int(n**0.5) + 1):
        if is_prime[i]:
            is_prime[i * i :: i] = False
    return np.nonzero(is_prime)[0]


@exact
def box_blur_with_edge_padding(np: Any) -> Any:
    img = np.arange(36, dtype=float).reshape(6, 6) % 7
    p = np.pad(img, 1, mode="edge")
    out = sum(p[1 + i : 7 + i, 1 + j : 7 + j] for i in (-1, 0, 1) for j in (-1, 0, 1)) / 9
    return out


# -- signals, FFT ------------------------------------------------------------------------------------


@exact
def fft_convolution(np: Any) -> Any:
    a = np.asarray(SERIES[:50])
    k = np.exp(-np.linspace(-2, 2, 9) ** 2)
    n = len(a) + len(k) - 1
    via_fft = np.fft.irfft(np.fft.rfft(a, n) * np.fft.rfft(k, n), n)
    return via_fft, np.convolve(a, k)


@exact
def moving_average(np: Any) -> Any:
    x = np.asarray(SERIES)
    w = 7
    return np.convolve(x, np.ones(w) / w, mode="valid"), np.convolve(x, np.ones(w) / w, mode="same")


@exact
def spectrum_peak(np: Any) -> Any:
    t = np.arange(256) / 256
    sig = np.sin(2 * np.pi * 12 * t) + 0.5 * np.cos(2 * np.pi * 40 * t)
    power = np.abs(np.fft.rfft(sig)) ** 2
    freqs = np.fft.rfftfreq(256, d=1 / 256)
    return freqs[np.argsort(power)[-2:]], np.fft.fft2(sig.reshape(16, 16)).real


@exact
def max_drawdown(np: Any) -> Any:
    prices = 100 * np.exp(np.asarray(SERIES) / 50)
    peak = np.maximum.accumulate(prices)
    drawdown = (prices - peak) / peak
    return drawdown.min(), np.argmin(drawdown), np.minimum.accumulate(prices)[-1]


@exact
def rolling_zscore(np: Any) -> Any:
    x = np.asarray(SERIES)
    c = np.cumsum(np.insert(x, 0, 0.0))
    w = 10
    mean = (c[w:] - c[:-w]) / w
    return (x[w - 1 :] - mean) / x.std()


@exact
def resample_detrend_differentiate(np: Any) -> Any:
    t = np.linspace(0, 4, 41)
    y = 0.5 * t**2 - t + np.sin(3 * t)
    fine = np.linspace(0, 4, 101)
    resampled = np.interp(fine, t, y)
    trend = np.polyval(np.polyfit(t, y, 2), t)
    return resampled, y - trend, np.gradient(y, t), np.gradient(y, 0.1, edge_order=2)


@exact
def markov_chain_stationary_distribution(np: Any) -> Any:
    P = np.array([[0.9, 0.075, 0.025], [0.15, 0.8, 0.05], [0.25, 0.25, 0.5]])
    w, v = np.linalg.eig(P.T)
    k = np.argmin(np.abs(w - 1))
    pi = np.real(v[:, k]) / np.real(v[:, k]).sum()
    return pi, np.linalg.matrix_power(P, 50)[0], np.sort(np.abs(w))


@exact
def windowed_spectrum_and_polynomial_trend(np: Any) -> Any:
    t = np.arange(128) / 128
    sig = np.sin(2 * np.pi * 10 * t) + 0.3 * t**2
    spectrum = np.abs(np.fft.rfft(sig * np.hanning(128)))
    trend = np.poly1d(np.polyfit(t, sig, 2))
    return np.argmax(spectrum), spectrum[:5], trend(t[:4]), trend.deriv().coeffs, np.sort(np.real(trend.roots))


@exact
def gaussian_kernel_on_a_grid(np: Any) -> Any:
    Y, X = np.mgrid[-2:2:9j, -3:3:13j]
    kernel = np.exp(-(X**2 + Y**2) / 2)
    kernel /= kernel.sum()
    edges = np.r_[0, np.cumsum(kernel.sum(axis=0))]
    table = np.c_[X[0], kernel.sum(axis=0)]
    # ties: NumPy's default sort is not stable, so ranks of equal values differ between sorts; ask for stable
    ranks = np.apply_along_axis(lambda row: np.argsort(np.argsort(row, kind="stable"), kind="stable"), 1, kernel[:3])
    return kernel, edges, table, ranks


# -- data handling -------------------------------------------------------------------------------------


@exact
def histograms(np: Any) -> Any:
    x = np.asarray(SERIES)
    hist, edges = np.histogram(x, bins=12)
    dens, _ = np.histogram(x, bins=edges, density=True)
    h2, xe, ye = np.histogram2d(x[:-1], np.diff(x), bins=(4, 5))
    return hist, edges, dens, np.sum(dens * np.diff(edges)), h2


@exact
def record_sorting(np: Any) -> Any:
    last = np.array([3, 1, 2, 1, 3, 2, 1])
    first = np.array([1, 2, 1, 1, 0, 1, 2])
    age = np.array([30, 25, 41, 33, 19, 27, 52])
    order = np.lexsort((age, first, last))
    return order, age[order], np.take(last, order)


@exact
def pairwise_distances(np: Any) -> Any:
    X = np.asarray(PTS)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=-1))
    np.fill_diagonal(D, np.inf)
    return D.min(axis=1), D.argmin(axis=1)


@exact
def kmeans(np: Any) -> Any:
    X = np.asarray(PTS)
    centers = X[[0, 15, 30]].copy()
    for _ in range(5):
        d = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
        labels = d.argmin(axis=1)
        sums = np.zeros_like(centers)
        np.add.at(sums, labels, X)
        centers = sums / np.bincount(labels, minlength=3)[:, None]
    return centers, labels


@exact
def grouped_statistics(np: Any) -> Any:
    labels = np.array([0, 2, 1, 2, 0, 1, 1, 2, 0, 2])
    values = np.linspace(1.0, 5.5, 10)
    sums = np.bincount(labels, weights=values)
    means = sums / np.bincount(labels)
    groups, counts = np.unique(labels, return_counts=True)
    return sums, means, groups, counts, counts[np.argsort(-counts, kind="stable")]


@exact
def binning_with_digitize(np: Any) -> Any:
    ages = np.array([3, 17, 18, 25, 40, 64, 65, 90, 12, 33])
    bins = np.array([0, 18, 65, 120])
    which = np.digitize(ages, bins)
    means = np.array([ages[which == k].mean() for k in range(1, len(bins))])
    return which, means, np.ix_([0, 2], [1])[0].shape


@exact
def descriptive_statistics(np: Any) -> Any:
    x = np.asarray(X2)
    return (x.mean(0), x.std(0, ddof=1), np.median(x, axis=0), np.percentile(x, [5, 95], axis=0),
            np.corrcoef(x, rowvar=False), np.cov(x.T, bias=True), np.ptp(x, axis=0))  # fmt: skip


@exact
def grid_search_argmax(np: Any) -> Any:
    x = np.linspace(-2, 2, 41)
    y = np.linspace(-1, 3, 33)
    XX, YY = np.meshgrid(x, y)
    Z = -((1 - XX) ** 2) - 5 * (YY - XX**2) ** 2
    i, j = np.unravel_index(np.argmax(Z), Z.shape)
    return x[j], y[i], np.multiply.outer(x[:3], y[:3]), np.add.reduce(Z, axis=0)


# -- learning -------------------------------------------------------------------------------------------


@exact
def softmax_cross_entropy(np: Any) -> Any:
    logits = np.asarray(X2[:10]) * 3
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    loss = -np.log(p[np.arange(10), labels]).mean()
    return p, loss, (p.argmax(1) == labels).mean()


@exact
def logistic_regression(np: Any) -> Any:
    X, y = np.asarray(X2), (np.asarray(Y2) > 0).astype(float)
    w = np.zeros(3)
    for _ in range(50):
        p = 1 / (1 + np.exp(-(X @ w)))
        w -= 0.5 * X.T @ (p - y) / len(y)
    return w, ((X @ w > 0) == (y == 1)).mean()


@exact
def small_mlp(np: Any) -> Any:
    X, y = np.asarray(X2), np.asarray(Y2)[:, None]
    W1 = np.asarray(DATA_W1)
    W2 = np.asarray(DATA_W2)
    losses = []
    for _ in range(25):
        h = np.tanh(X @ W1)
        out = h @ W2
        err = out - y
        losses.append(float((err**2).mean()))
        gW2 = h.T @ err * (2 / len(X))
        gh = err @ W2.T * (1 - h**2)
        gW1 = X.T @ gh * (2 / len(X))
        W1 = W1 - 0.05 * gW1
        W2 = W2 - 0.05 * gW2
    return np.array(losses), W1


DATA_W1 = DATA.standard_normal((3, 8)) * 0.5
DATA_W2 = DATA.standard_normal((8, 1)) * 0.5


@exact
def einsum_and_products(np: Any) -> Any:
    A, B = np.asarray(X2[:4]), np.asarray(X2[4:8])
    return np.einsum("ij,kj->ik", A, B), np.kron(A[:2, :2], np.eye(2)), np.outer(A[0], B[0]), np.tensordot(A, B, axes=([1], [1]))


# -- running them --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXACT))
def test_program_gives_numpys_answer(name: str) -> None:
    check_same_answer(EXACT[name], name)


def test_there_are_at_least_thirty_programs() -> None:
    assert len(EXACT) >= 30  # and the random ones in test_numpy_programs_random.py
