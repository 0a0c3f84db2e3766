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


@settings(max_examples=80, deadline=None)
@given(array_and_index())
def test_basic_index_read_matches_numpy(case) -> None:  # type: ignore[no-untyped-def]
    values, index = case
    got = ap.array(values)[index]
    want = values[index]
    assert got.shape == np.shape(want)
    np.testing.assert_array_equal(got.numpy(), want)


@settings(max_examples=80, deadline=None)
@given(array_and_index(), st.floats(-5, 5, width=32))
def test_basic_index_write_and_write_through_view_match_numpy(case, scalar) -> None:  # type: ignore[no-untyped-def]
    values, index = case
    a = ap.array(values)
    expected = values.copy()
    a[index] = scalar
    expected[index] = scalar
    view = a[index]
    if view.ndim:  # in-place through the view (reversed slices too) changes the base, as in NumPy
        view += 1
        expected[index] += 1
    np.testing.assert_array_equal(a.numpy(), expected)


@settings(max_examples=60, deadline=None)
@given(shapes, st.data())
def test_integer_array_index_matches_numpy(shape, data) -> None:  # type: ignore[no-untyped-def]
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    axis0 = data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1, max_size=4))
    np.testing.assert_array_equal(ap.array(values)[axis0].numpy(), values[axis0])
    mask = data.draw(hnp.arrays(np.bool_, shape[:1]))
    np.testing.assert_array_equal(ap.array(values)[mask].numpy(), values[mask])


@st.composite
def two_views(draw):  # type: ignore[no-untyped-def]
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    base = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    first = draw(hnp.basic_indices(shape, allow_newaxis=False, allow_ellipsis=True))
    second = draw(hnp.basic_indices(shape, allow_newaxis=False, allow_ellipsis=True))
    return base, first, second


@settings(max_examples=80, deadline=None)
@given(two_views(), st.sampled_from(["iadd", "assign", "copyto", "flip_assign"]))
def test_overlapping_writes_through_views_match_numpy(case, how) -> None:  # type: ignore[no-untyped-def]
    """Writes through one view of a base, from another view of the same base (overlap)."""
    base, first, second = case
    a, want = ap.asarray(base), base.copy()
    target, source = a[first], a[second]
    t_np, s_np = want[first], want[second]
    if not isinstance(t_np, np.ndarray):
        return  # NumPy gives a scalar (a copy) for a full integer index; autopar a 0-d view, as torch
    if how == "flip_assign":
        source, s_np = ap.flip(source), np.flip(s_np)
    try:
        np.broadcast_shapes(s_np.shape, t_np.shape)
        if np.broadcast_shapes(s_np.shape, t_np.shape) != t_np.shape:
            raise ValueError
    except ValueError:
        return  # shapes that do not fit: NumPy raises too
    if how == "iadd":
        target += source
        t_np += s_np.copy()  # NumPy reads its operand before writing when they overlap
    elif how == "copyto" and source.shape == target.shape:
        source.copyto(target)
        t_np[...] = s_np.copy()
    else:
        target[...] = source
        t_np[...] = s_np.copy()
    np.testing.assert_array_equal(a.numpy(), want)
