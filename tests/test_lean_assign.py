"""Index assignment's lean path (``x[k] = 3``, ``x[2:6] = y``) against the general path and NumPy.

The oracle for values is NumPy; for failures and what the engine sees, the general path itself
(the lean path switched off), which the rest of the suite checks against NumPy and the contract.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

import autopar as ap
from autopar.arrays import _lean_assign

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]
VALUES = [True, False, 0, 1, -1, 300, -129, 2**31, 2**63 - 1, 2**63, 2**70, 0.1, -2.7, 1e5, 1e40, 3.3e38,
          float("inf"), float("nan")]  # fmt: skip
KEYS = [0, -1, 5, slice(None), slice(2, 6), slice(None, None, -1), slice(7, 1, -2), slice(3, 3), (slice(1, 4),)]


@pytest.fixture
def general(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Run a block with the lean path switched off."""

    class Switch:
        def __enter__(self) -> None:
            monkeypatch.setattr(_lean_assign, "assign", lambda a, key, value: False)

        def __exit__(self, *exc: object) -> None:
            monkeypatch.undo()

    return Switch()


def _outcome(dtype: str, key: object, value: object) -> tuple[str, object]:
    x = ap.arange(8).astype(dtype)
    try:
        x[key] = value
    except Exception as error:  # raised at the call
        return "call", (type(error), str(error))
    try:
        got = x.numpy()
        return "value", (got.astype(np.float64) if dtype == "bfloat16" else got).tolist()
    except Exception as error:  # raised at the read: the op failed (the message names it and torch's words)
        return "read", (type(error), str(error).splitlines()[0])


def test_every_number_assignment_is_what_the_general_path_gives(general) -> None:  # type: ignore[no-untyped-def]
    pushed = 0
    for dtype, key, value in itertools.product(DTYPES, KEYS, VALUES):
        x = ap.arange(8).astype(dtype)
        pushed += _lean_assign.assign(x, key, value)
        lean = _outcome(dtype, key, value)
        with general:
            slow = _outcome(dtype, key, value)
        assert str(lean) == str(slow), (dtype, key, value, lean, slow)
    ap.waitall()
    assert pushed > len(DTYPES) * len(KEYS) * 5  # the lean path did take most of them


@pytest.mark.parametrize("key", [3, slice(1, 6, 2), slice(None, None, -1), (1, slice(None)), (slice(0, 2), 2)])
def test_values_match_numpy_for_numbers_and_arrays(key: object) -> None:
    rng = np.random.default_rng(0)
    want = rng.standard_normal((4, 5)).astype(np.float32) if type(key) is tuple else \
        rng.standard_normal(8).astype(np.float32)  # fmt: skip
    x = ap.asarray(want)
    want[key] = 2.5  # type: ignore[index]
    x[key] = 2.5
    np.testing.assert_array_equal(x.numpy(), want)
    part = np.asarray(want[key], dtype=np.float32)  # type: ignore[index]
    source = rng.standard_normal(part.shape).astype(np.float32)
    want[key] = source  # type: ignore[index]
    x[key] = ap.asarray(source)
    np.testing.assert_array_equal(x.numpy(), want)


def test_an_index_out_of_range_raises_at_the_call_as_the_general_path_does(general) -> None:  # type: ignore[no-untyped-def]
    x = ap.zeros(4)
    with pytest.raises(IndexError) as lean:
        x[4] = 1.0
    with general, pytest.raises(IndexError) as slow:
        x[4] = 1.0
    assert str(lean.value) == str(slow.value)


def _after_a_failure(key: object) -> tuple[str, str]:
    def boom() -> None:
        raise ValueError("made to fail")

    x = ap.zeros(4)
    ap.engine.push(boom, writes=(x._storage,))
    x[key] = 7.0
    outcomes = []
    for observe in (x.numpy, ap.waitall):
        try:
            got = observe()
            outcomes.append("ok" if got is None else str(got.tolist()))
        except ValueError as error:
            outcomes.append(str(error).splitlines()[0])
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize("key", [2, slice(1, 3), slice(None)])
def test_a_partial_write_keeps_a_failure_and_an_overwrite_clears_it(key: object, general) -> None:  # type: ignore[no-untyped-def]
    lean = _after_a_failure(key)
    with general:
        slow = _after_a_failure(key)
    assert lean == slow
    if key == slice(None):
        assert lean[0] == "[7.0, 7.0, 7.0, 7.0]"
    else:
        assert "made to fail" in lean[0]


def test_an_array_value_is_read_after_its_pending_write_and_not_the_targets_own_memory(eng) -> None:  # type: ignore[no-untyped-def]
    x = ap.zeros(6)
    y = ap.ones(3)
    y.wait_to_read()
    gate = threading.Event()
    if type(eng.current_engine()).__name__ == "NaiveEngine":
        gate.set()  # the naive engine runs each op at its push
    ap.set_cpu_devices(2)
    try:  # pending until set, on another device's lane (not queued ahead of the assignment on its own)
        ap.engine.push(lambda: (gate.wait(), y._storage.tensor.mul_(5)), writes=(y._storage,), device=ap.cpu(1))
        x[1:4] = y
        gate.set()
        y += 1  # pushed after: never seen by the assignment
        np.testing.assert_array_equal(x.numpy(), [0, 5, 5, 5, 0, 0])
    finally:
        gate.set()
        ap.waitall()
        ap.set_cpu_devices(1)
    x[0:3] = x[3:6]  # the target's own memory: the general path, which copies first
    np.testing.assert_array_equal(x.numpy(), [5, 0, 0, 5, 0, 0])
    assert not _lean_assign.assign(x, slice(0, 3), x[3:6])
    assert not _lean_assign.assign(x, slice(0, 3), ap.ones(3, dtype="float64"))  # a cast: the general path
    assert not _lean_assign.assign(x, slice(0, 3), ap.ones(1))  # a broadcast: the general path
    assert _lean_assign.assign(x, slice(0, 3), ap.ones(3))


def test_recorded_arrays_and_traced_functions_take_the_general_path() -> None:
    w = ap.ones(3, requires_grad=True)
    with ap.autograd.record():
        (w * 2).sum().backward()
    assert not _lean_assign.assign(w, 0, 1.0)  # a leaf: the general path refuses (or allows) the write
    assert not _lean_assign.assign(ap.zeros(3), slice(None), w)
    assert _lean_assign.assign(ap.zeros(3), 0, 1.0)  # gradients elsewhere in the program change nothing here

    seen = []

    @ap.capture(mode="replay")
    def f(x):  # type: ignore[no-untyped-def]
        seen.append(_lean_assign.assign(x, 0, 1.0))
        x[1] = 2.0
        return x

    x = ap.zeros(3)
    f(x)
    f(x)
    np.testing.assert_array_equal(x.numpy(), [0, 2, 0])
    assert seen == [False]  # traced once, with the tracer active


def test_windows_of_one_outside_tensor_are_assigned_as_if_through_a_copy() -> None:
    import torch

    t = torch.arange(10, dtype=torch.float32)
    a, b = ap.from_torch(t[0:5]), ap.from_torch(t[2:7])  # two arrays over overlapping memory
    want = np.arange(10, dtype=np.float32)
    want[0:5] = want[2:7].copy()
    a[0:5] = b
    ap.waitall()
    np.testing.assert_array_equal(t.numpy(), want)
