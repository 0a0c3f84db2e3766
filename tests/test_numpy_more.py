"""The rest of NumPy's names in autopar.numpy, against NumPy: window functions, polynomial arithmetic and
poly1d, resize/block/trim_zeros/choose/put_along_axis/putmask/place/mask_indices, unwrap, sort_complex,
real_if_close, asarray_chkfinite, spacing, bitwise_count, packbits/unpackbits, einsum_path, tensorinv/solve."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import autopar.numpy as anp

rng = np.random.default_rng(21)


def _same(got: Any, want: Any, rtol: float = 1e-12) -> None:
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=1e-15, equal_nan=True)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("m", [0, 1, 2, 7, 12])
def test_windows(name: str, m: int) -> None:
    _same(getattr(anp, name)(m), getattr(np, name)(m))


def test_kaiser() -> None:
    for m, beta in ((1, 14.0), (5, 0.0), (10, 8.6)):
        _same(anp.kaiser(m, beta), np.kaiser(m, beta))


def test_polynomial_arithmetic() -> None:
    p, q = [1.0, -6.0, 11.0, -6.0], [2.0, 1.0]
    for name in ("polyadd", "polysub", "polymul"):
        _same(getattr(anp, name)(p, q), getattr(np, name)(p, q))
    _same(anp.polyder(p), np.polyder(p))
    _same(anp.polyder(p, 2), np.polyder(p, 2))
    _same(anp.polyint(p), np.polyint(p))
    _same(anp.polyint(p, 2, [1.0, 2.0]), np.polyint(p, 2, [1.0, 2.0]))
    for divisor in (q, [1.0, -1.0]):
        for got, want in zip(anp.polydiv(p, divisor), np.polydiv(p, divisor)):
            _same(got, want)
    _same(np.sort_complex(anp.roots(p)), np.sort_complex(np.roots(p)))
    _same(np.sort_complex(anp.roots([1.0, 0.0, 1.0])), np.sort_complex(np.roots([1.0, 0.0, 1.0])))
    _same(anp.roots([0, 1, -3, 0, 0]), np.roots([0, 1, -3, 0, 0]))
    _same(anp.poly([1.0, 2.0, 3.0]), np.poly([1.0, 2.0, 3.0]))
    _same(anp.poly(anp.asarray([1j, -1j])), np.poly([1j, -1j]))  # conjugate pairs: real coefficients
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    _same(anp.poly(m), np.poly(m))


def test_poly1d_as_numpy() -> None:
    x = np.arange(6.0)
    ours = anp.poly1d(anp.polyfit(x, x**2 - 2 * x + 3, 2))  # no coefficient near 0: rtol compares them
    theirs = np.poly1d(np.polyfit(x, x**2 - 2 * x + 3, 2))
    _same(ours.coeffs, theirs.coeffs, rtol=1e-9)
    assert ours.order == theirs.order == 2 and len(ours) == 2
    _same(ours(anp.asarray(x)), theirs(x), rtol=1e-9)
    _same(ours.deriv().coeffs, theirs.deriv().coeffs, rtol=1e-9)
    _same(ours.integ(k=1.0).coeffs, theirs.integ(k=1.0).coeffs, rtol=1e-9)
    _same((ours * ours + 1 - ours).coeffs, (theirs * theirs + 1 - theirs).coeffs, rtol=1e-9)
    _same((ours**3).coeffs, (theirs**3).coeffs, rtol=1e-9)
    _same(np.sort(anp.poly1d([1.0, -3.0, 2.0]).roots), np.sort(np.poly1d([1.0, -3.0, 2.0]).roots))
    _same(anp.poly1d([1.0, 2.0], r=True).coeffs, np.poly1d([1.0, 2.0], r=True).coeffs)
    _same(anp.poly1d([0.0, 0.0, 3.0, 1.0]).coeffs, np.poly1d([0.0, 0.0, 3.0, 1.0]).coeffs)  # leading zeros go
    q, r = anp.poly1d([1.0, -6.0, 11.0, -6.0]) / anp.poly1d([1.0, -1.0])
    wq, wr = np.poly1d([1.0, -6.0, 11.0, -6.0]) / np.poly1d([1.0, -1.0])
    _same(q.coeffs, wq.coeffs)
    _same(r.coeffs, wr.coeffs)
    assert ours[2].item() == pytest.approx(theirs[2]) and anp.poly1d([1.0, 2.0]) == anp.poly1d([1.0, 2.0])
    _same(ours(ours).coeffs, theirs(theirs).coeffs, rtol=1e-9)


def test_arranging_functions() -> None:
    x = np.arange(6.0)
    _same(anp.resize(x, (4, 4)), np.resize(x, (4, 4)))
    _same(anp.resize(x, 3), np.resize(x, 3))
    a, b, c = np.ones((2, 2)), np.zeros((2, 3)), np.eye(1, 5)
    _same(anp.block([[a, b], [c]]), np.block([[a, b], [c]]))
    _same(anp.block([1.0, 2.0, 3.0]), np.block([1.0, 2.0, 3.0]))
    _same(anp.block([[1.0, 2.0], [3.0, 4.0]]), np.block([[1.0, 2.0], [3.0, 4.0]]))
    f = np.array([0, 0, 1, 2, 0, 3, 0, 0])
    for trim in ("fb", "f", "b"):
        _same(anp.trim_zeros(f, trim), np.trim_zeros(f, trim))
    choices = [np.arange(4) * 1, np.arange(4) * 10, np.arange(4) * 100]
    idx = np.array([0, 2, 1, 2])
    _same(anp.choose(idx, choices), np.choose(idx, choices))
    for mode in ("wrap", "clip"):
        _same(anp.choose(idx + 2, choices, mode=mode), np.choose(idx + 2, choices, mode=mode))
    with pytest.raises(ValueError, match="an index is outside"):
        anp.choose(idx + 2, choices)
    m = np.arange(12.0).reshape(3, 4)
    picks = np.argsort(-m, axis=1)[:, :2]
    for fn, args in ((np.put_along_axis, (picks, -1.0, 1)), (np.putmask, (m > 5, [7.0, 8.0])), (np.place, (m > 5, [7.0, 8.0, 9.0]))):
        want, got = m.copy(), anp.asarray(m)
        fn(want, *args)
        getattr(anp, fn.__name__)(got, *(anp.asarray(v) if isinstance(v, np.ndarray) else v for v in args))
        _same(got, want)
    for k in (0, 1):
        for g, w in zip(anp.mask_indices(3, anp.triu, k), np.mask_indices(3, np.triu, k)):
            _same(g, w)


def test_numeric_helpers() -> None:
    phase = np.cumsum(rng.uniform(-3, 3, 30)) % (2 * np.pi)
    _same(anp.unwrap(phase), np.unwrap(phase))
    _same(anp.unwrap(phase.reshape(5, 6), axis=0), np.unwrap(phase.reshape(5, 6), axis=0))
    _same(anp.unwrap(np.array([0, 1, 2, 3, 0, 1, 5, 9, 2]), period=5), np.unwrap(np.array([0, 1, 2, 3, 0, 1, 5, 9, 2]), period=5))
    z = np.array([3 + 1j, 1 - 2j, 1 + 1j, 2])
    _same(anp.sort_complex(z), np.sort_complex(z))
    _same(anp.sort_complex([5, 3, 6, 2, 1]), np.sort_complex([5, 3, 6, 2, 1]))
    for v in (np.array([2.1 + 4e-14j, 5.2 + 3e-15j]), np.array([2.1 + 4e-13j])):
        _same(anp.real_if_close(v), np.real_if_close(v))
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):
        anp.asarray_chkfinite([1.0, np.nan])
    _same(anp.asarray_chkfinite([1.0, 2.0]), np.asarray_chkfinite([1.0, 2.0]))
    assert not anp.isfortran(anp.asfortranarray(np.ones((2, 2)))) and anp.require([1, 2], "float64").dtype == anp.float64
    s = np.array([1.0, -1.0, 0.0, 1e10, np.inf, np.nan])
    _same(anp.spacing(s), np.spacing(s))
    ints = np.array([0, 1, 255, -1, -128, 2**40 + 3, -(2**62)])
    _same(anp.bitwise_count(ints), np.bitwise_count(ints))
    _same(anp.bitwise_count(np.arange(10, dtype=np.uint8)), np.bitwise_count(np.arange(10, dtype=np.uint8)))


def test_bit_packing_and_einsum_path() -> None:
    u = np.array([[2, 7], [23, 255]], dtype=np.uint8)
    for kw in ({}, {"axis": 1}, {"count": 5, "bitorder": "little"}, {"axis": 0, "count": 20}, {"count": -3}):
        _same(anp.unpackbits(u, **kw), np.unpackbits(u, **kw))
    b = np.array([[1, 0, 1], [0, 1, 1]])
    for kw in ({}, {"axis": 1}, {"axis": 0, "bitorder": "little"}):
        _same(anp.packbits(b, **kw), np.packbits(b, **kw))
    ops = (np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))
    assert anp.einsum_path("ij,jk,kl->il", *ops) == np.einsum_path("ij,jk,kl->il", *ops)


def test_tensorinv_and_tensorsolve() -> None:
    t = rng.standard_normal((4, 6, 8, 3))
    _same(anp.linalg.tensorinv(t, 2), np.linalg.tensorinv(t, 2), rtol=1e-9)
    a, b = rng.standard_normal((6, 4, 2, 3, 4)), rng.standard_normal((6, 4))
    _same(anp.linalg.tensorsolve(a, b), np.linalg.tensorsolve(a, b), rtol=1e-9)
    with pytest.raises(ValueError, match="square problem"):
        anp.linalg.tensorsolve(a[:, :, :1], b)


def test_classes_served_by_autopar_numpy_work_in_numpy_mode() -> None:
    import autopar as ap

    assert anp.poly1d([1.0, 2.0]).coeffs.dtype == anp.float64 and ap.poly1d([1.0, 2.0]).coeffs.dtype == ap.float32
    assert isinstance(anp.polyadd(anp.poly1d([1.0, 2.0]), [1.0]), anp.poly1d)
    rng = anp.random.default_rng(3)
    assert isinstance(rng, anp.random.Generator) and isinstance(rng, ap.random.Generator)
    assert isinstance(rng.spawn(1)[0], anp.random.Generator)
    assert anp.random.Generator(3).random(2).dtype == anp.float64


@pytest.mark.parametrize("key", [(1, 2.5, np.arange(3)), slice(0, 5), slice(0, 1, 5j), ("0,2", [1, 2], [3, 4]),
                                 (np.array([[1, 2]]), np.array([[3, 4]])), (np.array([1, 2]), 3)])  # fmt: skip
def test_r_(key: Any) -> None:
    _same(anp.r_[key], np.r_[key])


def test_c_mgrid_ogrid_s_index_exp() -> None:
    a, b = np.array([1, 2, 3]), np.array([4, 5, 6])
    _same(anp.c_[a, b], np.c_[a, b])
    _same(anp.c_[a[None], 0, 0, b[None]], np.c_[a[None], 0, 0, b[None]])
    for key in ((slice(0, 3), slice(0, 2)), slice(0, 1, 3j), slice(0, 5, 2), (slice(-1, 1, 5j), slice(0, 3))):
        _same(anp.mgrid[key], np.mgrid[key])
    for got, want in zip(anp.ogrid[0:3, 0:2], np.ogrid[0:3, 0:2]):
        _same(got, want)
    assert anp.s_[1:3, ::2] == np.s_[1:3, ::2] and anp.index_exp[2] == np.index_exp[2]
    import autopar as ap

    assert ap.r_[0.5, 1.5].dtype == ap.float32 and anp.r_[0.5, 1.5].dtype == anp.float64  # each namespace's mode


def test_functions_taking_functions() -> None:
    _same(anp.fromfunction(lambda i, j: i + j, (2, 3)), np.fromfunction(lambda i, j: i + j, (2, 3)))
    _same(anp.fromfunction(lambda i, j: i == j, (2, 2), dtype=int), np.fromfunction(lambda i, j: i == j, (2, 2), dtype=int))
    _same(anp.fromiter(iter(range(5)), float), np.fromiter(iter(range(5)), float))
    _same(anp.fromiter((x * x for x in range(9)), int, count=4), np.fromiter((x * x for x in range(9)), int, count=4))
    m = np.arange(24.0).reshape(2, 3, 4)
    for axis in (0, 1, 2):
        _same(anp.apply_along_axis(lambda v: v.max() - v.min(), axis, m), np.apply_along_axis(lambda v: v.max() - v.min(), axis, m))
        _same(anp.apply_along_axis(lambda v: v[::-1] * 2, axis, m), np.apply_along_axis(lambda v: v[::-1] * 2, axis, m))
    _same(anp.apply_along_axis(lambda v: v[:, None] * v, 1, m[0]), np.apply_along_axis(lambda v: np.outer(v, v), 1, m[0]))
    _same(anp.apply_over_axes(anp.sum, m, [0, 2]), np.apply_over_axes(np.sum, m, [0, 2]))
    x = np.linspace(-2.5, 2.5, 6)
    cases = [([x < 0, x >= 0], [-1, 1]), ([x < 0, x >= 0], [lambda v: -v, lambda v: v]),
             ([x < -1, x > 1], [lambda v: v**2, 7.0, lambda v: v * 0 + 3])]  # fmt: skip
    for conds, funcs in cases:
        _same(anp.piecewise(x, conds, funcs), np.piecewise(x, conds, funcs))
    ints = np.arange(5)
    _same(anp.piecewise(ints, ints > 2, [lambda v: v * 1.5, 0]), np.piecewise(ints, ints > 2, [lambda v: v * 1.5, 0]))
