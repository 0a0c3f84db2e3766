"""Regression tests: the twelve defects of issue 8, each as it was reported.

Each test names the defect; each would fail on the code before the op table
(aa84a24), and the mutation it catches is said where it is not obvious.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import autopar as ap


@pytest.fixture(autouse=True, params=["threaded", "naive"])
def _engine(request):  # type: ignore[no-untyped-def]
    ap.engine.set_engine(request.param)
    yield request.param
    ap.waitall()
    ap.engine.set_engine("threaded")


def test_1_maximum_and_minimum_take_python_scalars() -> None:
    x = ap.arange(-2.0, 3.0)
    assert ap.maximum(x, 0).tolist() == [0.0, 0.0, 0.0, 1.0, 2.0]  # ReLU
    assert ap.minimum(x, 0).tolist() == [-2.0, -1.0, 0.0, 0.0, 0.0]
    assert x.maximum(0.0).tolist() == [0.0, 0.0, 0.0, 1.0, 2.0]
    assert ap.maximum(0, x).dtype == ap.float32  # the scalar takes the array's dtype, on either side


def test_2_products_promote_their_inputs() -> None:
    got = ap.arange(3) @ ap.ones(3)
    assert got.dtype == np.result_type(np.int64, np.float32) and got.item() == 3.0
    a, b = ap.ones((2, 3), dtype="float32"), ap.ones((3, 2), dtype="float64")
    for result in (ap.dot(a, b), ap.mm(a, b), a @ b):
        assert result.dtype == ap.float64 and result.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_3_two_index_lists_read_and_assign() -> None:
    x = np.arange(20).reshape(4, 5)
    a = ap.asarray(x)
    assert a[[0, 2], [1, 3]].tolist() == x[[0, 2], [1, 3]].tolist()
    assert a[::-1, [0, 2]].tolist() == x[::-1, [0, 2]].tolist()  # a reversed slice next to a list
    a[[0, 2], [1, 3]] = -1
    x[[0, 2], [1, 3]] = -1
    assert a.tolist() == x.tolist()


def test_4_overlapping_in_place_updates_give_numpys_answer() -> None:
    m0 = np.arange(9.0).reshape(3, 3)
    m, want = ap.asarray(m0), m0.copy()
    m += m.T
    want += want.T
    assert m.tolist() == want.tolist()
    y, want_y = ap.arange(6), np.arange(6)
    y[1:] = y[:-1]
    want_y[1:] = want_y[:-1]
    assert y.tolist() == want_y.tolist()
    s, want_s = ap.asarray(m0), m0.copy()
    s[:] = s.T
    want_s[:] = want_s.T
    assert s.tolist() == want_s.tolist()


def test_5_a_0d_integer_array_is_an_index() -> None:
    x = ap.arange(12).reshape(3, 4)
    assert x[ap.asarray(1)].tolist() == [4, 5, 6, 7]
    assert x[ap.asarray(1), ap.asarray(2)].item() == 6 and x[ap.asarray(1), ap.asarray(2)].shape == ()
    assert x[0, ap.asarray([1, 3])].tolist() == [1, 3]  # an int next to an array counts as an array (NumPy)


def test_6_python_ints_that_do_not_fit_raise_at_the_call() -> None:
    a = ap.asarray([1], dtype="int32")
    assert (a + 7).tolist() == [8]  # fills the dispatcher's plan cache for (add, int32, int) ...
    with pytest.raises(OverflowError, match=r"add: Python integer 1099511627776 is out of bounds for .* int32 "
                                            r"\(range -2147483648\.\.2147483647\); cast the array first"):
        a + 2**40  # ... which must still check each value, and name the fix
    # The plan cache's general path (a scalar first, an assignment) checks each value too: not
    # torch's RuntimeError ("cannot be converted to type int32 without overflow") instead.
    assert (7 - a).tolist() == [6]
    with pytest.raises(OverflowError, match="subtract: Python integer 1099511627776 is out of bounds"):
        2**40 - a
    with pytest.raises(OverflowError, match="^clip: Python integer 300 is out of bounds .* int8"):
        ap.clip(ap.asarray([1], dtype="int8"), 0, 300)  # named clip, not the maximum/minimum it is made of
    for dtype, top in (("uint8", 255), ("uint64", 2**64 - 1)):  # each unsigned range's last value fits, the next does not
        assert (ap.zeros(1, dtype=dtype) + top).tolist() == [top]
        with pytest.raises(OverflowError, match=f"add: Python integer {top + 1} is out of bounds .* {dtype} "):
            ap.zeros(1, dtype=dtype) + (top + 1)
    b = ap.asarray([1, 2], dtype="int32")
    b[0] = 7
    with pytest.raises(OverflowError, match="Python integer 1099511627776 is out of bounds"):
        b[1] = 2**40
    assert b.tolist() == [7, 2]
    with pytest.raises(OverflowError):
        a += 2**40
    with pytest.raises(OverflowError):
        ap.full(2, 300, dtype="int8")


def test_7_dtypes_and_the_array_class_are_autopar_objects() -> None:
    x = ap.ones(2)
    assert x.dtype == ap.float32 and x.dtype is ap.float32
    assert x.dtype == np.float32 and x.dtype == np.dtype("float32") and x.dtype == "float32"
    assert x.dtype == torch.float32 and x.dtype != ap.float64 and ap.float32 != np.float64
    assert np.zeros(2, dtype=ap.int16).dtype == np.int16  # NumPy accepts them
    assert isinstance(x, ap.ndarray) and ap.ndarray is ap.NDArray
    with pytest.raises(TypeError, match=r"autopar.ndarray\(...\) is not how arrays are made; use autopar.array"):
        ap.ndarray((2, 3))


def test_8_host_data_is_captured_at_the_call(_engine: str) -> None:
    """Mutation caught: asarray sharing the NumPy buffer (the old default)."""
    buf = np.ones(3)
    gate = threading.Event()
    a = ap.asarray(buf)
    if _engine == "threaded":  # hold a's reader back until the buffer has changed
        a = ap.call(lambda t: (gate.wait(10), t)[1], a, shape=(3,))
    b = a * 2
    buf[:] = 5
    gate.set()
    assert b.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("copy", [None, True])
def test_8_non_native_byte_order_numpy_data_keeps_its_values(copy: bool | None) -> None:
    """NumPy data in big-endian order (files, network buffers) has the values NumPy sees
    (torch.from_numpy refuses it; catches the byte swap at asarray removed)."""
    for dtype in (">f8", ">i4", ">c8"):
        src = np.arange(-2, 3).astype(dtype)
        got = ap.asarray(src, copy=copy)
        assert got.dtype == src.dtype.newbyteorder("=") and got.tolist() == src.tolist(), dtype


def test_9_copyto_a_reversed_slice_reaches_the_base() -> None:
    x = ap.arange(5.0)
    x.copyto(x[::-1])
    assert x.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]
    y = ap.arange(6)
    view = y[::-2]
    view += 10
    assert y.tolist() == [0, 11, 2, 13, 4, 15]
    # x.copyto(array) is MXNet's: same shape only, checked at the call (np.copyto broadcasts)
    with pytest.raises(ValueError, match=r"copyto: source shape \(1,\) differs from the target array's \(5,\); reshape"):
        ap.ones(1).copyto(x)
    assert x.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]


def test_10_array_of_arrays_stacks_them() -> None:
    out = ap.array([ap.ones(2), ap.zeros(2)])
    assert out.shape == (2, 2) and out.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert ap.asarray([[ap.asarray(1), ap.asarray(2)]]).tolist() == [[1, 2]]


def test_11_asarray_of_a_tensor_with_a_device_returns() -> None:
    t = torch.arange(3.0)
    a = ap.asarray(t, device=ap.cpu(0))
    assert a.tolist() == [0.0, 1.0, 2.0] and a.device == ap.cpu(0)
    assert ap.asarray(t, device="cpu", dtype="int64").dtype == ap.int64


def test_12_errors_name_the_right_fix() -> None:
    with pytest.raises(TypeError, match=r"convert other data with autopar.asarray"):
        ap.add(ap.ones(2), "x")
    i = ap.asarray([1, 2])
    with pytest.raises(TypeError, match=r"cannot store a float32 result in a int64 array .*\(x = x \+ y\)"):
        i += 0.5
    f = ap.ones(2, dtype="float32")  # NumPy's same_kind rule: no complex into float either
    with pytest.raises(TypeError, match=r"cannot store a complex64 result in a float32 array"):
        f += 1j
    assert f.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match=r"sum: axis=1.0 must be an integer"):
        ap.ones((2, 2)).sum(axis=1.0)
    assert ap.zeros(2, 3).shape == (2, 3) and ap.ones(2, 3, dtype="int64").dtype == ap.int64  # PyTorch users
    assert (ap.asarray([7, -7]) // 0).tolist() == [0, 0]  # NumPy's answer, not a late ZeroDivisionError
    assert (ap.asarray([7, -7]) % ap.asarray([0, 0])).tolist() == [0, 0]
    with pytest.raises(ValueError, match=r"the truth value of an array of shape \(2,\) is ambiguous; use x.any\(\)"):
        bool(ap.ones(2))
    assert ap.ones(2).any().item() is True  # the method the message names exists


def test_elementwise_ops_on_a_non_contiguous_torch_tensor_store_contiguous_results() -> None:
    """The fast store path trusts contiguous inputs only (mutation caught: dropping the
    Storage.contiguous guard leaves a transposed result whose views read wrong elements)."""
    t = torch.arange(6.0).reshape(2, 3).T
    b = ap.from_torch(t) + 1
    want = t.numpy() + 1
    assert b.tolist() == want.tolist() and b[0].tolist() == want[0].tolist() and b.T[1].tolist() == want.T[1].tolist()
