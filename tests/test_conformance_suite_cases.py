"""Cases the official array-api-tests suite found (issue 8): each is checked here
against array-api-strict (2023.12), the standard's reference implementation, or
NumPy where the reference does not implement the case -- never against the suite
itself, which stays outside the repository (bench/array_api_tests.py runs it)."""

from __future__ import annotations

import array_api_strict as xp
import numpy as np
import pytest
from _conformance import assert_same, to_ap, to_np

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
