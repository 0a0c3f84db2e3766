"""Interpreter exit with pending work: it finishes, or is cancelled with a message; never a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time


def run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_pending_work_finishes_at_exit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "done.txt"
    proc = run(
        f"""
        import time
        from autopar import engine
        v = engine.Var()
        for i in range(20):
            engine.push(lambda i=i: time.sleep(0.01), writes=[v])
        engine.push(lambda: open({str(out)!r}, "w").write("finished"), writes=[v])
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "finished"


def test_stuck_work_is_cancelled_at_exit_with_a_message() -> None:
    start = time.monotonic()
    proc = run(
        """
        import threading
        from autopar import engine
        never = threading.Event()
        v = engine.Var()
        engine.push(never.wait, writes=[v], name="stuck")
        for _ in range(5):
            engine.push(lambda: None, writes=[v])
        print("pushed", flush=True)
        """,
        AUTOPAR_EXIT_TIMEOUT="0.5",
    )
    assert time.monotonic() - start < 30
    assert proc.returncode == 0
    assert "pushed" in proc.stdout
    assert "still pending" in proc.stderr and "'stuck'" in proc.stderr


def test_unobserved_failure_is_reported_at_exit() -> None:
    proc = run(
        """
        from autopar import engine
        def bad(): raise ValueError("lost")
        engine.push(bad, writes=[engine.Var()], name="bad")
        """
    )
    assert proc.returncode == 0
    assert "never observed" in proc.stderr and "ValueError in 'bad'" in proc.stderr


def test_import_does_not_import_torch() -> None:
    proc = run(
        """
        import sys, autopar
        from autopar import engine
        engine.push(lambda: None); engine.waitall()
        print(autopar.cpu(0), 'torch' in sys.modules)
        """
    )
    assert proc.stdout.split() == ["cpu:0", "False"], proc.stderr


def test_switching_engines_stops_the_old_workers() -> None:
    proc = run(
        """
        import threading
        from autopar import engine
        for _ in range(10):
            engine.set_engine("naive"); engine.set_engine("threaded")
            engine.push(lambda: None); engine.push(lambda: None, lane="copy"); engine.waitall()
        engine.set_engine("naive")
        for t in threading.enumerate():
            if t.name.startswith("autopar-"):
                t.join(5)
        print(sum(t.name.startswith("autopar-") for t in threading.enumerate()))
        """
    )
    assert proc.stdout.strip() == "0", proc.stderr


def test_work_pushed_by_a_later_exit_handler_still_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "late.txt"
    proc = run(
        f"""
        import atexit
        def late():
            from autopar import engine
            v = engine.Var()
            engine.push(lambda: open({str(out)!r}, "w").write("ran"), writes=[v])
            engine.wait_for_var(v)
        atexit.register(late)  # registered before autopar's handler, so it runs after it
        from autopar import engine
        engine.push(lambda: None); engine.waitall()
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "ran"


def test_a_cancelled_op_raises_when_read_by_a_later_exit_handler() -> None:
    proc = run(
        """
        import atexit, threading
        def late():
            from autopar import errors
            try:
                engine.wait_for_var(queued)
            except errors.EngineShutdownError as e:
                print("raised:", e)
        atexit.register(late)  # before autopar's own handler exists: runs after it
        from autopar import engine
        queued = engine.Var("queued")
        never = threading.Event()
        engine.push(never.wait, writes=[engine.Var()], name="stuck")
        engine.push(lambda: None, writes=[queued])  # same lane, behind the stuck op
        """,
        AUTOPAR_EXIT_TIMEOUT="0.3",
    )
    assert proc.returncode == 0, proc.stderr
    assert "raised: cancelled: still pending 0.3 s after the interpreter began to exit" in proc.stdout
