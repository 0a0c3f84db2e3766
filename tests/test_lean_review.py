"""Review of the lean eager path: what its own tests let through.

A torch mode that answers tensor subclasses must keep later kernels off the engine lock, whichever path
stored its result, and one that answers another dtype must not leave it in an array's storage; the
general path's pushes keep their sizes apart; data-dependent shapes, reshape's whole-array shortcut and
the functions' direct path keep NumPy's answers. Oracles: the engine lock's owner seen from inside a
kernel, ``engine/_bulk.py``'s ``pure_allowed``, the ``pure`` flags pushed, NumPy and torch.
"""

from __future__ import annotations

from typing import Any

import numpy
import pytest
import torch
from torch.overrides import TorchFunctionMode

import autopar as ap
from _helpers import pure_flags
import autopar.numpy as anp
from autopar import engine
from autopar.engine import _bulk


@pytest.fixture
def pure_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a process that has met no tensor subclass (another test may have made one)."""
    monkeypatch.setattr(_bulk, "pure_allowed", True)


def _lock_owned() -> bool:
    return bool(engine.current_engine()._lock._is_owned())  # type: ignore[union-attr]


class _Sub(torch.Tensor):
    """A subclass whose Python code notes, for each kernel it meets, whether the engine lock is held."""

    owned: list[bool] = []

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        cls.owned.append(_lock_owned())
        return super().__torch_function__(func, types, args, kwargs)


class _Subclassing(TorchFunctionMode):
    """A mode that answers every kernel's tensor as a ``_Sub``."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if isinstance(out, tuple) and all(type(t) is torch.Tensor for t in out):
            return tuple(t.as_subclass(_Sub) for t in out)
        return out.as_subclass(_Sub) if type(out) is torch.Tensor else out


@pytest.mark.parametrize("op", [lambda x: x + 1, lambda x: x * x, lambda x: 1 - x, lambda x: -x, ap.exp],
                         ids=["x + 1", "x * x", "1 - x", "-x", "exp"])  # fmt: skip
def test_a_subclass_a_mode_answered_on_a_lean_path_keeps_later_kernels_off_the_lock(
        threaded: Any, pure_allowed: None, op: Any) -> None:  # fmt: skip
    x = ap.arange(4.0)
    with _Subclassing():
        y = op(x)
    y.wait_to_read()
    _Sub.owned = []
    z = y + 1  # the stored _Sub's __torch_function__ runs in this kernel: never under the lock
    assert z.tolist() == (op(x) + 1).tolist()
    assert _Sub.owned and not any(_Sub.owned)
    assert not _bulk.pure_allowed


def test_a_subclass_a_mode_answered_as_one_of_several_results_forbids_pure_kernels(
        threaded: Any, pure_allowed: None) -> None:  # fmt: skip
    x = anp.asarray([1.5, -2.25])
    x.wait_to_read()  # the lane is free: frexp runs now, on this thread, where the mode is (modes are per thread)
    with _Subclassing():
        parts = anp.frexp(x)
    ap.waitall()
    assert [p.tolist() for p in parts] == [[0.75, -0.5625], [1, 2]]
    assert not _bulk.pure_allowed



