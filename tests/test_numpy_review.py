"""A NumPy user's small programs under ``import autopar.numpy as np``, each compared with NumPy itself:
the cases a cold review found wrong, and the cases that pin the drop-in's rules (dtype defaults, ``out=``,
views, ``LinAlgError`` at the call, the plan cache's mode) so that breaking one of them fails a test."""

from __future__ import annotations

import numpy
import pytest

import autopar as ap
import autopar.numpy as np


def _same(got, want, exact: bool = False) -> None:  # type: ignore[no-untyped-def]
    """``got`` (autopar) has ``want``'s (NumPy's) dtype, shape and values (``exact``: bit for bit)."""
    ref = numpy.asarray(want)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert tuple(got.shape) == ref.shape
    if exact:
        numpy.testing.assert_array_equal(numpy.asarray(got), ref)
    else:
        numpy.testing.assert_allclose(numpy.asarray(got), ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("bins", [[3.0, 2.0, 1.0], [1.0, 2.0, 3.0], [2.0, 2.0, 1.0], [5.0]])
def test_digitize_with_bins_as_an_array_of_this_namespace(bins: list[float], right: bool) -> None:
    """Decreasing bins held in an autopar array are searched reversed, as NumPy does (no read)."""
    x = [0.5, 1.0, 2.5, 3.0, 9.0]
    want = numpy.digitize(numpy.array(x), numpy.array(bins), right=right)
    _same(np.digitize(np.array(x), np.array(bins), right=right), want)
    _same(np.digitize(np.array(x), bins, right=right), want)


@pytest.mark.parametrize("low, high", [(1.5, 3), (1, 3.5), (None, 2.5), (1, 3)])
def test_clip_of_an_integer_array_by_a_float_follows_numpy(low: object, high: object) -> None:
    """NumPy 2: clip(int array, 1.5, 3) is float64 (the bounds take part in promotion)."""
    want = numpy.clip(numpy.arange(5), low, high)
    _same(np.clip(np.arange(5), low, high), want)
    _same(np.arange(5).clip(low, high), want)
    assert ap.clip(ap.arange(5), 1, 3).dtype == ap.int64  # the standard's rule in autopar: x's dtype


def test_digitize_with_equal_bins_is_increasing_as_in_numpy() -> None:
    """bins [2, 2] are monotonic both ways; NumPy takes them as increasing."""
    x = [1.0, 2.0, 3.0]
    for right in (False, True):
        _same(np.digitize(np.array(x), np.array([2.0, 2.0]), right=right),
              numpy.digitize(numpy.array(x), numpy.array([2.0, 2.0]), right=right))  # fmt: skip


def test_where_with_out_keeps_outs_elements_where_the_mask_is_false() -> None:
    o, ref = np.full(4, -1.0), numpy.full(4, -1.0)
    mask = [True, False, True, False]
    r = np.add(np.arange(4.0), 10, out=o, where=np.array(mask))
    numpy.add(numpy.arange(4.0), 10, out=ref, where=numpy.array(mask))
    assert r is o
    _same(o, ref)


@pytest.mark.parametrize("call", [lambda: np.add(np.ones(2), 1), lambda: np.arange(3) / 2,
                                  lambda: np.arange(3) + 0.5, lambda: 1.5 * np.arange(3),
                                  lambda: np.sqrt(np.arange(3)), lambda: np.arange(3).mean()])  # fmt: skip
def test_a_plan_made_in_one_mode_is_not_used_in_the_other(call) -> None:  # type: ignore[no-untyped-def]
    """The same signature in autopar (float32) and then autopar.numpy (float64), and back: the plan cache and
    the dispatcher's lean paths key on the mode."""
    for _ in range(3):  # the lean paths apply from a signature's second call
        assert (ap.arange(3) / 2).dtype == ap.float32 and (ap.arange(3) + 0.5).dtype == ap.float32
        assert (1.5 * ap.arange(3)).dtype == ap.float32 and ap.sqrt(ap.arange(3)).dtype == ap.float32
        assert call().dtype == numpy.float64
    x = ap.ones(3, dtype=ap.float32)
    for _ in range(3):
        x += 1.0
        assert (x + 0.1).dtype == ap.float32


def test_the_last_number_a_plan_remembers_is_matched_by_identity() -> None:
    """x + 0.0 after x + (-0.0): equal numbers, different values (the sign of zero)."""
    x = np.array([-0.0, -0.0])
    zero, negative_zero = float("0.0"), float("-0.0")
    for _ in range(3):
        assert not numpy.signbit(numpy.asarray(x + zero)).any()
    for _ in range(3):
        assert numpy.signbit(numpy.asarray(x + negative_zero)).all()


def test_errstate_and_seterr_refuse_raise_and_call() -> None:
    for bad in ({"divide": "raise"}, {"all": "raise"}, {"invalid": "call"}):
        with pytest.raises(ValueError, match="isfinite"):
            np.seterr(**bad)
        with pytest.raises(ValueError, match="isfinite"):
            with np.errstate(**bad):
                pass
    with np.errstate(divide="ignore", invalid="warn"):
        assert numpy.isinf(numpy.asarray(np.array([1.0]) / 0)).all()


def test_an_error_from_inside_a_users_function_is_not_rewritten() -> None:
    """Only a refused NumPy argument of the call itself gets the table's message; a TypeError raised inside
    (here by the user's function, through apply_along_axis) passes as it was."""

    def helper(v):  # type: ignore[no-untyped-def]
        return v

    def f(v):  # type: ignore[no-untyped-def]
        return helper(v, out=None)

    with pytest.raises(TypeError, match=r"helper\(\) got an unexpected keyword argument 'out'$"):
        np.apply_along_axis(f, 0, np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"f\(\) got an unexpected keyword argument 'out'$"):
        np.apply_along_axis(f, 0, np.ones((2, 2)), out=None)  # passed on to f, as NumPy does
    with pytest.raises(TypeError, match="ones: NumPy's like= is not supported"):
        np.ones(2, like=None)


def test_numpy_mode_inside_an_object_that_keeps_deep_learnings_mode_is_restored() -> None:
    """An autopar.numpy call inside ``in_mode(False, ...)`` (what a deep-learning Generator or ufunc runs in)
    restores that thread's False after, even where the process default is NumPy's."""
    from autopar.arrays import _dtypes

    def inner() -> object:
        assert np.sqrt(np.arange(2)).dtype == numpy.float64
        return ap.zeros(2).dtype

    ap.set_default_dtype("float64")
    try:
        assert _dtypes.in_mode(False, inner) == ap.float32
    finally:
        ap.set_default_dtype("float32")
    assert ap.zeros(2).dtype == ap.float32 and np.zeros(2).dtype == numpy.float64


@pytest.mark.parametrize("draw", ["normal", "uniform"])
def test_generator_draws_with_array_parameters_apply_each(draw: str) -> None:
    """normal(loc, scale) and uniform(low, high) with arrays: each column has its own scale (moments, loose)."""
    rng = np.random.default_rng(7)
    if draw == "normal":
        x = numpy.asarray(rng.normal(np.array([0.0, 10.0]), np.array([1.0, 100.0]), size=(20000, 2)))
        numpy.testing.assert_allclose(x.std(axis=0), [1.0, 100.0], rtol=0.05)
        numpy.testing.assert_allclose(x.mean(axis=0), [0.0, 10.0], atol=3.0)
    else:
        x = numpy.asarray(rng.uniform(np.array([0.0, 10.0]), np.array([1.0, 110.0]), size=(20000, 2)))
        assert (x.min(axis=0) >= [0.0, 10.0]).all() and (x.max(axis=0) < [1.0, 110.0]).all()
        numpy.testing.assert_allclose(x.max(axis=0) - x.min(axis=0), [1.0, 100.0], rtol=0.01)
    assert x.dtype == numpy.float64


@pytest.mark.parametrize("dtype", ["int64", "int8", "bool", "float32"])
def test_float_power_computes_in_float64(dtype: str) -> None:
    """float_power(int array, -1) is 1/x in float64, not an integer power cast after (which gives 0)."""
    base, exps = [1, 2, 3], [-1, -2, 2]
    for e in (-1, 0.5, numpy.array(exps)):
        want = numpy.float_power(numpy.array(base, dtype=dtype), e)
        got = np.float_power(np.array(base, dtype=dtype), np.array(e) if isinstance(e, numpy.ndarray) else e)
        _same(got, want)
    _same(ap.float_power(ap.asarray(base, dtype=dtype), -1), numpy.float_power(numpy.array(base, dtype=dtype), -1))


def test_linspace_between_reductions_and_arrays() -> None:
    """linspace(x.min(), x.max(), n), NumPy's idiom for a grid over the data, and array endpoints (the new
    axis first): NumPy's values bit for bit, without reading the endpoints."""

    def exact(got, want):  # type: ignore[no-untyped-def]
        _same(got, want, exact=True)

    data = [3.5, -1.25, 7.0, 2.0]
    x, ref = np.array(data), numpy.array(data)
    exact(np.linspace(x.min(), x.max(), 7), numpy.linspace(ref.min(), ref.max(), 7))
    exact(np.linspace(0, x.max(), 5, endpoint=False), numpy.linspace(0, ref.max(), 5, endpoint=False))
    for kwargs in ({}, {"endpoint": False}, {"dtype": int}, {"num": 1}, {"num": 0}):
        start, stop = [0.0, 1.0, 2.0], [[1.0, 3.0, 2.0], [-4.0, 9.5, 2.0]]  # a zero step in one column
        want = numpy.linspace(numpy.array(start), numpy.array(stop), **({"num": 5} | kwargs))
        exact(np.linspace(np.array(start), np.array(stop), **({"num": 5} | kwargs)), want)
        exact(np.linspace(start, np.array(stop), **({"num": 5} | kwargs)), want)
    start, stop = [0.1257302210933933, 2.0], [-0.1321048632913019, 2.0]  # the zero step switches every column
    exact(np.linspace(np.array(start), np.array(stop), 7), numpy.linspace(numpy.array(start), numpy.array(stop), 7))
    exact(np.linspace(np.arange(3), 10, 4), numpy.linspace(numpy.arange(3), 10, 4))  # integer endpoints: float64
    f32 = ap.linspace(ap.asarray(0.0), ap.asarray(1.0), 3)  # autopar's float32 endpoints stay float32
    exact(f32, numpy.linspace(numpy.float32(0), numpy.float32(1), 3, dtype=numpy.float32))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float32", "complex128"])
def test_shifts_and_integer_matrix_powers_keep_numpys_dtype(dtype: str) -> None:
    """fftshift is a roll (NumPy keeps the dtype); matrix_power of integers by n >= 0 stays integer in NumPy
    (a negative power inverts: float)."""
    data = numpy.arange(10).reshape(2, 5).astype(dtype)
    for name in ("fftshift", "ifftshift"):
        _same(getattr(np.fft, name)(np.array(data)), getattr(numpy.fft, name)(data), exact=True)
        _same(getattr(np.fft, name)(np.array(data), axes=1), getattr(numpy.fft, name)(data, axes=1), exact=True)
    m = numpy.array([[1, 1], [0, 1]], dtype=dtype)
    for n in (0, 1, 3) if dtype != "uint8" else (0, 3):
        _same(np.linalg.matrix_power(np.array(m), n), numpy.linalg.matrix_power(m, n), exact=True)
    if dtype in ("int64", "float32"):
        _same(np.linalg.matrix_power(np.array(m), -2), numpy.linalg.matrix_power(m, -2))
    assert ap.fft.fftshift(ap.arange(4)).dtype == ap.float32  # autopar's own: the standard's floating result


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int64", "uint8", "bool"])
@pytest.mark.parametrize("scalar", [numpy.float64(0.1), numpy.float32(0.1), numpy.int64(3), numpy.int8(3),
                                    numpy.bool_(True), numpy.complex64(1j)])  # fmt: skip
def test_numpy_scalars_are_strong_as_in_numpy_2(dtype: str, scalar: object) -> None:
    """NEP 50: a NumPy scalar (numpy.float64(0.1), np.float32(2.0), what numpy functions return) promotes as
    a 0-d array of its dtype -- unlike a Python number, which is weak."""
    ref = numpy.array([1, 0, 1], dtype=dtype)
    x = np.array(ref)
    for op in (lambda a, s: a + s, lambda a, s: s * a, lambda a, s: np.multiply(a, s) if isinstance(a, ap.ndarray)
               else numpy.multiply(a, s)):  # fmt: skip
        try:
            want = op(ref, scalar)
        except TypeError:  # bool - bool and friends: refused by both
            continue
        _same(op(x, scalar), want)
    assert (np.float32(2.0) * np.ones(2, dtype=np.float16)).dtype == numpy.float32  # np.float32(...) makes one


def test_integer_to_a_negative_integer_power_raises_at_the_call() -> None:
    """NumPy raises ValueError at the call; a deferred torch error at the read is not where programs look."""
    for dtype in ("int64", "int8", "uint8"):
        with pytest.raises((ValueError, OverflowError)):  # NumPy: OverflowError for the unsigned
            numpy.arange(1, 3, dtype=dtype) ** -1
        for power in (lambda a: a ** -1, lambda a: np.power(a, -2), lambda a: a.__ipow__(-1)):
            with pytest.raises(ValueError, match=r"negative integer powers.*astype"):
                power(np.arange(1, 3, dtype=dtype))
    _same(np.arange(1, 3) ** 2, numpy.arange(1, 3) ** 2)
    _same((-2) ** np.arange(3), (-2) ** numpy.arange(3))
    _same(np.arange(1, 3) ** -1.0, numpy.arange(1, 3) ** -1.0)
    _same(np.arange(1.0, 3) ** -1, numpy.arange(1.0, 3) ** -1)


def test_lstsq_default_cutoff_is_eps_times_the_larger_dimension() -> None:
    """rcond=None: NumPy 2 drops singular values below eps * max(M, N) * s.max() -- a tall matrix whose second
    singular value (1e-14) is above eps * N but below eps * M has rank 1."""
    q, _ = numpy.linalg.qr(numpy.random.default_rng(0).normal(size=(100, 2)))
    a = q @ numpy.diag([1.0, 1e-14]) @ numpy.array([[0.6, 0.8], [-0.8, 0.6]])
    b = numpy.arange(100.0)
    x, residuals, rank, s = np.linalg.lstsq(np.array(a), np.array(b))
    want = numpy.linalg.lstsq(a, b)
    assert rank == want[2] == 1
    numpy.testing.assert_allclose(numpy.asarray(x), want[0], rtol=1e-8)


def test_cond_of_a_singular_matrix_is_inf_as_numpys() -> None:
    with numpy.errstate(all="ignore"):
        for m in ([[0.0, 0.0], [0.0, 0.0]], [[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 0.0]]):
            for p in (None, 2, -2, 1, "fro"):
                got, want = float(np.linalg.cond(np.array(m), p)), float(numpy.linalg.cond(numpy.array(m), p))
                assert got == want or (numpy.isinf(want) and numpy.isinf(got)) or got > 1e15, (m, p, got, want)
                assert not numpy.isnan(got), (m, p)


def test_ufunc_outer_passes_out_and_dtype() -> None:
    o, ref = np.zeros((3, 2)), numpy.zeros((3, 2))
    r = np.add.outer(np.arange(3), np.arange(2), out=o)
    numpy.add.outer(numpy.arange(3), numpy.arange(2), out=ref)
    assert r is o
    _same(o, ref)
    _same(np.multiply.outer(np.arange(3), np.arange(2), dtype=np.float32),
          numpy.multiply.outer(numpy.arange(3), numpy.arange(2), dtype=numpy.float32))  # fmt: skip


def test_spawned_generators_differ_from_each_other_and_from_the_parent() -> None:
    """Each child's first draws, compared before any other draw (NumPy's SeedSequence.spawn children)."""
    parent = np.random.default_rng(3)
    kids = parent.spawn(2)
    first = [k.random(4).tolist() for k in kids]
    assert first[0] != first[1]
    assert parent.random(4).tolist() not in first
    assert np.random.default_rng(3).spawn(2)[1].random(4).tolist() == first[1]


@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
def test_nanmax_and_nanmin_of_an_all_nan_slice_are_nan(name: str) -> None:
    """NumPy gives nan (with a RuntimeWarning) where every value is NaN, not the -inf/inf fill."""
    data = numpy.array([[numpy.nan, numpy.nan], [1.0, numpy.nan], [2.0, 3.0]])
    with numpy.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        wants = [getattr(numpy, name)(data, axis=1), getattr(numpy, name)(data[:1]), getattr(numpy, name)(data, axis=0)]
    gots = [getattr(np, name)(np.array(data), axis=1), getattr(np, name)(np.array(data[:1])),
            getattr(np, name)(np.array(data), axis=0)]  # fmt: skip
    for got, want in zip(gots, wants):
        _same(got, want, exact=True)
    assert getattr(np, name)(np.arange(3)).dtype == numpy.int64
    with pytest.warns(RuntimeWarning):
        want = getattr(numpy, name)(data.astype(numpy.float32), axis=1)
    _same(getattr(np, name)(np.array(data, dtype=np.float32), axis=1), want, exact=True)


def test_numpys_type_codes_name_dtypes() -> None:
    """'f8', 'i4', 'u1', '<f8', 'c16', 'd', '?': NumPy's codes, accepted wherever a dtype is."""
    for code in ("f8", "f4", "f2", "i8", "i4", "i2", "i1", "u1", "u8", "<f8", "=i4", "c8", "c16", "d", "f", "?", "b1"):
        want = numpy.dtype(code)
        assert np.ones(2, code).dtype == want and np.arange(3).astype(code).dtype == want, code
        assert ap.zeros(2, dtype=code).dtype == want, code
    with pytest.raises(TypeError, match="'U8' is not a dtype autopar knows"):
        np.zeros(2, dtype="U8")
    with pytest.raises(TypeError, match="'>f8' is not a dtype autopar knows"):
        np.zeros(2, dtype=">f8")  # big-endian: a byte order torch does not store
    assert np.ones(2).dtype.type is numpy.float64 and issubclass(np.arange(2).dtype.type, numpy.integer)


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.inv(m.ones((2, 3))), lambda m: m.linalg.inv(m.ones(3)), lambda m: m.linalg.cholesky(m.ones((2, 3))),
    lambda m: m.linalg.det(m.ones((3, 2))), lambda m: m.linalg.eigh(m.ones((2, 3))), lambda m: m.linalg.eig(m.ones((2, 3))),
    lambda m: m.linalg.eigvals(m.ones(3)), lambda m: m.linalg.svd(m.ones(3)), lambda m: m.linalg.matrix_power(m.ones((2, 3)), 2),
    lambda m: m.linalg.lstsq(m.ones((3, 2)), m.ones(2)), lambda m: m.linalg.slogdet(m.ones((2, 3))),
    lambda m: m.linalg.solve(m.ones((2, 3)), m.ones(2)), lambda m: m.linalg.pinv(m.ones(3)),
])  # fmt: skip
def test_linalg_shape_errors_are_linalg_errors_as_numpys(call) -> None:  # type: ignore[no-untyped-def]
    """NumPy raises LinAlgError (a ValueError) for a matrix of the wrong shape; `except LinAlgError` catches it."""
    with pytest.raises(numpy.linalg.LinAlgError):
        call(numpy)
    with pytest.raises(numpy.linalg.LinAlgError, match="linalg"):
        call(np)


