"""Small ops run now under the engine lock only when *pure* (``engine/_bulk.py``'s note): the lean array
paths promise it for a torch kernel of plain tensors with no torch mode active, and nothing else.

Oracles: the engine's own lock (``_is_owned`` seen from inside the kernel), the naive engine's outcomes
(stored failures, named), torch's modes, and ``Storage.__init__`` for the fast storage constructor.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import autopar as ap
from _helpers import pure_flags
from autopar import engine
from autopar.arrays import _views
from autopar.devices import cpu
from autopar.engine import _bulk, _failures


@pytest.fixture
def pure_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a process that has met no tensor subclass (another test may have made one)."""
    monkeypatch.setattr(_bulk, "pure_allowed", True)


class Boom(Exception):
    pass


def _lock_owned() -> bool:
    return bool(engine.current_engine()._lock._is_owned())  # type: ignore[union-attr]


# -- the engine side ---------------------------------------------------------------------------------


@pytest.mark.parametrize("pure", [True, False], ids=["pure", "not pure"])
def test_a_small_op_run_now_holds_the_lock_only_when_pure(threaded: Any, pure_allowed: None, pure: bool) -> None:
    eng = engine.current_engine()
    owned: list[bool] = []
    a, fresh = engine.Var("a"), engine.Var("fresh")
    eng.push_small(lambda: owned.append(_lock_owned()), (), (), (a,), cpu(0), "now", "compute", False, None,
                   (fresh,), pure)  # fmt: skip
    assert owned == [pure]
    assert (a.version, a.pending_writes, fresh.version, fresh.pending_writes) == (1, 0, 1, 0)
    assert not a._writing and not a._reading


def test_engine_forbid_pure_kernels_keeps_every_kernel_off_the_lock(threaded: Any, pure_allowed: None) -> None:
    engine.forbid_pure_kernels()
    owned: list[bool] = []
    engine.current_engine().push_small(lambda: owned.append(_lock_owned()), (), (), (engine.Var(),), cpu(0), "now",
                                       "compute", False, None, (), True)  # fmt: skip
    assert owned == [False]


@pytest.mark.parametrize("error", [Boom("pure fails"), KeyboardInterrupt()], ids=["exception", "ctrl-c"])
def test_a_pure_op_that_raises_fails_its_writes_as_any_op_run_now(eng: Any, pure_allowed: None,
                                                                   error: BaseException) -> None:  # fmt: skip
    target, fresh, later = engine.Var("t"), engine.Var("f"), engine.Var("later")

    def boom() -> None:
        raise error

    push = engine.current_engine().push_small
    if isinstance(error, Exception):
        push(boom, (), (), (target,), cpu(0), "boom", "compute", False, None, (fresh,), True)
    else:
        with pytest.raises(KeyboardInterrupt):  # raised again to the caller, once recorded
            push(boom, (), (), (target,), cpu(0), "boom", "compute", False, None, (fresh,), True)
    for var in (target, fresh):
        assert var.failure is not None and var.failure.op_name == "boom"
        assert var.pending_writes == 0
    # the next op reading the failed var is skipped with the same failure; an overwrite clears it
    push(lambda: None, (), (target,), (later,), cpu(0), "reader", "compute", False, None, (), True)
    engine.current_engine().drain()
    assert later.failure is target.failure
    push(lambda: None, (), (), (target,), cpu(0), "overwrite", "compute", False, None, (), True)
    engine.current_engine().drain()
    assert target.failure is None
    _failures.forget_unobserved()


# -- the array side ------------------------------------------------------------------------------------



def _lean_ops(x: Any, y: Any) -> list[Any]:
    x + 1
    1 - x
    x * y
    ap.exp(x)
    x += y
    x += 2
    return x.tolist()


def test_the_lean_paths_are_pure_with_plain_tensors_and_no_mode(threaded: Any, pure_allowed: None,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    x, y = ap.arange(4.0), ap.ones(4)
    flags = pure_flags(monkeypatch)
    assert _lean_ops(x, y) == [3.0, 4.0, 5.0, 6.0]
    assert flags == [True] * 6


def test_a_small_op_of_more_than_a_few_microseconds_is_not_pure(threaded: Any, pure_allowed: None,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Work above THREADED_WORK (a kernel of up to ~20 us): other threads must not wait that long for the lock."""
    x, y = ap.arange(10_000.0), ap.ones(10_000)
    flags = pure_flags(monkeypatch)
    x + 1
    x * y
    x += y
    assert flags == [False] * 3
    assert x.tolist()[:3] == [1.0, 2.0, 3.0]


class _Functions(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


class _Dispatch(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("mode", [_Functions, _Dispatch, lambda: torch.device("cpu")],
                         ids=["function mode", "dispatch mode", "torch.device"])  # fmt: skip
def test_no_lean_op_is_pure_while_a_torch_mode_is_active(threaded: Any, pure_allowed: None, mode: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    x, y = ap.arange(4.0), ap.ones(4)
    flags = pure_flags(monkeypatch)
    with mode():
        values = _lean_ops(x, y)
    assert values == [3.0, 4.0, 5.0, 6.0]
    assert flags and not any(flags)


def test_a_mode_that_waits_for_another_lane_never_stalls_it(threaded: Any, pure_allowed: None) -> None:
    """A mode's Python code runs inside the kernel: it may wait for another thread that pushes work (the
    tensor-subclass test of the engine's faults, with a mode instead)."""
    other = threading.Event()
    seen: list[bool] = []

    class Waits(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if getattr(func, "__name__", "") == "add" and not seen:
                helper = threading.Thread(target=lambda: engine.push(other.set, writes=[engine.Var()], lane="copy"))
                helper.start()
                seen.append(other.wait(5))
                helper.join(5)
            return func(*args, **(kwargs or {}))

    x = ap.ones(2)
    (x + 1).wait_to_read()  # the lane exists: the next small op may run now
    with Waits():
        y = x + 1
    assert y.tolist() == [2.0, 2.0]
    assert seen == [True], "another lane could not queue work while the kernel ran"


class _Sub(torch.Tensor):
    pass


def test_a_tensor_subclass_given_to_autopar_forbids_pure_kernels(threaded: Any, pure_allowed: None) -> None:
    ap.from_torch(torch.ones(2))
    ap.asarray(torch.ones(2))
    assert _bulk.pure_allowed  # plain tensors: nothing changes
    ap.from_torch(torch.ones(2).as_subclass(_Sub))
    assert not _bulk.pure_allowed


def test_a_user_functions_tensor_subclass_forbids_pure_kernels(threaded: Any, pure_allowed: None) -> None:
    ap.call(lambda t: t * 2, ap.ones(2), shape=(2,)).wait_to_read()
    assert _bulk.pure_allowed
    ap.call(lambda t: (t * 2).as_subclass(_Sub), ap.ones(2), shape=(2,)).wait_to_read()
    assert not _bulk.pure_allowed


def test_a_fresh_storage_has_every_field_storage_init_gives() -> None:
    dtype, device = ap.ones(1)._dtype, cpu(0)
    slow, fast = _views.Storage((2, 3), dtype, device), _views.Storage.fresh((2, 3), dtype, device)
    slots = [s for cls in type(slow).__mro__ for s in getattr(cls, "__slots__", ()) if s not in ("__dict__", "__weakref__")]
    assert len(slots) > 10
    for name in slots:
        if name != "id":
            assert getattr(fast, name) == getattr(slow, name), name
    assert fast.id > slow.id  # from the same counter
    assert type(fast) is _views.Storage and fast.__dict__ == {}  # no rarely-set field made
