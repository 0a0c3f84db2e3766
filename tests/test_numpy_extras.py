"""NumPy names NumPy programs use: ufunc objects and their methods, histograms, convolve/correlate,
lexsort, ix_ -- each against NumPy as the oracle."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

import autopar as ap

rng = np.random.default_rng(7)
M = rng.standard_normal((4, 5))
MN = M.copy()
MN[1, 2] = np.nan
I = rng.integers(-5, 6, (3, 4))
B = rng.random((3, 4)) > 0.5


def _same(got: Any, want: Any, rtol: float = 1e-12, dtype: bool = True) -> None:
    g = got.numpy() if isinstance(got, ap.ndarray) else np.asarray(got)
    w = np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert g.dtype == w.dtype or not dtype, (g.dtype, w.dtype)
    np.testing.assert_allclose(g, w, rtol=rtol, equal_nan=True)


# -- ufunc objects -------------------------------------------------------------------------------


def test_ufuncs_are_callable_as_before_and_carry_numpy_attributes() -> None:
    x = ap.asarray(M)
    _same(ap.add(x, 1.0), M + 1.0)
    _same(ap.sqrt(ap.abs(x)), np.sqrt(np.abs(M)))
    assert isinstance(ap.add, ap.ufunc) and isinstance(ap.power, ap.ufunc) and isinstance(ap.absolute, ap.ufunc)
    assert (ap.add.nin, ap.add.nout, ap.add.identity) == (2, 1, 0) and ap.exp.nin == 1
    assert ap.multiply.identity == 1 and ap.maximum.identity is None and ap.add.__name__ == "add"
    assert repr(ap.add) == "<ufunc 'add'>" and pickle.loads(pickle.dumps(ap.maximum)) is ap.maximum
    assert not isinstance(ap.round, ap.ufunc)  # a plain function in NumPy too
    ufuncs = {n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)}
    served = {n for n in ufuncs if isinstance(getattr(ap, n, None), ap.ufunc)}
    # NumPy's ufuncs that are plain functions here (several results, or not in autopar)
    assert ufuncs - served <= {"divmod", "frexp", "modf", "matmul", "vecdot", "matvec", "vecmat", "isnat",
                               "spacing", "bitwise_count"}, ufuncs - served  # fmt: skip


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and",
                                  "logical_or", "logical_xor"])  # fmt: skip
@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
def test_reduce_matches_numpy(name: str, axis: Any) -> None:
    data = {"fmax": MN, "fmin": MN, "logical_and": B, "logical_or": B, "logical_xor": B}.get(name, M)
    _same(getattr(ap, name).reduce(ap.asarray(data), axis=axis), getattr(np, name).reduce(data, axis=axis))


def test_reduce_options_and_int_promotion() -> None:
    i32 = I.astype(np.int32)
    _same(ap.add.reduce(ap.asarray(i32)), np.add.reduce(i32))  # int64, NumPy's
    _same(ap.add.reduce(ap.asarray(M), axis=1, keepdims=True), np.add.reduce(M, axis=1, keepdims=True))
    _same(ap.add.reduce(ap.asarray(M), initial=10.0), np.add.reduce(M, initial=10.0))
    _same(ap.maximum.reduce(ap.asarray(M), axis=1, initial=0.5), np.maximum.reduce(M, axis=1, initial=0.5))
    _same(ap.maximum.reduce(ap.asarray(np.zeros((0, 3))), axis=0, initial=-1.0),
          np.maximum.reduce(np.zeros((0, 3)), axis=0, initial=-1.0))  # fmt: skip
    _same(ap.multiply.reduce(ap.asarray(I), dtype="float64"), np.multiply.reduce(I, dtype=np.float64))
    out = ap.zeros(5, dtype="float64")
    assert ap.add.reduce(ap.asarray(M), out=out) is out
    _same(out, M.sum(0))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_accumulate_matches_numpy(name: str, axis: int) -> None:
    data = {"fmax": MN, "fmin": MN, "maximum": MN, "logical_and": B, "logical_or": B}.get(name, M)
    _same(getattr(ap, name).accumulate(ap.asarray(data), axis=axis), getattr(np, name).accumulate(data, axis=axis))
    _same(getattr(ap, name).accumulate(ap.asarray(I)), getattr(np, name).accumulate(I))


def test_accumulate_running_max_drawdown_and_dtypes() -> None:
    prices = np.cumprod(1 + 0.01 * rng.standard_normal(200))
    peak = ap.maximum.accumulate(ap.asarray(prices))
    _same(peak, np.maximum.accumulate(prices))
    _same((ap.asarray(prices) / peak - 1).min(), (prices / np.maximum.accumulate(prices) - 1).min())
    i32 = I.astype(np.int32)
    _same(ap.add.accumulate(ap.asarray(i32)), np.add.accumulate(i32))  # int64
    _same(ap.maximum.accumulate(ap.asarray(i32)), np.maximum.accumulate(i32))  # int32


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum", "power", "greater", "hypot"])
def test_outer_matches_numpy(name: str) -> None:
    a, b = np.abs(M[0]) + 0.5, np.abs(M[:2, :3]) + 0.5
    _same(getattr(ap, name).outer(ap.asarray(a), ap.asarray(b)), getattr(np, name).outer(a, b))
    # lists of Python floats: float32 under autopar's deep-learning default (float64 in autopar.numpy)
    _same(getattr(ap, name).outer([1.0, 2.0], [3.0, 4.0, 5.0]), getattr(np, name).outer([1.0, 2.0], [3.0, 4.0, 5.0]),
          rtol=1e-6, dtype=False)  # fmt: skip


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("key", [[0, 0, 2, 2, 2], np.array([3, 1, 3]), 2, slice(1, 4), ([0, 0, 1], [2, 2, 3]),
                                 (slice(None), [1, 1]), (slice(None, None, -1), 0)])  # fmt: skip
def test_at_applies_repeated_indices_each_time(name: str, key: Any) -> None:
    want = np.arange(20.0).reshape(4, 5) / 3 + 1
    got = ap.asarray(want.copy())
    picked = want[key].shape
    values = rng.standard_normal(picked) + 2 if picked else 1.5
    getattr(np, name).at(want, key, values)
    assert getattr(ap, name).at(got, key, values if np.ndim(values) == 0 else ap.asarray(values)) is None
    _same(got, want)


def test_add_at_scatter_sums_like_numpy() -> None:
    idx = rng.integers(0, 10, 1000)
    w = rng.random(1000)
    want = np.zeros(10)
    np.add.at(want, idx, w)
    got = ap.zeros(10, dtype="float64")
    ap.add.at(got, ap.asarray(idx), ap.asarray(w))
    _same(got, want, rtol=1e-12)
    counts = ap.zeros(10, dtype="int64")
    ap.add.at(counts, idx, 1)
    _same(counts, np.bincount(idx, minlength=10))
    view = ap.zeros((3, 10), dtype="int64")
    ap.add.at(view[1], idx, 1)  # through a view: only row 1 changes
    _same(view, np.stack([np.zeros(10, int), np.bincount(idx, minlength=10), np.zeros(10, int)]))


def test_unsupported_methods_name_the_method_and_what_works() -> None:
    x = ap.asarray(M)
    with pytest.raises(TypeError, match=r"subtract\.reduce is not supported; reduce works for add"):
        ap.subtract.reduce(x)
    with pytest.raises(TypeError, match=r"exp\.accumulate: accumulate needs a binary ufunc"):
        ap.exp.accumulate(x)
    with pytest.raises(TypeError, match=r"divide\.at is not supported; at works for add"):
        ap.divide.at(x, [0], 1.0)
    with pytest.raises(TypeError, match=r"add\.at: a must be an autopar array"):
        ap.add.at(M, [0], 1.0)
    with pytest.raises(TypeError, match=r"add\.at: cannot store a float(32|64) result in a int64 array"):
        ap.add.at(ap.zeros(3, dtype="int64"), [0], 1.5)
    with pytest.raises(TypeError, match=r"where= is not supported"):
        ap.add.reduce(x, where=x > 0)


# -- histograms --------------------------------------------------------------------------------------

DATA = rng.standard_normal(500)
WEIGHTS = rng.random(500)


@pytest.mark.parametrize("bins", [10, 7, [-3.0, -1.0, 0.0, 0.5, 3.0], np.linspace(-2, 2, 9)])
@pytest.mark.parametrize("range_", [None, (-2.0, 1.5)])
@pytest.mark.parametrize("density", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_matches_numpy(bins: Any, range_: Any, density: bool, weighted: bool) -> None:
    w = WEIGHTS if weighted else None
    want, want_edges = np.histogram(DATA, bins=bins, range=range_, density=density, weights=w)
    got, edges = ap.histogram(ap.asarray(DATA), bins=bins, range=range_, density=density,
                              weights=None if w is None else ap.asarray(w))  # fmt: skip
    _same(got, want)
    assert (edges.numpy() == want_edges).all()  # NumPy's edges to the bit


@pytest.mark.parametrize("data", [np.array([1, 2, 2, 3, 3, 3]), np.array([0.5, 1.2, 2.7, 3.0])])
@pytest.mark.parametrize("bins", [[1, 2, 3], [0.5, 2.5, 3.0], np.array([1, 2, 3], dtype=np.int32)])
def test_histogram_edges_keep_their_dtype(data: Any, bins: Any) -> None:
    for density in (False, True):
        for got, want in zip(ap.histogram(ap.asarray(data), bins=bins, density=density),
                             np.histogram(data, bins=bins, density=density)):  # fmt: skip
            _same(got, want)


def test_histogram_edge_cases() -> None:
    ints = rng.integers(0, 10, 300)
    for data, bins in [(ints, 10), (ints, 3), (np.full(5, 2.0), 4), (np.arange(10.0), 10), (np.array([0.1] * 3 + [0.3]), 2)]:
        want, we = np.histogram(data, bins)
        got, ge = ap.histogram(ap.asarray(data), bins)
        _same(got, want)
        _same(ge, we, rtol=0)
    _same(ap.histogram_bin_edges(ap.asarray(DATA), 5), np.histogram_bin_edges(DATA, 5), rtol=0)
    with pytest.raises(ValueError, match="bins='auto': estimators by name are not supported"):
        ap.histogram(ap.asarray(DATA), "auto")
    with pytest.raises(ValueError, match="max must be larger than min"):
        ap.histogram(ap.asarray(DATA), 5, range=(2, 1))
    with pytest.raises(ValueError, match="bins must increase monotonically"):
        ap.histogram(ap.asarray(DATA), [0, 2, 1])


def test_histogram2d_and_dd_match_numpy() -> None:
    x, y = DATA, rng.standard_normal(500)
    for bins in (5, (4, 6), [np.linspace(-3, 3, 5), np.linspace(-2, 2, 4)]):
        want = np.histogram2d(x, y, bins=bins)
        got = ap.histogram2d(ap.asarray(x), ap.asarray(y), bins=bins)
        for g, w in zip(got, want):
            _same(g, w)
    want = np.histogram2d(x, y, bins=4, range=[(-1, 1), (-2, 2)], density=True, weights=WEIGHTS)
    got = ap.histogram2d(ap.asarray(x), ap.asarray(y), bins=4, range=[(-1, 1), (-2, 2)], density=True,
                         weights=ap.asarray(WEIGHTS))  # fmt: skip
    _same(got[0], want[0])
    sample = np.stack([x, y, x * y], axis=1)
    hw, ew = np.histogramdd(sample, bins=(3, 4, 5))
    hg, eg = ap.histogramdd(ap.asarray(sample), bins=(3, 4, 5))
    _same(hg, hw)
    for g, w in zip(eg, ew):
        _same(g, w, rtol=0)


# -- convolve, correlate ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(7, 3), (3, 7), (6, 4), (4, 6), (5, 5), (1, 4), (8, 1)])
def test_convolve_and_correlate_match_numpy(mode: str, n: int, m: int) -> None:
    a, v = rng.standard_normal(n), rng.standard_normal(m)
    _same(ap.convolve(ap.asarray(a), ap.asarray(v), mode), np.convolve(a, v, mode))
    _same(ap.correlate(ap.asarray(a), ap.asarray(v), mode), np.correlate(a, v, mode))
    ai, vi = rng.integers(-9, 9, n), rng.integers(-9, 9, m)
    _same(ap.convolve(ap.asarray(ai), ap.asarray(vi), mode), np.convolve(ai, vi, mode))
    ac, vc = a + 1j * rng.standard_normal(n), v - 2j
    _same(ap.correlate(ap.asarray(ac), ap.asarray(vc), mode), np.correlate(ac, vc, mode))


def test_convolve_across_the_kernels_blocks() -> None:
    a, v = rng.standard_normal(40_000), rng.standard_normal(33)  # several blocks of outputs on a CPU
    for mode in ("full", "same", "valid"):
        _same(ap.convolve(ap.asarray(a), ap.asarray(v), mode), np.convolve(a, v, mode), rtol=1e-9)
    ints = rng.integers(-9, 9, 40_000)
    _same(ap.convolve(ap.asarray(ints), ap.asarray(ints[:20])), np.convolve(ints, ints[:20]))


def test_convolve_defaults_and_errors() -> None:
    _same(ap.convolve([1, 2, 3], [0, 1, 0.5]), np.convolve([1, 2, 3], [0, 1, 0.5]), dtype=False)
    _same(ap.correlate([1.0, 2.0, 3.0], [0.0, 1.0, 0.5]), np.correlate([1.0, 2.0, 3.0], [0.0, 1.0, 0.5]), dtype=False)
    _same(ap.convolve([1, 2, 3], [1, 1]), np.convolve([1, 2, 3], [1, 1]))  # integers stay integers
    with pytest.raises(ValueError, match="mode='circular'; expected one of full, same, valid"):
        ap.convolve([1.0], [1.0], "circular")
    with pytest.raises(ValueError, match="v cannot be empty"):
        ap.convolve([1.0], [])


# -- lexsort, ix_ ------------------------------------------------------------------------------------


def test_lexsort_matches_numpy_ties_included() -> None:
    surname = rng.integers(0, 4, 60)
    first = rng.integers(0, 3, 60)
    score = rng.random(60).round(1)
    flags = rng.random(60) > 0.5
    for keys in ([score, first, surname], [surname], [flags, first], [first, score]):
        _same(ap.lexsort([ap.asarray(k) for k in keys]), np.lexsort(keys))
    table = np.stack([first, surname])
    _same(ap.lexsort(ap.asarray(table)), np.lexsort(table))
    grid = rng.integers(0, 3, (2, 4, 6))
    _same(ap.lexsort([ap.asarray(grid[0]), ap.asarray(grid[1])], axis=0), np.lexsort([grid[0], grid[1]], axis=0))
    with pytest.raises(ValueError, match="all keys need the same shape"):
        ap.lexsort([ap.asarray(first), ap.asarray(first[:3])])


def test_ix_selects_the_sub_grid() -> None:
    m = np.arange(30).reshape(5, 6)
    for args in (([0, 2], [1, 3, 5]), (np.array([True, False, True, True, False]), [0, 5]), ([4], [2])):
        got = ap.asarray(m)[ap.ix_(*args)]
        _same(got, m[np.ix_(*args)])
    rows, cols = ap.ix_([0, 1], [2, 3, 4])
    assert rows.shape == (2, 1) and cols.shape == (1, 3)
    with pytest.raises(ValueError, match="each must be 1-D"):
        ap.ix_(np.ones((2, 2), dtype=int))


@pytest.mark.parametrize("bins", [[0.0, 1.0, 2.5, 4.0, 10.0], [10.0, 4.0, 2.5, 1.0, 0.0], [1.0, 1.0, 3.0]])
@pytest.mark.parametrize("right", [False, True])
def test_digitize_increasing_and_decreasing_bins(bins: list[float], right: bool) -> None:
    x = np.array([0.2, 6.4, 3.0, 1.0, 1.6, 10.0, -1.0, 2.5])
    _same(ap.digitize(ap.asarray(x), bins, right=right), np.digitize(x, bins, right=right))
    with pytest.raises(ValueError, match="monotonically increasing or decreasing"):
        ap.digitize(ap.asarray(x), [0.0, 2.0, 1.0])


def test_autopar_numpy_serves_ufuncs_in_numpy_mode() -> None:
    import autopar.numpy as anp

    assert isinstance(anp.add, anp.ufunc) and anp.ufunc is ap.ufunc and repr(anp.maximum) == "<ufunc 'maximum'>"
    assert pickle.loads(pickle.dumps(anp.add)) is anp.add
    # Python floats are float64 in NumPy mode, in the call and in every method; float32 in autopar
    assert anp.add(1.0, anp.arange(3)).dtype == anp.float64 and ap.add(1.0, ap.arange(3)).dtype == ap.float32
    assert anp.multiply.outer([1.0, 2.0], [3.0]).dtype == anp.float64 and ap.multiply.outer([1.0], [3.0]).dtype == ap.float32
    assert anp.add.reduce([0.5, 1.25, -3.0, 1e-3]).item() == np.add.reduce([0.5, 1.25, -3.0, 1e-3])
    assert anp.maximum.accumulate([1.0, 3.0, 2.0]).dtype == anp.float64
    x = anp.zeros(3)
    anp.add.at(x, [0, 0], 0.1)
    assert x.tolist() == [0.2, 0.0, 0.0]


def test_generators_of_autopar_numpy_draw_float64_wherever_called() -> None:
    import autopar.numpy as anp

    rng = anp.random.default_rng(0)
    assert rng.random(2).dtype == anp.float64 and rng.normal(size=2).dtype == anp.float64
    assert rng.spawn(1)[0].standard_normal(2).dtype == anp.float64
    assert ap.random.default_rng(0).random(2).dtype == ap.float32


def test_numpy_array_methods_and_attributes() -> None:
    want = np.arange(12.0).reshape(3, 4)
    got = ap.asarray(want)
    assert (got.item(5), got.item(1, 2), got.item((2, 3))) == (want.item(5), want.item(1, 2), want.item((2, 3)))
    assert (got.itemsize, got.nbytes, got.strides) == (want.itemsize, want.nbytes, want.strides)
    assert ap.ones(3, dtype="int16").itemsize == 2 and ap.ones((2, 5), dtype="int16").strides == (10, 2)
    q, r = divmod(ap.arange(-3, 4), 2)
    wq, wr = divmod(np.arange(-3, 4), 2)
    _same(q, wq)
    _same(r, wr)
    _same(divmod(7, ap.arange(1, 4))[0], divmod(7, np.arange(1, 4))[0])
    assert 5.0 in got and 99 not in got
    assert got.tobytes() == want.tobytes()
    _same(got[0].searchsorted(ap.asarray([2.5, 0.0]), side="right"), want[0].searchsorted([2.5, 0.0], side="right"))
    _same(got.compress([True, False, True], axis=0), want.compress([True, False, True], axis=0))
    y, wy = ap.asarray([3.0, 1.0, 2.0, 5.0, 4.0]), np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    assert y.partition(2) is None
    wy.partition(2)
    assert y[2].item() == wy[2] and sorted(y.tolist()) == sorted(wy.tolist())
    assert y.argpartition(1)[1].item() == np.argpartition(y.numpy(), 1)[1]
    z, wz = ap.zeros(4), np.zeros(4)
    z.put([0, 2], [1.0, 2.0])
    wz.put([0, 2], [1.0, 2.0])
    assert z.tolist() == wz.tolist()
    with pytest.raises(IndexError, match="item: index 12 is out of bounds for size 12"):
        got.item(12)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float64])
def test_reduceat_and_at_match_numpy_for_every_dtype(name: str, dtype: Any) -> None:
    a = (np.arange(8) % 3).astype(dtype)
    for idx in ([0, 4, 1, 5], [0, 4, 4, 7], [3], list(range(8))):
        _same(getattr(ap, name).reduceat(ap.asarray(a), idx), getattr(np, name).reduceat(a, idx))
    m = np.arange(12.0).reshape(3, 4).astype(dtype)
    _same(getattr(ap, name).reduceat(ap.asarray(m), [0, 2], axis=1), getattr(np, name).reduceat(m, [0, 2], axis=1))
    want, got = np.zeros(4, dtype=dtype), ap.zeros(4, dtype=np.dtype(dtype).name)
    getattr(np, name).at(want, [0, 0, 2], np.ones(3, dtype=dtype))
    getattr(ap, name).at(got, [0, 0, 2], ap.asarray(np.ones(3, dtype=dtype)))
    _same(got, want)


def test_ndindex_and_ndenumerate() -> None:
    assert list(ap.ndindex(2, 3)) == list(np.ndindex(2, 3)) and list(ap.ndindex((2,))) == list(np.ndindex((2,)))
    m = np.array([[1.5, 2.0], [3.0, 4.0]])
    assert [(i, float(v)) for i, v in ap.ndenumerate(ap.asarray(m))] == [(i, float(v)) for i, v in np.ndenumerate(m)]


@pytest.mark.parametrize("transposed", [False, True])
def test_flat_reads_and_writes_the_array(transposed: bool) -> None:
    want = np.arange(6.0).reshape(2, 3)
    got = ap.asarray(want)
    if transposed:  # a view whose flattening is a copy: writes must still reach the array
        want, got = want.T, got.T
    assert isinstance(got.flat, ap.flatiter) and len(got.flat) == len(want.flat)
    assert got.flat[4].item() == want.flat[4]
    _same(got.flat[::2], want.flat[::2])
    _same(got.flat[[0, 5]], want.flat[[0, 5]])
    want.flat[::2] = -1.0
    got.flat[::2] = -1.0
    _same(got, want)
    assert list(got.flat) == list(want.flat)


def test_broadcast_object() -> None:
    a, b = np.arange(3.0), np.arange(2.0)[:, None]
    ours, theirs = ap.broadcast(ap.asarray(a), ap.asarray(b)), np.broadcast(a, b)
    assert (ours.shape, ours.ndim, ours.size, ours.numiter) == (theirs.shape, theirs.ndim, theirs.size, theirs.numiter)
    assert [tuple(map(float, t)) for t in ours] == [tuple(map(float, t)) for t in theirs]
