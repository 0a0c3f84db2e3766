"""A NumPy user's small programs under ``import autopar.numpy as np``, each compared with NumPy itself:
the cases a cold review found wrong, and the cases that pin the drop-in's rules (dtype defaults, ``out=``,
views, ``LinAlgError`` at the call, the plan cache's mode) so that breaking one of them fails a test."""

from __future__ import annotations

import numpy
import pytest

import autopar as ap
import autopar.numpy as np


def _same(got, want) -> None:  # type: ignore[no-untyped-def]
    """``got`` (autopar) has ``want``'s (NumPy's) dtype, shape and values."""
    ref = numpy.asarray(want)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert tuple(got.shape) == ref.shape
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
