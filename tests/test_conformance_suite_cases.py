"""Cases the official array-api-tests suite found (issue 8): each is checked here
against array-api-strict (2023.12), the standard's reference implementation, or
NumPy where the reference does not implement the case -- never against the suite
itself, which stays outside the repository (bench/array_api_tests.py runs it)."""

from __future__ import annotations

import inspect
import math
from typing import Any

import array_api_strict as xp
import numpy as np
import pytest
from _conformance import SETTINGS, arrays, assert_same, to_ap, to_np
from hypothesis import given
from hypothesis import strategies as st

import autopar as ap

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"), pytest.mark.usefixtures("eng")]


@pytest.mark.parametrize("shape", [(), (0,), (2, 3)])
@pytest.mark.parametrize("flag", [True, False])
def test_zero_dim_boolean_mask(shape: tuple[int, ...], flag: bool) -> None:
    """``x[array(True)]`` adds an axis of size 1, ``x[array(False)]`` one of size 0;
    a 0-d mask indexes no dimension, so it works on 0-d and empty arrays too."""
    x = xp.reshape(xp.arange(int(np.prod(shape)), dtype=xp.float64), shape)
    mask = xp.asarray(flag)
    assert_same(to_ap(x)[to_ap(mask)], x[mask], what="getitem")
    ours, theirs = to_ap(x), xp.asarray(x, copy=True)
    ours[to_ap(mask)] = -1.0
    theirs[mask] = -1.0
    assert_same(ours, theirs, what="setitem")
    ours = to_ap(x)
    ours[np.asarray(flag)] = -2.0  # a host (NumPy) 0-d mask as well
    np.testing.assert_array_equal(ours.numpy(), np.where(flag, -2.0, to_np(x)))


@pytest.mark.parametrize(
    "shape, mask_shape", [((1,), (0,)), ((2, 3), (2, 0)), ((2, 3), (0, 3)), ((2, 3), (0,)), ((0, 3), (0, 3))]
)
def test_boolean_mask_with_zero_dimensions(shape: tuple[int, ...], mask_shape: tuple[int, ...]) -> None:
    """A mask dimension of size 0 where the array's is not selects nothing (the standard: each
    mask dimension equals the array's or is 0); other sizes still raise IndexError."""
    x = xp.reshape(xp.arange(int(np.prod(shape)), dtype=xp.float64), shape)
    mask = xp.zeros(mask_shape, dtype=xp.bool)
    assert_same(to_ap(x)[to_ap(mask)], x[mask], what="getitem")
    ours, theirs = to_ap(x), xp.asarray(x, copy=True)
    ours[to_ap(mask)] = -1.0
    theirs[mask] = -1.0
    assert_same(ours, theirs, what="setitem")
    with pytest.raises(IndexError, match="must equal the array's or be 0"):
        to_ap(x)[ap.zeros((shape[0] + 1,), dtype=ap.bool)]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_creation_signature_has_shape_first(name: str) -> None:
    """``zeros(shape, *, dtype, device)`` as the standard writes it (``shape=`` works);
    the PyTorch spelling ``zeros(2, 3)`` and NumPy's ``zeros((2, 3), 'int64')`` still do."""
    ours = list(inspect.signature(getattr(ap, name)).parameters.values())[0]
    theirs = list(inspect.signature(getattr(xp, name)).parameters.values())[0]
    assert (ours.name, ours.kind) == (theirs.name, theirs.kind)
    assert getattr(ap, name)(shape=(2, 3)).shape == (2, 3)
    assert getattr(ap, name)(2, 3).shape == (2, 3)
    assert getattr(ap, name)((2, 3), "int64").dtype == ap.int64


@pytest.mark.parametrize(
    "start, stop, step",
    [(0, 2**63, 2**63), (2**63, 2**64 - 1, 2**62), (2**64 - 1, 2**63, -(2**61)), (5, 2**64 - 1, 2**63), (3, 3, 2**63)],
)
def test_arange_uint64_past_int64(start: int, stop: int, step: int) -> None:
    """``arange`` counts its elements exactly and makes uint64 values of 2**63 and above."""
    assert_same(ap.arange(start, stop, step, dtype=ap.uint64), xp.arange(start, stop, step, dtype=xp.uint64))


@pytest.mark.parametrize(
    "value, dtype",
    [(complex(0.0, 3.402823466385289e38), "complex64"), (1e39, "float32"), (-1e39, "float32"), (1e39 + 1j, "complex64")],
)
def test_full_rounds_a_value_past_the_largest(value: complex, dtype: str) -> None:
    """A fill value just past float32's largest rounds to it, one further to inf -- as
    ``asarray`` and the reference do; torch.full alone raised an overflow error."""
    with np.errstate(over="ignore"):
        theirs = xp.full((2,), value, dtype=getattr(xp, dtype))
    assert_same(ap.full((2,), value, dtype=dtype), theirs)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "uint64"])
def test_repeat_counts_of_any_integer_dtype(dtype: str) -> None:
    x = xp.asarray([[True, False], [False, True]])
    counts = xp.asarray([2, 0], dtype=getattr(xp, dtype))
    assert_same(ap.repeat(to_ap(x), to_ap(counts), axis=1), xp.repeat(x, counts, axis=1))
    assert_same(ap.repeat(to_ap(x)[0], to_ap(counts)), xp.repeat(x[0, ...], counts))


@pytest.mark.parametrize("axis", [3, -4])
def test_expand_dims_bad_axis_is_index_error(axis: int) -> None:
    """The standard asks for IndexError; NumPy's AxisError is a ValueError too, and so is autopar's."""
    with pytest.raises(IndexError):
        xp.expand_dims(xp.zeros((2, 2)), axis=axis)
    with pytest.raises(IndexError, match="expand_dims: axis"):
        ap.expand_dims(ap.zeros((2, 2)), axis=axis)
    with pytest.raises(ValueError, match="out of range"):
        ap.sum(ap.zeros((2, 2)), axis=axis)


