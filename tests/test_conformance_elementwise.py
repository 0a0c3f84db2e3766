"""Every elementwise function and operator of the Array API standard (2023.12)
against array-api-strict, on both engines: dtypes, promotion, broadcasting,
special values (NaN, ±0, ±inf), empty and 0-d arrays, Python scalars."""

from __future__ import annotations

import math
import operator
from typing import Any

import array_api_strict as xp
import numpy as np
import pytest
from _conformance import SETTINGS, arrays, assert_same, same_kind_dtypes, to_ap, xps
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import autopar as ap

UNARY = {
    "abs": "numeric", "acos": "floating-point", "acosh": "floating-point", "asin": "floating-point",
    "asinh": "floating-point", "atan": "floating-point", "atanh": "floating-point",
    "bitwise_invert": "integer or boolean", "ceil": "real numeric", "conj": "numeric", "cos": "floating-point",
    "cosh": "floating-point", "exp": "floating-point", "expm1": "floating-point", "floor": "real numeric",
    "imag": "complex", "isfinite": "numeric", "isinf": "numeric", "isnan": "numeric", "log": "floating-point",
    "log1p": "floating-point", "log2": "floating-point", "log10": "floating-point", "logical_not": "boolean",
    "negative": "numeric", "positive": "numeric", "real": "complex", "round": "numeric", "sign": "numeric",
    "signbit": "real floating-point", "sin": "floating-point", "sinh": "floating-point", "square": "numeric",
    "sqrt": "floating-point", "tan": "floating-point", "tanh": "floating-point", "trunc": "real numeric",
}  # fmt: skip
BINARY = {
    "add": "numeric", "atan2": "real floating-point", "bitwise_and": "integer or boolean",
    "bitwise_left_shift": "integer", "bitwise_or": "integer or boolean", "bitwise_right_shift": "integer",
    "bitwise_xor": "integer or boolean", "copysign": "real floating-point", "divide": "floating-point",
    "equal": "any", "floor_divide": "real numeric", "greater": "real numeric", "greater_equal": "real numeric",
    "hypot": "real floating-point", "less": "real numeric", "less_equal": "real numeric",
    "logaddexp": "real floating-point", "logical_and": "boolean", "logical_or": "boolean", "logical_xor": "boolean",
    "maximum": "real numeric", "minimum": "real numeric", "multiply": "numeric", "not_equal": "any",
    "pow": "numeric", "remainder": "real numeric", "subtract": "numeric",
}  # fmt: skip
# Complex results of transcendental functions at branch cuts differ between C libraries.
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning")]  # NumPy warns on the oracle's side
LOOSE = {"acos", "acosh", "asin", "asinh", "atan", "atanh", "tan", "tanh", "cosh", "sinh", "pow", "logaddexp"}


pytestmark = [*pytestmark, pytest.mark.usefixtures("eng")]  # every test on both engines (conftest)


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(data=st.data())
def test_unary(name: str, data: Any) -> None:
    x = data.draw(arrays(UNARY[name]), label="x")
    theirs = getattr(xp, name)(x)
    ours = getattr(ap, name)(to_ap(x))
    assert_same(ours, theirs, 1e-4 if name in LOOSE else None, name)


def _shift_ok(name: str, x2: Any) -> bool:
    if not name.startswith("bitwise_") or "shift" not in name:
        return True
    v = np.asarray(x2._array)
    return bool((v >= 0).all() and (v < 8 * v.dtype.itemsize).all())


@pytest.mark.parametrize("name", sorted(BINARY))
@SETTINGS
@given(data=st.data())
def test_binary_arrays_broadcast_and_promote(name: str, data: Any) -> None:
    d1, d2 = data.draw(same_kind_dtypes(BINARY[name]), label="dtypes")
    s1, s2 = data.draw(xps.mutually_broadcastable_shapes(2, min_dims=0, max_dims=3, max_side=3), label="shapes").input_shapes
    x1 = data.draw(arrays(dtype=d1, shape=s1), label="x1")
    x2 = data.draw(arrays(dtype=d2, shape=s2), label="x2")
    assume(_shift_ok(name, x2))
    if name == "pow" and xp.isdtype(x2.dtype, "integral"):
        assume(bool(xp.all(x2 >= 0)))
    if name == "pow" and xp.isdtype(x1.dtype, "real floating"):
        # (-inf) ** 0.5 is +inf by the standard (and torch); NumPy, the oracle here, says nan
        assume(not bool(xp.any(xp.isinf(x1) & (x1 < 0))))
    theirs = getattr(xp, name)(x1, x2)
    ours = getattr(ap, name)(to_ap(x1), to_ap(x2))
    assert_same(ours, theirs, 1e-4 if name in LOOSE else None, name)


