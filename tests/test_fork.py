"""A forked child (``os.fork``, multiprocessing's ``fork`` start method) gets an engine of its own:
the parent's lane threads do not survive a fork, and its first op on a lane hung forever. What the
parent had pending is cancelled in the child, with a message; the parent is untouched."""

from __future__ import annotations

from _helpers import run_python

FORK = r"""
import multiprocessing as mp, os, sys, threading
import autopar as ap
from autopar import engine
from autopar.errors import EngineShutdownError


def scenario(policy):
    engine.set_engine(policy)
    x = ap.ones((64, 64))
    (x @ x).wait_to_read()  # the parent's lanes are running
    gate = threading.Event()
    if policy == "threaded":
        pending = ap.call(lambda t: (gate.wait(), t + 1)[1], x, shape=(64, 64))  # still running at the fork
    else:  # the naive engine runs each op at once: an op completed later is what stays pending
        completes = []
        v = engine.Var()
        engine.push_async(completes.append, writes=[v])

    def child_work():
        z = ap.ones((32, 32), device=ap.cpu(0))
        total = float((z @ z).sum().item())
        try:
            if policy == "threaded":
                pending.numpy()
            else:
                engine.wait_for_var(v)
            left = "no error"
        except EngineShutdownError as error:
            left = "forked" if "forked child" in str(error) else str(error)
        return total, left

    def mp_child(queue):
        queue.put(child_work())

    pid = os.fork()
    if pid == 0:
        try:
            print("os.fork", *child_work(), flush=True)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=mp_child, args=(queue,))
    proc.start()
    print("multiprocessing", *queue.get(timeout=60), flush=True)
    proc.join(60)
    gate.set()
    if policy == "naive":
        completes[0]()
        engine.wait_for_var(v)
        print("parent done")
    else:
        print("parent", float(pending.numpy()[0, 0]))


for name in ("threaded", "naive"):
    scenario(name)
"""


def test_a_forked_child_computes_and_the_parents_pending_work_is_cancelled_there() -> None:
    proc = run_python(FORK, timeout=120)  # both policies, one after the other, in one interpreter
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().split("\n")
    assert lines == ["os.fork 32768.0 forked", "multiprocessing 32768.0 forked", "parent 2.0",
                     "os.fork 32768.0 forked", "multiprocessing 32768.0 forked", "parent done"], proc.stdout