def test_real_and_imag_as_numpy_programs_write_them() -> None:
    """x.real of a real array is a view (writes reach x); z.real = v and z.imag = v set the parts of a
    complex array. (z.real[i] = v on a complex array writes a copy: autopar's views keep their dtype.)"""
    for m in (np, numpy):
        x = m.arange(4.0)
        x.real[1] = 9.0
        z = m.array([1 + 2j, 3 + 4j])
        z.real = [5.0, 6.0]
        w = m.array([1 + 2j, 3 + 4j], dtype=m.complex64)
        w.imag = 0.5
        y = m.arange(3.0)
        y.real = 7.0
        if m is numpy:
            for got, want in zip(ours, [x, z, w, y]):
                _same(got, want, exact=True)
        ours = [x, z, w, y]
    with pytest.raises(TypeError, match="imaginary part"):
        np.arange(3.0).imag = 1.0


def test_lists_of_numpy_scalars_keep_numpys_dtype() -> None:
    """np.array([numpy.float32(1.5)]) is float32 in NumPy (the scalars are typed); mixed with Python numbers,
    NumPy's promotion (float64 for a Python float)."""
    for data in ([numpy.float32(1.5)], [numpy.int32(1), numpy.int32(2)], [numpy.float32(1.5), 2.0],
                 [numpy.int8(1), 2], [[numpy.float16(1)], [numpy.float16(2)]], [numpy.bool_(True), True],
                 [numpy.complex64(1j)], [numpy.uint8(3), numpy.int8(-1)]):  # fmt: skip
        _same(np.array(data), numpy.array(data), exact=True)
        _same(np.asarray(data), numpy.asarray(data), exact=True)
    assert ap.asarray([numpy.float32(1.5)]).dtype == ap.float32  # autopar: the default float, as for 1.5


def test_a_singular_solve_names_autopars_function() -> None:
    with pytest.raises(numpy.linalg.LinAlgError, match=r"^linalg\.solve: .*singular"):
        np.linalg.solve(np.zeros((2, 2)), np.ones(2))
