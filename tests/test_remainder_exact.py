"""``%``, ``remainder`` and ``fmod`` are exact where ``|x1 / x2|`` overflows.

torch's CPU vector loop for ``fmod`` and ``remainder`` gives NaN there, but only
for elements that reach the vector loop (8 float64 on AVX-512, 4 on AVX2), so
``2.0**1023 * (1 + 2**-51) % 0.5`` was 0.0 alone and NaN in a (2, 4) array --
the conformance suite's intermittent failure. NumPy (C's exact ``fmod``) is
the oracle; every array here is long enough to reach the vector loop.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
import torch

import autopar as ap

BIG = float.fromhex("0x1.0000000000002p+1023")  # prints as 8.98846567e+307, as 2**1023 does


@pytest.fixture(autouse=True, params=["threaded", "naive"])
def _engine(request):  # type: ignore[no-untyped-def]
    ap.engine.set_engine(request.param)
    yield request.param
    ap.waitall()
    ap.engine.set_engine("threaded")


def _same(got: ap.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)  # NaN where NaN; no tolerance: fmod is exact


def test_the_reported_example_gives_zero() -> None:
    got = ap.asarray(np.full((2, 4), BIG)) % 0.5
    assert got.tolist() == [[0.0] * 4] * 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", [operator.mod, ap.remainder, ap.fmod, operator.floordiv])
def test_operators_with_a_python_scalar_on_either_side_where_the_quotient_overflows(dtype: str, op: object) -> None:
    info = np.finfo(dtype)
    huge = np.array([BIG if dtype == "float64" else 3.0e38, info.max, -info.max / 3, 1.5, -7.25, 0.0, 1e-3, 4.0] * 2,
                    dtype=dtype)  # fmt: skip
    tiny = np.array([info.tiny * 3, -info.tiny * 5, 1e-30, -2.5e-31, 0.75, 3.0, -9.0, 1e-20] * 2, dtype=dtype)
    np_op = {ap.remainder: np.remainder, ap.fmod: np.fmod}.get(op, op)  # type: ignore[call-overload]
    with np.errstate(all="ignore"):
        for x, scalar in ((huge, 0.5), (huge, -1e-3), (tiny, 100.0), (tiny, -3e30)):
            _same(op(ap.asarray(x), scalar), np_op(x, x.dtype.type(scalar)))  # type: ignore[operator]
            _same(op(scalar, ap.asarray(x)), np_op(x.dtype.type(scalar), x))  # type: ignore[operator]

def test_two_arrays_of_extreme_values() -> None:
    rng = np.random.default_rng(7)
    exponents = rng.integers(-1070, 1023, size=(2, 64))
    x1, x2 = np.ldexp(rng.uniform(-1, 1, size=(2, 64)), exponents)
    with np.errstate(all="ignore"):
        _same(ap.asarray(x1) % ap.asarray(x2), np.remainder(x1, x2))
        _same(ap.fmod(ap.asarray(x1), ap.asarray(x2)), np.fmod(x1, x2))
        _same(ap.asarray(x1) // ap.asarray(x2), np.floor_divide(x1, x2))


def test_nan_inputs_infinite_dividends_and_zero_divisors_still_give_nan() -> None:
    x1 = np.array([np.nan, np.inf, -np.inf, 1.0, 2.0, np.nan, 5.0, BIG], dtype="float64")
    x2 = np.array([1.0, 2.0, 0.5, 0.0, np.nan, 0.0, np.inf, 1e-300])
    with np.errstate(all="ignore"):
        _same(ap.asarray(x1) % ap.asarray(x2), np.remainder(x1, x2))
        _same(ap.fmod(ap.asarray(x1), ap.asarray(x2)), np.fmod(x1, x2))


def test_bfloat16_where_the_float32_quotient_overflows() -> None:
    x = ap.from_torch(torch.full((32,), 3e38, dtype=torch.bfloat16))
    divisor = torch.tensor(1e-3, dtype=torch.bfloat16)
    want = torch.tensor(np.fmod(float(x.torch()[0]), float(divisor)))
    assert torch.equal((x % 1e-3).torch(), want.to(torch.bfloat16).expand(32))
