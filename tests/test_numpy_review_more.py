"""More of the cold review's NumPy programs (``test_numpy_review``'s companion): ``unique`` with NaNs."""

from __future__ import annotations

import numpy
import pytest

import autopar.numpy as np


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("equal_nan", [True, False])
def test_unique_collapses_nans_as_numpy_2(dtype: str, equal_nan: bool) -> None:
    """NumPy 2's unique takes all NaNs as one value (equal_nan=True, the default): values, first index,
    inverse and counts; equal_nan=False keeps each."""
    data = numpy.array([3.0, numpy.nan, 1.0, numpy.nan, 3.0, numpy.nan], dtype=dtype)
    for flags in ({}, {"return_index": True, "return_inverse": True, "return_counts": True}, {"return_counts": True}):
        want = numpy.unique(data, equal_nan=equal_nan, **flags)
        got = np.unique(np.array(data), equal_nan=equal_nan, **flags)
        for g, w in zip(got, want) if flags else [(got, want)]:
            assert g.dtype == w.dtype and tuple(g.shape) == w.shape
            numpy.testing.assert_array_equal(numpy.asarray(g), w)
    clean = numpy.array([2.0, 1.0, 2.0], dtype=dtype)  # no NaN: as before
    numpy.testing.assert_array_equal(numpy.asarray(np.unique(np.array(clean))), numpy.unique(clean))


def test_bincount_of_booleans_counts_false_and_true() -> None:
    """NumPy counts a boolean array as 0s and 1s (np.bincount(mask), weights too)."""
    mask = numpy.array([True, False, True, True])
    for kwargs in ({}, {"minlength": 4}, {"weights": numpy.array([0.5, 1.0, 2.0, 3.0])}):
        ours = {k: np.array(v) if isinstance(v, numpy.ndarray) else v for k, v in kwargs.items()}
        got, want = np.bincount(np.array(mask), **ours), numpy.bincount(mask, **kwargs)
        assert got.dtype == want.dtype
        numpy.testing.assert_array_equal(numpy.asarray(got), want)


def test_legacy_normal_and_uniform_take_array_parameters() -> None:
    """np.random.normal(mu, sigma) and uniform(low, high) with arrays, as NumPy programs write them (the
    Generator's and the legacy exponential/poisson already did); seeded by np.random.seed."""
    np.random.seed(5)
    x = numpy.asarray(np.random.normal(np.array([0.0, 10.0]), np.array([1.0, 100.0]), size=(20000, 2)))
    np.random.seed(5)
    again = numpy.asarray(np.random.normal(np.array([0.0, 10.0]), np.array([1.0, 100.0]), size=(20000, 2)))
    numpy.testing.assert_array_equal(x, again)
    assert x.dtype == numpy.float64 and x.shape == (20000, 2)
    numpy.testing.assert_allclose(x.std(axis=0), [1.0, 100.0], rtol=0.05)
    u = numpy.asarray(np.random.uniform([0.0, 10.0], np.array([1.0, 110.0]), (20000, 2)))
    assert (u.min(axis=0) >= [0.0, 10.0]).all() and (u.max(axis=0) < [1.0, 110.0]).all()
    assert np.random.normal(np.zeros(3)).shape == (3,)  # size=None: the parameters' shape, as NumPy's


def test_assigning_shape_reshapes_in_place_as_numpy_or_says_why_not() -> None:
    """``x.shape = ...`` changed what ``.shape`` said but not the data's layout (ops then saw another
    array than ``numpy()`` showed). Now as NumPy: the same data in the new shape, or an AttributeError."""
    ours, theirs = np.arange(6.0), numpy.arange(6.0)
    for shape in [(3, 2), (-1,), (2, 1, 3), 6]:
        ours.shape = shape
        theirs.shape = shape
        assert ours.shape == theirs.shape
        numpy.testing.assert_array_equal((ours + 1).numpy(), theirs + 1)
        numpy.testing.assert_array_equal(ours.numpy(), theirs)
    transposed = np.arange(6.0).reshape(2, 3).T
    with pytest.raises(AttributeError, match="without a copy"):
        transposed.shape = (6,)  # numpy.arange(6.).reshape(2, 3).T.shape = (6,) raises too
    assert transposed.shape == (3, 2)
    with pytest.raises(ValueError):
        ours.shape = (4,)
