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
    """Each test starts with no unobserved failure left by another, and on the push path of a
    process where nothing has failed yet: the path real programs take. (``_failures.seen`` stays
    set for the process after any failure, and every later test ran the other path only.)"""
    _settle()
    _failures.seen = False
    yield


# -- a local Ray cluster, one per test session (started only by tests that ask for it) -------------


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that use the cluster run last, so it is stopped before no other test runs beside it
    (an idle 2-node cluster is a dozen processes: timing tests would share the cores with it)."""
    items.sort(key=lambda item: "ray_cluster" in getattr(item, "fixturenames", ()))  # stable: order kept otherwise


@pytest.fixture(scope="session")
def ray_cluster():  # type: ignore[no-untyped-def]
    """Two nodes x 1 CPU on 127.0.0.1, small object stores, Ray's files in a private temp dir."""
    pytest.importorskip("ray")
    import autopar.cluster
    from autopar.cluster._local import LocalCluster

    # The nodes' processes import the tests' modules (functions given to autopar.call travel by
    # reference, as a user's own package would, installed on the nodes): put tests/ on their path.
    import os

    before = os.environ.get("PYTHONPATH")
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = here if not before else f"{here}{os.pathsep}{before}"
    try:
        cluster = LocalCluster(nodes=2, cpus=1, object_store_memory=80 * 2**20)
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before
    try:
        yield cluster
    finally:
        autopar.cluster.disconnect()
        cluster.stop()


@pytest.fixture
def connected(ray_cluster):  # type: ignore[no-untyped-def]
    """The driver joined to ``ray_cluster`` (kept between tests: runtimes take seconds to start)."""
    import autopar.cluster

    autopar.cluster.connect(ray_cluster.address)
    return ray_cluster


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


@pytest.fixture(params=["shared", "copies"])
def sums(request, monkeypatch):  # type: ignore[no-untyped-def]
    """How gradients and ``allreduce`` sum across devices: "shared", one op reading every CPU
    device's memory (CPU devices of one process); "copies", through copies between devices, as for
    GPUs and other machines' devices -- forced here on CPU devices, so both run without a GPU."""
    if request.param == "copies":
        from autopar.parallel import _local

        monkeypatch.setattr(_local, "shares_memory", lambda devices: False)
        monkeypatch.setattr(_local, "shared_memory", lambda arrays: False)
    return request.param
