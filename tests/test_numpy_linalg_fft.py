"""NumPy's linalg beyond the standard (lstsq, cond, eig/eigvals, multi_dot), the 2-D FFTs and cov/corrcoef's
options, against NumPy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import autopar as ap

rng = np.random.default_rng(17)


def _same(got: Any, want: Any, rtol: float = 1e-12) -> None:
    g = got.numpy() if isinstance(got, ap.ndarray) else np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=rtol, equal_nan=True)


@pytest.mark.parametrize("shape,cols", [((20, 4), None), ((20, 4), 3), ((3, 5), None), ((6, 6), 2)])
def test_lstsq_gives_numpys_four_tuple(shape: tuple[int, int], cols: Any) -> None:
    a = rng.standard_normal(shape)
    b = rng.standard_normal(shape[0] if cols is None else (shape[0], cols))
    x, res, rank, s = ap.linalg.lstsq(ap.asarray(a), ap.asarray(b))
    wx, wres, wrank, ws = np.linalg.lstsq(a, b)
    _same(x, wx, rtol=1e-10)
    _same(res, wres, rtol=1e-10)
    _same(s, ws, rtol=1e-12)
    assert type(rank) is int and rank == wrank


def test_lstsq_rank_deficient_and_rcond() -> None:
    a = rng.standard_normal((10, 3))
    a = np.c_[a, a[:, 0] + a[:, 1]]  # rank 3 of 4: no residuals, the minimum-norm solution
    b = rng.standard_normal(10)
    x, res, rank, s = ap.linalg.lstsq(ap.asarray(a), ap.asarray(b))
    wx, wres, wrank, ws = np.linalg.lstsq(a, b)
    assert rank == wrank == 3 and res.shape == wres.shape == (0,)
    np.testing.assert_allclose(x.numpy(), wx, atol=1e-12)
    assert ap.linalg.lstsq(ap.asarray(a), ap.asarray(b), rcond=0.9)[2] == np.linalg.lstsq(a, b, rcond=0.9)[2]
    with pytest.raises(ValueError, match="do not align"):
        ap.linalg.lstsq(ap.asarray(a), ap.asarray(b[:4]))


@pytest.mark.parametrize("p", [None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"])
def test_cond_matches_numpy(p: Any) -> None:
    m = rng.standard_normal((3, 4, 4))
    _same(ap.linalg.cond(ap.asarray(m), p), np.linalg.cond(m, p), rtol=1e-10)
    if p in (None, 2, 1, np.inf, "fro"):  # a singular matrix: inf (or huge, by rounding), not an error
        singular = np.array([[1.0, 2.0], [2.0, 4.0]])
        with np.errstate(all="ignore"):
            want = np.linalg.cond(singular, p)
        assert ap.linalg.cond(ap.asarray(singular), p).item() >= 1e15 and want >= 1e15


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2"])
def test_fft2_family_matches_numpy(name: str) -> None:
    x = rng.standard_normal((2, 6, 8))
    _same(getattr(ap.fft, name)(ap.asarray(x)), getattr(np.fft, name)(x), rtol=1e-10)
    _same(getattr(ap.fft, name)(ap.asarray(x), s=(4, 4), axes=(0, 2), norm="ortho"),
          getattr(np.fft, name)(x, s=(4, 4), axes=(0, 2), norm="ortho"), rtol=1e-10)  # fmt: skip
    spectrum = np.fft.rfft2(x)
    _same(ap.fft.irfft2(ap.asarray(spectrum), s=(6, 8)), np.fft.irfft2(spectrum, s=(6, 8)), rtol=1e-10)


def test_cov_and_corrcoef_options_match_numpy() -> None:
    x, y = rng.standard_normal((3, 12)), rng.standard_normal((2, 12))
    fw, aw = rng.integers(1, 4, 12), rng.random(12)
    for kw in ({}, {"bias": True}, {"ddof": 3}, {"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw, "ddof": 0}):
        got = ap.cov(ap.asarray(x), **{k: ap.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()})
        _same(got, np.cov(x, **kw), rtol=1e-10)
    _same(ap.cov(ap.asarray(x.T), rowvar=False), np.cov(x.T, rowvar=False), rtol=1e-10)
    _same(ap.cov(ap.asarray(x), ap.asarray(y)), np.cov(x, y), rtol=1e-10)
    _same(ap.cov(ap.asarray(x[0])), np.cov(x[0]), rtol=1e-10)
    _same(ap.corrcoef(ap.asarray(x[0]), ap.asarray(y[1])), np.corrcoef(x[0], y[1]), rtol=1e-10)
    _same(ap.corrcoef(ap.asarray(x.T), rowvar=False), np.corrcoef(x.T, rowvar=False), rtol=1e-10)
    with pytest.raises(ValueError, match="fweights of shape \\(3,\\) must be 1-D with one weight per observation"):
        ap.cov(ap.asarray(x), fweights=ap.asarray(fw[:3]))


def test_eig_and_eigvals_follow_numpys_real_or_complex_rule() -> None:
    general = rng.standard_normal((4, 4))  # complex eigenvalues (with this seed)
    symmetric = general + general.T  # real ones
    markov = np.array([[0.9, 0.1], [0.5, 0.5]]).T
    for m in (general, symmetric, markov, general + 1j * symmetric):
        w, v = np.linalg.eig(m)
        got = ap.linalg.eig(ap.asarray(m))
        assert got.eigenvalues.dtype == w.dtype and got.eigenvectors.dtype == v.dtype, m
        np.testing.assert_allclose(got.eigenvalues.numpy(), w, rtol=1e-10)
        np.testing.assert_allclose(np.abs(got.eigenvectors.numpy()), np.abs(v), rtol=1e-10, atol=1e-12)
        _same(ap.linalg.eigvals(ap.asarray(m)), np.linalg.eigvals(m), rtol=1e-10)
    assert np.iscomplexobj(np.linalg.eig(general).eigenvalues)
    with pytest.raises(ValueError, match="needs square matrices"):
        ap.linalg.eig(ap.asarray(general[:3]))


@pytest.mark.parametrize("shapes", [[(3, 4), (4, 5)], [(10, 3), (3, 20), (20, 2)], [(5, 30), (30, 2), (2, 40), (40, 3)],
                                    [(4,), (4, 6), (6,)], [(4,), (4, 6), (6, 3)]])  # fmt: skip
def test_multi_dot_matches_numpy(shapes: list[tuple[int, ...]]) -> None:
    arrays = [rng.standard_normal(s) for s in shapes]
    _same(ap.linalg.multi_dot([ap.asarray(a) for a in arrays]), np.linalg.multi_dot(arrays), rtol=1e-12)
