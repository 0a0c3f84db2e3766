"""NumPy's interp, vander, polyval, polyfit, gradient and insert, against NumPy (float64: to the bit where
NumPy's arithmetic is followed step by step)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import autopar as ap

rng = np.random.default_rng(11)


def _same(got: Any, want: Any, rtol: float = 0.0) -> None:
    g, w = got.numpy(), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True)


def test_interp_matches_numpy_bit_for_bit() -> None:
    xp = np.sort(rng.random(12))
    fp = rng.standard_normal(12)
    x = np.r_[rng.random(40) * 1.4 - 0.2, xp, np.nan, -np.inf, np.inf]
    _same(ap.interp(ap.asarray(x), ap.asarray(xp), ap.asarray(fp)), np.interp(x, xp, fp))
    _same(ap.interp(ap.asarray(x), ap.asarray(xp), ap.asarray(fp), left=-9.0, right=9),
          np.interp(x, xp, fp, left=-9.0, right=9))  # fmt: skip
    _same(ap.interp(ap.asarray(x[:5]), ap.asarray(xp[:1]), ap.asarray(fp[:1])), np.interp(x[:5], xp[:1], fp[:1]))
    with pytest.raises(ValueError, match="period= is not supported"):
        ap.interp(ap.asarray(x), ap.asarray(xp), ap.asarray(fp), period=1.0)
    with pytest.raises(ValueError, match="xp and fp must be 1-D of the same non-zero length"):
        ap.interp(ap.asarray(x), ap.asarray(xp), ap.asarray(fp[:3]))


def test_vander_polyval_polyfit() -> None:
    x = rng.standard_normal(7)
    for n, inc in ((None, False), (3, True), (5, False)):
        _same(ap.vander(ap.asarray(x), n, increasing=inc), np.vander(x, n, increasing=inc))
    p = [1.5, -2.0, 0.25, 3.0]
    _same(ap.polyval(ap.asarray(p), ap.asarray(x)), np.polyval(p, x))
    t = np.linspace(0, 3, 30)
    y = np.sin(t) + 0.05 * rng.standard_normal(30)
    for deg in (1, 3, 5):
        _same(ap.polyfit(ap.asarray(t), ap.asarray(y), deg), np.polyfit(t, y, deg), rtol=1e-9)
    two = np.c_[y, 2 * y]
    _same(ap.polyfit(ap.asarray(t), ap.asarray(two), 2), np.polyfit(t, two, 2), rtol=1e-9)
    w = rng.random(30)
    _same(ap.polyfit(ap.asarray(t), ap.asarray(y), 2, w=ap.asarray(w)), np.polyfit(t, y, 2, w=w), rtol=1e-9)
    c, res, rank, sv, rcond = ap.polyfit(ap.asarray(t), ap.asarray(y), 2, full=True)
    wc, wres, wrank, wsv, wrcond = np.polyfit(t, y, 2, full=True)
    _same(res, wres, rtol=1e-9)
    assert rank == wrank and rcond == wrcond


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(edge_order: int) -> None:
    f = rng.standard_normal((6, 7))
    for got, want in zip(ap.gradient(ap.asarray(f), edge_order=edge_order), np.gradient(f, edge_order=edge_order)):
        _same(got, want)
    for got, want in zip(ap.gradient(ap.asarray(f), 0.5, 2.0, edge_order=edge_order),
                         np.gradient(f, 0.5, 2.0, edge_order=edge_order)):  # fmt: skip
        _same(got, want)
    coords = np.cumsum(rng.random(7))
    _same(ap.gradient(ap.asarray(f), coords, axis=1, edge_order=edge_order),
          np.gradient(f, coords, axis=1, edge_order=edge_order), rtol=1e-15)  # fmt: skip
    even = np.linspace(0, 1, 6)
    _same(ap.gradient(ap.asarray(f), even, axis=0, edge_order=edge_order), np.gradient(f, even, axis=0, edge_order=edge_order))
    _same(ap.gradient(ap.asarray([1, 2, 4, 7, 11])), np.gradient([1, 2, 4, 7, 11]))


@pytest.mark.parametrize("arr,obj,values,axis", [
    (np.arange(6.0), 2, 99.0, None), (np.arange(6.0), [1, 1, 3], [10.0, 20.0, 30.0], None),
    (np.arange(6.0), -1, [7.0, 8.0], None), (np.arange(6.0), slice(1, 4), 0.0, None),
    (np.arange(12).reshape(3, 4), 1, 5, 1), (np.arange(12).reshape(3, 4), 1, [1, 2, 3], 1),
    (np.arange(12).reshape(3, 4), [1, 3], [[7, 8, 9, 10]], 0), (np.arange(12).reshape(3, 4), [0, 2], [[1], [2], [3]], 1),
    (np.arange(12).reshape(3, 4), 2, 9, None),
])  # fmt: skip
def test_insert_matches_numpy(arr: Any, obj: Any, values: Any, axis: Any) -> None:
    _same(ap.insert(ap.asarray(arr), obj, values, axis=axis), np.insert(arr, obj, values, axis=axis))


def test_insert_errors_name_the_index() -> None:
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 3"):
        ap.insert(ap.asarray([1, 2, 3]), 9, 0)
