"""Helpers of the Array API conformance suite: array-api-strict as the oracle.

Inputs are drawn by hypothesis's Array API strategies over array-api-strict
(the standard's reference implementation, pinned to 2023.12); the same values
go to autopar; results must agree in shape, dtype and value (NaN where NaN,
±inf where ±inf, ±0 as equal).
"""

from __future__ import annotations

from typing import Any

import array_api_strict as xp
import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import autopar as ap

xp.set_array_api_strict_flags(api_version="2023.12")
xps = make_strategies_namespace(xp, api_version="2023.12")

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))

# uint64 values of 2**63 and above are outside what autopar computes exactly (docs/arrays.md).
_UINT64_SAFE = {"max_value": 2**63 - 1}
CATEGORIES = {
    "any": xps.scalar_dtypes,
    "numeric": xps.numeric_dtypes,
    "real numeric": xps.real_dtypes,
    "integer": lambda: st.one_of(xps.integer_dtypes(), xps.unsigned_integer_dtypes()),
    "integer or boolean": lambda: st.one_of(xps.integer_dtypes(), xps.unsigned_integer_dtypes(), xps.boolean_dtypes()),
    "floating-point": lambda: st.one_of(xps.floating_dtypes(), xps.complex_dtypes()),
    "real floating-point": xps.floating_dtypes,
    "boolean": xps.boolean_dtypes,
    "complex": xps.complex_dtypes,
}
SHAPES = xps.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def elements(dtype: Any) -> Any:
    if dtype == xp.uint64:
        return _UINT64_SAFE
    if dtype in (xp.complex64, xp.complex128):  # branch cuts and overflow of complex math differ between libms
        return st.complex_numbers(max_magnitude=1e3, allow_nan=False, allow_infinity=False, allow_subnormal=False,
                                  width=64 if dtype == xp.complex64 else 128)  # fmt: skip
    if dtype in (xp.float32, xp.float64):  # subnormals depend on the CPU's flush-to-zero mode
        return {"allow_subnormal": False}
    return None


@st.composite
def arrays(draw: Any, category: str = "any", shape: Any = None, dtype: Any = None) -> Any:
    dt = draw(CATEGORIES[category]()) if dtype is None else dtype
    sh = draw(SHAPES) if shape is None else shape
    return draw(xps.arrays(dt, sh, elements=elements(dt)))


def same_kind_dtypes(category: str) -> Any:
    """Two dtypes the standard promotes (the same kind)."""

    @st.composite
    def pair(draw: Any) -> Any:
        first = draw(CATEGORIES[category]())
        kind = next(k for k in ("bool", "signed integer", "unsigned integer", "real floating", "complex floating")
                    if xp.isdtype(first, k))  # fmt: skip
        if kind in ("signed integer", "unsigned integer"):
            options = [d for d in (xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.uint16, xp.uint32, xp.uint64)
                       if xp.isdtype(d, kind)]  # fmt: skip
        else:
            options = [d for d in (xp.bool, xp.float32, xp.float64, xp.complex64, xp.complex128) if xp.isdtype(d, kind)]
        return first, draw(st.sampled_from(options))

    return pair()


def to_ap(x: Any) -> Any:
    return ap.asarray(np.asarray(x._array))


def to_np(x: Any) -> np.ndarray:
    if isinstance(x, ap.ndarray):
        return x.numpy()
    return np.asarray(x._array)


def dtype_name(x: Any) -> str:
    return str(to_np(x).dtype) if not isinstance(x, ap.ndarray) else x.dtype.name


def assert_same(ours: Any, theirs: Any, rtol: float | None = None, what: str = "") -> None:
    """Same shape, same dtype, same values (NaNs and infinities where the oracle has them)."""
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), what
        for o, t in zip(ours, theirs):
            assert_same(o, t, rtol, what)
        return
    assert isinstance(ours, ap.ndarray), (what, type(ours))
    want = to_np(theirs)
    got = ours.numpy()
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert ours.dtype == want.dtype, (what, ours.dtype, want.dtype)
    if rtol is None:
        rtol = 2e-5 if want.dtype in (np.float32, np.complex64) else 1e-10
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-3, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)
