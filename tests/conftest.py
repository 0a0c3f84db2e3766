"""Shared fixtures: every engine test runs on both policies."""

from __future__ import annotations

import pytest

from autopar import cpu, engine, set_cpu_devices
from autopar.engine import _failures


def _settle() -> None:
    """Wait for the work a test left behind, and forget its failures (without raising them)."""
    drained = engine.current_engine().drain(10.0)
    _failures.forget_unobserved()
    assert drained, f"the test left {engine.pending()} op(s) pending for 10 s"


@pytest.fixture(params=["threaded", "naive"])
def eng(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Switch to each engine policy in turn; leave no failure or work behind."""
    engine.set_engine(request.param)
    yield engine
    _settle()
    engine.set_engine("threaded")


@pytest.fixture
def threaded():  # type: ignore[no-untyped-def]
    engine.set_engine("threaded")
    yield engine
    _settle()


@pytest.fixture(autouse=True)
def _clean_failures():  # type: ignore[no-untyped-def]
    """Each test starts with no unobserved failure left by another."""
    _settle()
    yield


@pytest.fixture
def two_cpus():  # type: ignore[no-untyped-def]
    """The cores split into two CPU devices, on the threaded engine: ``[cpu(0), cpu(1)]``."""
    engine.set_engine("threaded")
    set_cpu_devices(2)
    yield [cpu(0), cpu(1)]
    _settle()
    set_cpu_devices(1)


@pytest.fixture
def no_failure_yet():  # type: ignore[no-untyped-def]
    """As in a fresh process: nothing has failed yet, so the engine's fast paths skip the checks."""
    before = _failures.seen
    _failures.seen = False
    yield
    _failures.seen = before or _failures.seen
