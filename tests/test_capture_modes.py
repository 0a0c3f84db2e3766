"""How capture's modes choose a segment's backend, with ``torch.compile`` stood in for (no compile
here: a stand-in that runs the stage as it is, slower, or failing): auto keeps what compiles,
fastest keeps the faster, a CPU stage that trains tries the C++ wrapper first and then the Python one,
and one that does not takes the Python wrapper."""

from __future__ import annotations

import time

import numpy as np
import pytest

import autopar as ap
from autopar._capture import _backends, _staged


def _loop(x, y):  # type: ignore[no-untyped-def]
    for _ in range(3):
        x += 2 * y
    return ap.tanh(x) - 1


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """``_staged._compile`` stood in for; ``calls`` says with which wrapper (C++ or not) it was asked."""
    calls: list[bool] = []
    how = {"slow": 0.0, "fail": set()}

    def stand_in(fn, name, cuda, cpp):  # type: ignore[no-untyped-def]
        calls.append(cpp)
        if cpp in how["fail"]:  # type: ignore[operator]
            raise RuntimeError(f"{'C++' if cpp else 'Python'} wrapper refused")

        def run(*tensors):  # type: ignore[no-untyped-def]
            time.sleep(how["slow"])  # type: ignore[arg-type]  # a compiled stage that loses (a cost, not a wait)
            return fn(*tensors)

        return run

    monkeypatch.setattr(_backends, "compiler_available", lambda: "")
    monkeypatch.setattr(_staged, "_compile", stand_in)
    return calls, how


def _run(mode: str, fn=_loop, first=lambda: ap.zeros(4)):  # type: ignore[no-untyped-def]
    """``fn`` captured in ``mode``, three calls against ``fn`` run eagerly: results and the first
    argument (which ``fn`` writes) agree."""
    f = ap.capture(fn, mode=mode)
    mine, eager, y = first(), first(), ap.arange(4.0)
    for _ in range(3):
        np.testing.assert_allclose(f(mine, y).numpy(), fn(eager, y).numpy(), rtol=1e-6)
        np.testing.assert_allclose(mine.numpy(), eager.numpy(), rtol=1e-6)
    return f


def test_auto_keeps_a_compiled_segment_that_runs_slower_and_fastest_does_not(compiles) -> None:  # type: ignore[no-untyped-def]
    calls, how = compiles
    how["slow"] = 0.005
    assert _run("auto").traces[0].backend == "compile"
    fastest = _run("fastest")
    assert fastest.traces[0].backend == "replay" and "was not faster" in repr(fastest)


def test_one_kernel_compiles_in_compile_mode_only(compiles) -> None:  # type: ignore[no-untyped-def]
    for mode, backend in (("compile", "compile"), ("auto", "replay"), ("fastest", "replay")):
        f = ap.capture(lambda x: ap.exp(x), mode=mode)
        x = ap.ones(3)
        f(x)
        assert f(x).tolist() == pytest.approx([np.e] * 3)
        assert f.traces[0].backend == backend, mode
        assert backend == "compile" or "one kernel" in repr(f)


def _train(w, x):  # type: ignore[no-untyped-def]
    with ap.autograd.record():
        loss = (ap.tanh(w * x) * 2).sum()
    loss.backward()
    with ap.no_grad():
        w -= 0.1 * w.grad
    return loss


def _run_training(mode: str):  # type: ignore[no-untyped-def]
    return _run(mode, _train, lambda: ap.ones(4, requires_grad=True))


def test_a_training_cpu_stage_tries_the_cpp_wrapper_then_the_python_one_then_replays(compiles) -> None:  # type: ignore[no-untyped-def]
    calls, how = compiles
    assert _run_training("auto").traces[0].backend == "compile" and set(calls) == {True}
    calls.clear()
    how["fail"] = {True}
    f = _run_training("auto")
    assert f.traces[0].backend == "compile" and calls[:2] == [True, False], calls
    calls.clear()
    how["fail"] = {True, False}
    f = _run_training("auto")
    assert f.traces[0].backend == "replay" and calls[:2] == [True, False], calls
    assert "torch.compile failed (RuntimeError: Python wrapper refused)" in repr(f)


def test_a_cpu_stage_that_does_not_train_takes_the_python_wrapper_alone(compiles) -> None:  # type: ignore[no-untyped-def]
    calls, how = compiles
    assert _run("auto").traces[0].backend == "compile" and calls == [False]
    calls.clear()
    how["fail"] = {False}
    f = _run("auto")
    assert f.traces[0].backend == "replay" and calls == [False], calls


def test_the_cpp_wrapper_is_asked_for_on_a_cpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    asked: list[dict] = []
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: asked.append(kw["options"]) or fn)
    for cuda, cpp in ((False, True), (False, False), (True, True)):
        _staged._compile(lambda *t: t, "f", cuda, cpp)
    assert [o.get("cpp_wrapper", False) for o in asked] == [True, False, False]