def test_a_plan_first_made_under_a_mode_keeps_the_lean_path_after_it(
        threaded: Any, pure_allowed: None, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A plan is kept for later calls: the mode must not decide it (it answered an alias: exp lost its
    lean path, and so its pure run, for the rest of the process)."""
    x = ap.arange(7.0, dtype=ap.float64)  # a shape and dtype no other test plans
    with _Subclassing():
        ap.exp(x).wait_to_read()
        (x * x).wait_to_read()
    monkeypatch.setattr(_bulk, "pure_allowed", True)
    flags = pure_flags(monkeypatch)
    assert ap.exp(x).tolist() == torch.exp(torch.arange(7.0, dtype=torch.float64)).tolist()
    assert (x * x).tolist() == [float(i * i) for i in range(7)]
    assert flags == [True, True]


def test_a_function_of_one_array_above_a_few_microseconds_is_not_pure(
        threaded: Any, pure_allowed: None, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """As for the operators (test_pure_ops): other threads must not wait that long for the lock."""
    x = ap.arange(10_000.0)
    x.wait_to_read()
    flags = pure_flags(monkeypatch)
    y = ap.exp(x * 0.0)
    assert flags == [False, False]
    assert y.tolist()[:2] == [1.0, 1.0]


def test_a_large_write_through_a_view_is_an_engine_op_not_a_small_one(
        threaded: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    x = ap.zeros((200, 200))
    x.wait_to_read()
    flags = pure_flags(monkeypatch)
    v = x[:, 1:]
    v += 1.0  # the general path's bind_into: 39,800 elements are no small op
    assert flags == []
    assert float(ap.sum(x)) == 200 * 199


class _Float64(TorchFunctionMode):
    """A mode that answers float32 results in float64 (as an autocast-like mode might)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if isinstance(out, tuple):
            return tuple(t.double() if type(t) is torch.Tensor and t.dtype is torch.float32 else t for t in out)
        return out.double() if type(out) is torch.Tensor and out.dtype is torch.float32 else out


@pytest.mark.parametrize("n", [3, 50_000], ids=["small", "large"])
def test_a_result_a_mode_answers_in_another_dtype_is_stored_in_the_arrays_dtype(threaded: Any, n: int) -> None:
    x, y = ap.arange(float(n)), ap.ones(n)
    for warm in (x + y, ap.exp(x), x * 2, 1 - x):  # the plans, made with no mode (exact: no cast planned)
        warm.wait_to_read()
    with _Float64():
        results = [x + y, ap.exp(x), x * 2, 1 - x]
    tx = torch.arange(float(n))
    for r, expected in zip(results, [tx + 1, torch.exp(tx), tx * 2, 1 - tx]):
        assert r.dtype == ap.float32
        assert r._storage.tensor.dtype is torch.float32  # the storage's invariant: its dtype's tensor
        assert torch.equal(torch.as_tensor(r.tolist(), dtype=torch.float32)[:3], expected[:3])


def test_a_result_of_the_general_path_a_mode_answers_in_another_dtype_is_stored_in_the_arrays_dtype(
        threaded: Any) -> None:  # fmt: skip
    x, y = ap.arange(3.0), ap.ones((3, 3))
    for warm in (ap.sum(x), y @ y, y.T + y, anp.frexp(x)[0]):
        warm.wait_to_read()
    with _Float64():
        results = [ap.sum(x), y @ y, y.T + y, *anp.frexp(x)]
    assert [r._storage.tensor.dtype for r in results] == [r.dtype.torch for r in results]
    assert [r.tolist() for r in results[:3]] == [3.0, [[3.0] * 3] * 3, [[2.0] * 3] * 3]


def test_a_data_dependent_result_has_its_shape_at_once_as_numpy_gives() -> None:
    """Off the one-result push (``_eager._bind_one``): the call waits for the data and settles the shape."""
    values, counts, repeats = [0.0, 2.0, 3.0, -1.0], [0, 1, 1, 3], [1, 0, 2, 1]
    x, nx = ap.asarray(values), numpy.asarray(values, dtype=numpy.float32)
    masked, bins, repeated = x[x > 1], anp.bincount(anp.asarray(counts)), ap.repeat(x, ap.asarray(repeats))
    expected = [nx[nx > 1], numpy.bincount(counts), numpy.repeat(nx, repeats)]
    assert [r.shape for r in (masked, bins, repeated)] == [e.shape for e in expected]
    assert [r.tolist() for r in (masked, bins, repeated)] == [e.tolist() for e in expected]


def test_reshape_of_a_whole_strided_storage_reads_it_in_order_as_numpy_does() -> None:
    """The whole-array fast path of reshape is for a C-contiguous storage only; a tensor from torch may
    be a transposed one."""
    t = torch.arange(6.0).reshape(2, 3).T
    x = ap.from_torch(t)
    assert ap.reshape(x, (6,)).tolist() == t.numpy().reshape(6).tolist()
    assert x.reshape((3, 2)).tolist() == t.numpy().reshape(3, 2).tolist()


def test_reshape_to_negative_sizes_is_refused_as_numpy_does() -> None:
    x = ap.arange(6.0)
    with pytest.raises(ValueError):
        numpy.arange(6.0).reshape((-2, -3))
    with pytest.raises(ValueError, match="-2|-3|negative"):
        ap.reshape(x, (-2, -3))


def test_a_numpy_function_of_one_list_converts_it_first() -> None:
    assert anp.exp([0.0, 1.0]).tolist() == numpy.exp([0.0, 1.0]).tolist()
    assert anp.negative((1, 2)).tolist() == [-1, -2]


@pytest.mark.parametrize("policy", ["threaded", "naive"])
def test_a_write_after_a_segment_that_opened_reading_the_var_is_waited_for(policy: str) -> None:
    """z = y + 1 opens a segment behind a long op (it reads y); y += 1 must not join that segment as a
    write the segment does not hold, or y's reader does not wait for it (bulking's segment rule)."""
    engine.set_engine(policy)
    try:
        a = ap.ones((600, 600))
        y = ap.ones(4)
        y.wait_to_read()
        for _ in range(3):
            a = a @ a  # the compute lane is busy: the small ops below are bulked
        z = y + 1
        y += 1
        assert y.tolist() == [2.0] * 4
        assert z.tolist() == [2.0] * 4
        ap.waitall()
    finally:
        engine.set_engine("threaded")
