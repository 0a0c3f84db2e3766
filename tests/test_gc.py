"""What the array layer does to Python's garbage collector (autopar/_gc.py): the objects alive when it
loads are frozen once; what is made later is collected as before; AUTOPAR_GC_FREEZE=0 leaves it alone.

Oracle: CPython's own ``gc`` module (freeze count, reachability through weak references).
"""

from __future__ import annotations

import gc
import weakref

import pytest

import autopar as ap
from autopar import _config, _gc
from autopar.cli import _checks


class _Node:
    """A plain object, so a weak reference can watch a cycle that holds an array."""

    def __init__(self) -> None:
        self.other: object = None
        self.array: object = None


def test_the_array_layer_froze_what_was_alive_when_it_loaded() -> None:
    ap.ones(1)  # the array layer is loaded
    assert _gc._done
    assert gc.get_freeze_count() > 10_000  # torch's modules and functions at least


def test_arrays_made_later_are_collected_in_cycles_as_before() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # a reference cycle: only the collector frees it
    a.array = ap.arange(5.0) + 1
    watch = weakref.ref(a)
    del a, b
    gc.collect()
    assert watch() is None


@pytest.mark.parametrize(("value", "freezes"), [("", True), ("1", True), ("0", False), (" 0 ", False)])
def test_freeze_once_follows_the_setting_and_freezes_once(monkeypatch: pytest.MonkeyPatch, value: str,
                                                          freezes: bool) -> None:  # fmt: skip
    calls: list[None] = []
    monkeypatch.setattr(_gc.gc, "freeze", lambda: calls.append(None))
    monkeypatch.setattr(_gc, "_done", False)
    monkeypatch.setenv("AUTOPAR_GC_FREEZE", value)
    assert _gc.freeze_once() is freezes
    assert _gc.freeze_once() is False  # once per process
    assert len(calls) == int(freezes)


def test_a_malformed_setting_is_named_with_what_it_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOPAR_GC_FREEZE", "yes")
    with pytest.raises(ValueError, match=r"AUTOPAR_GC_FREEZE='yes': expected 1 .* or 0 .*unset it"):
        _config.gc_freeze()
    problem = _checks.settings_problem()
    assert problem is not None and "AUTOPAR_GC_FREEZE" in problem
