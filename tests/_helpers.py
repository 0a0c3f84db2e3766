"""Helpers for tests that must fail -- not hang -- when the engine hangs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """Run ``fn`` on a helper thread; fail if it has not returned after ``seconds``.

    Returns what ``fn`` returned, or raises what it raised. A hung ``fn`` is
    left behind (a daemon thread) and the test fails with a message.
    """
    box: dict[str, Any] = {}

    def call() -> None:
        try:
            box["value"] = fn()
        except BaseException as error:  # handed to the test's thread
            box["error"] = error

    thread = threading.Thread(target=call, name="test-within", daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{getattr(fn, '__name__', fn)} did not return within {seconds} s (a hang)"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def wait_for(predicate: Callable[[], bool], seconds: float = 10.0) -> None:
    """Poll ``predicate`` until it holds; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"condition not reached within {seconds} s"
        time.sleep(0.001)


def run_python(code: str, timeout: float = 60.0, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (with this one's environment plus ``env``)."""
    import os

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )


def run_python_json(code: str, timeout: float = 60.0, **env: str) -> Any:
    """:func:`run_python`, which must exit 0, and the JSON its last line of output prints."""
    import json

    proc = run_python(code, timeout, **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


class Gate:
    """An engine op that holds ``reads`` and ``writes`` until :meth:`open`: work pushed after it on those
    vars waits, deterministically (no sleeps). ``open`` waits (up to a minute) for the op to have run."""

    def __init__(self, reads: Any = (), writes: Any = ()) -> None:
        from autopar import engine

        self._held = threading.Event()
        self._complete: list[Callable[[], None]] = []
        engine.push_async(self._hold, reads=list(reads), writes=list(writes), name="gate")

    def _hold(self, complete: Callable[[], None]) -> None:
        self._complete.append(complete)
        self._held.set()

    def open(self) -> None:
        assert self._held.wait(60), "the gate op never ran"
        self._complete[0]()


def pure_flags(monkeypatch: Any) -> list[bool]:
    """The ``pure`` argument of every ``push_small`` of the current engine from now on (False where not given)."""
    from autopar import engine

    eng = engine.current_engine()
    flags: list[bool] = []
    push_small = eng.push_small

    def spy(*args: Any) -> None:
        flags.append(args[10] if len(args) > 10 else False)
        push_small(*args)

    monkeypatch.setattr(eng, "push_small", spy)
    return flags


def trains_as_eagerly(eager: Any, mine: Any, loss: Any, steps: int = 3) -> None:
    """Steps two data-parallel trainers ``(replicas, trainer)`` on one batch of 8 samples of 12
    features (4 classes), one eager and one captured: the same losses, gradients and parameters."""
    import numpy as np

    import autopar as ap

    rng = np.random.default_rng(0)
    X = ap.asarray(rng.standard_normal((8, 12)).astype(np.float32))
    y = ap.asarray(rng.integers(0, 4, 8))
    for _ in range(steps):
        want = eager[1].step_batch(loss, X, y)
        got = mine[1].step_batch(loss, X, y)
        np.testing.assert_allclose([g.item() for g in got], [w.item() for w in want], rtol=1e-5)
    for e, m in zip(eager[0], mine[0]):
        for a, b in zip(e, m):
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
