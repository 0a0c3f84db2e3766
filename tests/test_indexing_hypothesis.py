"""Random indexes against NumPy: reads, writes, and writes through views."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import autopar as ap

shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)


@st.composite
def array_and_index(draw):  # type: ignore[no-untyped-def]
    shape = draw(shapes)
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    index = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    return values, index


@settings(max_examples=150, deadline=None)
@given(array_and_index())
def test_basic_index_read_matches_numpy(case) -> None:  # type: ignore[no-untyped-def]
    values, index = case
    got = ap.array(values)[index]
    want = values[index]
    assert got.shape == np.shape(want)
    np.testing.assert_array_equal(got.numpy(), want)


@settings(max_examples=150, deadline=None)
@given(array_and_index(), st.floats(-5, 5, width=32))
def test_basic_index_write_and_write_through_view_match_numpy(case, scalar) -> None:  # type: ignore[no-untyped-def]
    values, index = case
    a = ap.array(values)
    expected = values.copy()
    a[index] = scalar
    expected[index] = scalar
    view = a[index]
    steps = [k.step for k in (index if isinstance(index, tuple) else (index,)) if isinstance(k, slice)]
    reversed_ = any(step is not None and step < 0 for step in steps)  # a copy here, not a view (docs/guide.md)
    if view.ndim and not reversed_:  # in-place through the view changes the base, as in NumPy
        view += 1
        expected[index] += 1
    np.testing.assert_array_equal(a.numpy(), expected)


@settings(max_examples=100, deadline=None)
@given(shapes, st.data())
def test_integer_array_index_matches_numpy(shape, data) -> None:  # type: ignore[no-untyped-def]
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    axis0 = data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=4))
    np.testing.assert_array_equal(ap.array(values)[axis0].numpy(), values[axis0])
    mask = data.draw(hnp.arrays(np.bool_, shape[:1]))
    np.testing.assert_array_equal(ap.array(values)[mask].numpy(), values[mask])