OPERATORS = {
    "__add__": "numeric", "__sub__": "numeric", "__mul__": "numeric", "__truediv__": "floating-point",
    "__floordiv__": "real numeric", "__mod__": "real numeric", "__pow__": "floating-point",
    "__and__": "integer or boolean", "__or__": "integer or boolean", "__xor__": "integer or boolean",
    "__lt__": "real numeric", "__le__": "real numeric", "__gt__": "real numeric", "__ge__": "real numeric",
    "__eq__": "any", "__ne__": "any",
}  # fmt: skip


@pytest.mark.parametrize("method", sorted(OPERATORS))
@SETTINGS
@given(data=st.data())
def test_operators_with_python_scalars_both_sides(method: str, data: Any) -> None:
    """The standard's scalar rules: the scalar takes the array's dtype, on either side."""
    x = data.draw(arrays(OPERATORS[method]), label="x")
    if xp.isdtype(x.dtype, "bool"):
        scalar = data.draw(st.booleans())
    elif xp.isdtype(x.dtype, "integral"):
        info = np.iinfo(np.asarray(x._array).dtype)
        scalar = data.draw(st.integers(max(info.min, -100), min(info.max, 100)))
    else:
        bound = 4 if method == "__pow__" else 100  # complex powers round differently between libms
        # no tiny magnitudes: results below float32's normal range depend on the CPU's flush-to-zero mode
        scalar = data.draw(st.floats(-bound, bound, width=32).filter(lambda v: v == 0 or abs(v) > 1e-30))
    assume(not (method in ("__floordiv__", "__mod__") and scalar == 0))
    rtol = 1e-3 if method == "__pow__" and xp.isdtype(x.dtype, "complex floating") else None
    theirs = getattr(x, method)(scalar)
    if method == "__pow__" and xp.isdtype(x.dtype, "complex floating") and not bool(xp.all(xp.isfinite(theirs))):
        return  # complex array ** scalar overflowing to inf/nan differs between libms (inf-0j, inf+nanj)
    ours = getattr(to_ap(x), method)(scalar)
    assert_same(ours, theirs, rtol, what=method)
    reflected = method.replace("__", "__r", 1)
    if method in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        return
    nonzero = bool(xp.all(x != 0)) if not xp.isdtype(x.dtype, "bool") else True
    if method in ("__floordiv__", "__mod__", "__truediv__") and not nonzero:
        return
    if method == "__pow__" and xp.isdtype(x.dtype, "complex floating"):
        return  # scalar ** complex array: overflow to inf/nan differs between libms
    assert_same(getattr(to_ap(x), reflected)(scalar), getattr(x, reflected)(scalar), rtol, what=reflected)


@pytest.mark.parametrize("method", ["__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__ifloordiv__"])
@SETTINGS
@given(data=st.data())
def test_in_place_operators_follow_the_standard(method: str, data: Any) -> None:
    d1, d2 = data.draw(same_kind_dtypes("real floating-point"), label="dtypes")
    assume(d1 == xp.result_type(d1, d2))  # the standard's rule: the in-place result keeps x1's dtype
    s = data.draw(xps.array_shapes(min_dims=0, max_dims=3, max_side=3), label="shape")
    x1 = data.draw(arrays(dtype=d1, shape=s))
    x2 = data.draw(arrays(dtype=d2, shape=s[1:] if s else ()))
    ours = to_ap(x1)
    before = ours
    result = getattr(ours, method)(to_ap(x2))
    theirs = getattr(x1, method)(x2)
    if method == "__ipow__":
        theirs = _standard_power_of_one_half(x1, x2, theirs)
    assert result is before
    assert_same(ours, theirs, 1e-4, method)


def _standard_power_of_one_half(x1: Any, x2: Any, theirs: Any) -> Any:
    """array-api-strict computes ``x ** 0.5`` as NumPy's sqrt fast path, which gives NaN for
    -inf and -0.0 for -0.0; the standard (like C's pow) says +inf and +0.0 there."""
    base, exponent, got = np.asarray(x1._array), np.asarray(x2._array), np.array(theirs._array)
    half = np.broadcast_to(exponent == 0.5, base.shape)
    got[half & (base == -np.inf)] = np.inf
    got[half & (base == 0)] = 0.0
    return xp.asarray(got)


def test_special_values_follow_ieee() -> None:
    """NaN, ±0 and ±inf where the standard says (a few of its special cases)."""
    x = ap.asarray([math.nan, 0.0, -0.0, math.inf, -math.inf], dtype=ap.float64)
    assert np.signbit(ap.negative(x).numpy()).tolist() == [True, True, False, True, False]
    np.testing.assert_array_equal((1.0 / x[1:3]).numpy(), [math.inf, -math.inf])
    assert ap.isnan(ap.sqrt(ap.asarray([-1.0]))).tolist() == [True]
    assert ap.maximum(x, 0.0).numpy()[0] != ap.maximum(x, 0.0).numpy()[0]  # NaN propagates
    assert ap.copysign(ap.asarray([1.0, 1.0]), ap.asarray([-0.0, 0.0])).tolist() == [-1.0, 1.0]
    assert ap.log(ap.asarray([0.0])).tolist() == [-math.inf]


