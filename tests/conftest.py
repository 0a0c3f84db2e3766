"""Shared fixtures: every engine test runs on both policies."""

from __future__ import annotations

import pytest

from autopar import engine


@pytest.fixture(params=["threaded", "naive"])
def eng(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Switch to each engine policy in turn; leave no failure or work behind."""
    engine.set_engine(request.param)
    yield engine
    try:
        engine.waitall()
    except Exception:
        pass
    engine.set_engine("threaded")


@pytest.fixture
def threaded():  # type: ignore[no-untyped-def]
    engine.set_engine("threaded")
    yield engine
    try:
        engine.waitall()
    except Exception:
        pass


@pytest.fixture(autouse=True)
def _clean_failures():  # type: ignore[no-untyped-def]
    """Each test starts with no unobserved failure left by another."""
    from autopar.engine import _base

    try:
        engine.waitall()
    except Exception:
        pass
    with _base._failures_lock:
        _base._unobserved.clear()
    yield