@SETTINGS
@given(data=st.data())
def test_unique_of_complex(data: Any) -> None:
    """torch.unique has no complex kernel: autopar sorts by real then imaginary part."""
    x = data.draw(arrays("complex", dtype=data.draw(st.sampled_from([xp.complex64, xp.complex128]))), label="x")
    x = data.draw(st.sampled_from([x, xp.round(x / 500)]), label="x (with repeats)")
    ours, theirs = ap.unique_all(to_ap(x)), xp.unique_all(x)
    assert_same(ours.values, theirs.values, what="values")
    assert_same(ours.counts, theirs.counts, what="counts")
    assert_same(ours.inverse_indices, theirs.inverse_indices, what="inverse")
    assert_same(ours.indices, theirs.indices, what="indices")
    assert_same(ap.unique_values(to_ap(x)), xp.unique_values(x))
    assert_same(list(ap.unique_counts(to_ap(x))), list(xp.unique_counts(x)))
    assert_same(list(ap.unique_inverse(to_ap(x))), list(xp.unique_inverse(x)))


def test_unique_of_complex_nans_are_distinct() -> None:
    nan = float("nan")
    x = xp.asarray([1 + 2j, complex(nan, 1), -0.0 + 0j, 0j, 1 + 1j, complex(nan, 1), 1 + 2j, complex(1, nan)])
    ours, theirs = ap.unique_all(to_ap(x)), xp.unique_all(x)
    assert_same(list(ours), list(theirs))


@pytest.mark.parametrize("tol", [[1e-8, 1e-4, 0.5], [1e-5], [[1e-2], [1e-7]]])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linalg_rtol_array_per_matrix(tol: list[float], dtype: str) -> None:
    """``matrix_rank``/``pinv`` take an array ``rtol`` broadcast over the stack of matrices."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4, 4)) * [1, 1e-1, 1e-3, 1e-6]  # singular values spread out
    x, rtol = xp.asarray(a, dtype=getattr(xp, dtype)), xp.asarray(tol, dtype=getattr(xp, dtype))
    if rtol.ndim == 1 and rtol.shape[0] == 3:
        x = x[0, ...]
    assert_same(ap.linalg.matrix_rank(to_ap(x), rtol=to_ap(rtol)), xp.linalg.matrix_rank(x, rtol=rtol))
    assert_same(ap.linalg.pinv(to_ap(x), rtol=to_ap(rtol)), xp.linalg.pinv(x, rtol=rtol), 1e-3)
    assert ap.linalg.pinv(to_ap(x), rtol=to_ap(rtol).astype("float64")).dtype == dtype  # x's precision
    with pytest.raises(ValueError, match="rtol of shape"):
        ap.linalg.pinv(to_ap(x), rtol=ap.zeros((5,)))


INF, NAN = float("inf"), float("nan")
# The standard's special cases (2023.12) that torch's complex kernels miss; NumPy misses the expm1 and tanh ones.
COMPLEX_SPECIAL_CASES = {
    "acos": [(0j, complex(math.pi / 2, -0.0)), (complex(-0.0, 0.0), complex(math.pi / 2, -0.0)),
             (complex(0.5, -0.0), complex(math.acos(0.5), 0.0)), (complex(2, 0), complex(0, -math.acosh(2)))],
    "expm1": [(complex(-0.0, 0.0), 0j), (complex(INF, 0), complex(INF, 0)), (complex(-INF, INF), -1 + 0j),
              (complex(-INF, NAN), -1 + 0j), (complex(INF, NAN), complex(INF, NAN)), (complex(NAN, 0), complex(NAN, 0))],
    "log1p": [(complex(INF, NAN), complex(INF, NAN)), (complex(-INF, NAN), complex(INF, NAN)),
              (complex(NAN, INF), complex(INF, NAN)), (complex(1e30, INF), complex(INF, math.pi / 2))],
    # 1 + 0j, the zero with b's sign (tanh(conj(z)) == conj(tanh(z))); C99 gives sin(2b)'s sign: 1 - 0j at b = 2
    "tanh": [(complex(INF, 2), 1 + 0j), (complex(INF, -2), complex(1, -0.0)), (complex(-INF, 2), -1 + 0j),
             (complex(INF, 0), 1 + 0j), (complex(NAN, 0), complex(NAN, 0))],
}  # fmt: skip


def _same_complex(got: complex, want: complex) -> bool:
    """Equal parts, NaN where NaN, and the sign of a zero part as given."""
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        if math.isnan(w):
            if not math.isnan(g):
                return False
        elif not (math.isclose(g, w, rel_tol=1e-6) and math.copysign(1, g) == math.copysign(1, w)):
            return False
    return True


@pytest.mark.parametrize("name", sorted(COMPLEX_SPECIAL_CASES))
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_special_cases(name: str, dtype: str) -> None:
    cases = COMPLEX_SPECIAL_CASES[name]
    got = getattr(ap, name)(ap.asarray(np.array([z for z, _ in cases], dtype=dtype))).numpy().tolist()
    bad = [(z, g, w) for (z, w), g in zip(cases, got) if not _same_complex(g, w)]
    assert not bad, f"{name}: (input, got, the standard's result): {bad}"
    finite = np.array([0.5 + 0.25j, -3 - 2j, 1e-3j], dtype=dtype)  # away from special cases: as NumPy in complex128
    want = getattr(np, {"acos": "arccos"}.get(name, name))(finite.astype(np.complex128))
    np.testing.assert_allclose(getattr(ap, name)(ap.asarray(finite)).numpy(), want, rtol=1e-5)