DTYPE_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float32", "float64", "complex64", "complex128")


def test_every_pair_of_the_standards_promotion_table() -> None:
    """Each pair of dtypes the standard's table defines, mixed signed/unsigned integers
    included (the hypothesis tests draw pairs of one kind only), gives array-api-strict's
    result dtype. Catches a wrong table entry (e.g. int8 + uint8 -> int8, not int16)."""
    checked = 0
    for n1 in DTYPE_NAMES:
        for n2 in DTYPE_NAMES:
            try:
                want = xp.result_type(getattr(xp, n1), getattr(xp, n2))
            except TypeError:  # not in the standard's table (mixed kinds): NumPy's choice, tested below
                continue
            name = np.asarray(xp.ones(1, dtype=want)).dtype.name
            x1, x2 = ap.ones(2, dtype=n1), ap.ones(2, dtype=n2)
            assert ap.result_type(x1, x2) == name, (n1, n2)
            op = operator.or_ if n1 == "bool" else operator.add  # the table pairs bool with bool only
            assert op(x1, x2).dtype == name, (n1, n2)
            checked += 1
    assert checked >= 70  # the table's pairs, not a loop that skipped everything


def test_mixed_kinds_follow_numpy_where_the_standard_leaves_the_choice() -> None:
    i64, f32, u64 = ap.asarray([1], dtype="int64"), ap.asarray([1.0], dtype="float32"), ap.asarray([1], dtype="uint64")
    for a, b in ((i64, f32), (i64, u64), (ap.asarray([1], dtype="int8"), f32), (ap.asarray([True]), i64)):
        want = np.result_type(np.asarray(a), np.asarray(b))
        assert (a + b).dtype == want, (a.dtype, b.dtype)
        assert ap.result_type(a, b) == want
    assert (i64 + 1.5).dtype == ap.float32  # autopar's default float (NumPy: its own, float64)
    assert (ap.asarray([True]) + 1).dtype == ap.int64
    assert (f32 * 1j).dtype == ap.complex64 and (ap.asarray([1.0], dtype="float64") * 1j).dtype == ap.complex128


@pytest.mark.parametrize("op", [operator.add, operator.mul, operator.lt, operator.pow])
def test_unsigned_dtypes_torch_lacks_kernels_for_compute_exactly(op: Any) -> None:
    """uint16/32/64: torch has no add/compare kernels; autopar computes them in int64."""
    for dt in ("uint16", "uint32", "uint64"):
        v = np.array([0, 1, 7, 200], dtype=dt)
        w = np.array([3, 2, 1, 0], dtype=dt)
        got = op(ap.asarray(v), ap.asarray(w)).numpy()
        np.testing.assert_array_equal(got, op(v, w))
        assert got.dtype == op(v, w).dtype
    big = np.array([2**32 - 1], dtype="uint32")
    assert (ap.asarray(big) + 1).tolist() == [0]  # wraps, as NumPy does


def _big(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> Any:
    """A big array from NumPy's generator (hypothesis fills big arrays slowly), with special values."""
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        values = rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, dtype=dtype, endpoint=True)
    else:
        values = (rng.standard_normal(shape) * 10).astype(dtype)
        flat = values.reshape(-1)
        picks = rng.integers(0, flat.size, 16)
        flat[picks] = rng.choice(np.array([0.0, -0.0, np.nan, np.inf, -np.inf], dtype=dtype), 16)
    return xp.asarray(values)


@pytest.mark.parametrize("name", ["add", "multiply", "divide", "maximum", "less", "pow", "atan2", "remainder"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), data=st.data())
def test_big_arrays_through_the_lanes(name: str, seed: int, data: Any) -> None:
    """Shapes above the inline threshold (work > 32,768 elements): the ops run on lane workers."""
    shape = data.draw(st.sampled_from([(200, 200), (50, 30, 30), (40_000,)]), label="shape")
    kinds = {"add": ["int32", "float32", "float64"], "multiply": ["int64", "float32"], "divide": ["float32", "float64"],
             "maximum": ["int16", "float64"], "less": ["uint8", "float32"], "pow": ["float32", "float64"],
             "atan2": ["float32", "float64"], "remainder": ["int64", "float64"]}  # fmt: skip
    dtype = data.draw(st.sampled_from(kinds[name]), label="dtype")
    rng = np.random.default_rng(seed)
    x1, x2 = _big(rng, dtype, shape), _big(rng, dtype, shape[1:])
    if name == "pow":
        x1 = xp.where(xp.isinf(x1) & (x1 < 0), xp.zeros_like(x1), x1)  # (-inf) ** y: NumPy departs from the standard
    assert_same(getattr(ap, name)(to_ap(x1), to_ap(x2)), getattr(xp, name)(x1, x2), 1e-4, name)
