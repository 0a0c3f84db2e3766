"""A Python number keeps the precision of the array it meets, however often it comes (the plan remembers
numbers it has seen, ``_plan``'s note): every dtype pair, each operator, repeated. Oracle: NumPy 2."""

from __future__ import annotations

import operator
import warnings

import numpy
import pytest

import autopar as ap
import autopar.numpy as np

# NumPy 2's weak Python scalars (NEP 50) are the oracle; NumPy 1 cast by value
pytestmark = pytest.mark.skipif(int(numpy.__version__.split(".")[0]) < 2, reason="NumPy 2's scalar rules")

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]  # fmt: skip
SCALARS = [True, 3, 0.1, 1 / 3, 1e-300, 2.5 + 0.1j]
OPS = [operator.add, operator.sub, operator.mul, operator.truediv]
VALUES = [1, 2, 3, 0, 1]


def _numpy(fn, *args):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings(), numpy.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args)
        except (TypeError, OverflowError, numpy.exceptions.DTypePromotionError) as e:
            return e


def _check(fn, x, ref) -> None:  # type: ignore[no-untyped-def]
    """fn(x) three times (the second and third meet a remembered number) against NumPy's fn(ref)."""
    want = _numpy(fn, ref)
    for _ in range(3):
        if isinstance(want, BaseException):
            with pytest.raises((TypeError, OverflowError)):
                fn(x).numpy()
            continue
        got = fn(x)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        g = got.numpy()
        if want.dtype.kind in "fc" and want.dtype.itemsize <= 4:  # torch's float16/32 kernels may round once
            numpy.testing.assert_allclose(g, want, rtol=2e-3 if want.dtype.itemsize <= 2 else 1e-6)
        else:
            numpy.testing.assert_array_equal(g, want)  # float64 and complex128: every bit


@pytest.mark.parametrize("dtype", DTYPES)
def test_repeated_scalars_keep_the_arrays_precision(dtype: str) -> None:
    ref = numpy.asarray(VALUES).astype(dtype)
    x = np.asarray(VALUES).astype(dtype)
    for scalar in SCALARS:
        for op in OPS:
            _check(lambda a, op=op, s=scalar: op(a, s), x, ref)
            _check(lambda a, op=op, s=scalar: op(s, a), x, ref)
            if _numpy(lambda a: a.__iadd__(scalar), ref.copy()).__class__ is numpy.ndarray:
                def inplace(a, op=op, s=scalar):  # type: ignore[no-untyped-def]
                    a = a.copy()
                    a += s
                    return a

                _check(inplace, x, ref)


def test_the_issues_example_in_both_namespaces() -> None:
    for m in (ap, np):
        x = m.asarray([1.0, 2.0], dtype=m.float64)
        for _ in range(3):
            assert (x + 0.1).tolist() == [1.1, 2.1]
            assert (0.1 * x).tolist() == [0.1, 0.2]
            y = x.copy()
            y += 0.1
            assert y.tolist() == [1.1, 2.1]
