"""A forked child (``os.fork``, multiprocessing's ``fork`` start method) gets an engine of its own:
the parent's lane threads do not survive a fork, and its first op on a lane hung forever. What the
parent had pending is cancelled in the child, with a message; the parent is untouched."""

from __future__ import annotations

from _helpers import run_python

FORK = r"""
import faulthandler, multiprocessing as mp, os, sys, threading
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
        faulthandler.dump_traceback_later(30, exit=True)  # a hang fails fast, with the stacks
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


LOCKS = r"""
import faulthandler, os, threading
import autopar as ap
from autopar.arrays import _backward
from autopar.devices import _threads
from autopar.engine import _hooks

x = ap.ones((8, 8))
(x @ x).wait_to_read()
# Locks other threads hold for a while: a lane worker holds _threads' while it sets its torch threads
# (its first op), a backward holds _backward's while it makes a leaf's .grad. Held by another thread
# at the fork, they are held in the child by a thread it does not have.
held, release = threading.Event(), threading.Event()

def holder():
    with _threads._lock, _backward._grad_lock, _hooks._lock:
        held.set()
        release.wait()

thread = threading.Thread(target=holder)
thread.start()
held.wait()
pid = os.fork()
release.set()
if pid == 0:
    faulthandler.dump_traceback_later(30, exit=True)  # a hang fails the test (exit status 1) with the stacks
    w = ap.asarray([1.0, 2.0], requires_grad=True)
    y = ap.call(lambda t: t * 3, w, shape=(2,))  # a user op: on the child's new lane, whose worker sets its threads
    (w * y.detach()).sum().backward()  # w.grad made now, under the backward lock
    with ap.profile():  # a listener added under the hooks' lock
        pass
    print("child", w.grad.numpy().tolist(), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
thread.join()
print("child status", os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_does_not_inherit_locks_held_at_the_fork() -> None:
    """A fork while a lane worker set its torch threads (1 in 10 forks right after new lanes' first op)
    left the child's first op on a lane waiting forever for that lock; the same for a leaf's .grad."""
    proc = run_python(LOCKS, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:2] == ["child [3.0, 6.0]", "child status 0"], (proc.stdout, proc.stderr[-3000:])


RUNNING_NOW = r"""
import faulthandler, os, threading, time
import autopar as ap
from autopar import engine

e = engine.current_engine()
x = ap.ones((4,))
x.wait_to_read()
started, release = threading.Event(), threading.Event()

def kernel():  # a small op that runs now on the pushing thread, holding x's var outside the lock
    started.set()
    release.wait()

pusher = threading.Thread(target=lambda: e.push_small(kernel, (), (), (x._storage.var,), ap.cpu(0), "small"))
pusher.start()
started.wait()

def opener():  # ends the op once the fork waits for it (gives up after 10 s: the code before waited for nothing)
    deadline = time.monotonic() + 10
    while not getattr(e, "_fork_waiting", False) and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()

threading.Thread(target=opener, daemon=True).start()
pid = os.fork()
if pid == 0:
    faulthandler.dump_traceback_later(15, exit=True)  # a hang fails the test (exit status 1) with the stacks
    print("child", x.numpy().tolist(), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
pusher.join()
print("child status", os.waitstatus_to_exitcode(status))

# An op still running when the wait ends: the child fails what it writes instead of waiting forever.
engine.FORK_WAIT = 0.1
started.clear()
release.clear()
pusher = threading.Thread(target=lambda: e.push_small(kernel, (), (), (x._storage.var,), ap.cpu(0), "small"))
pusher.start()
started.wait()
pid = os.fork()
if pid == 0:
    faulthandler.dump_traceback_later(15, exit=True)
    try:
        x.numpy()
    except Exception as error:
        print("child", type(error).__name__, "forked child" in str(error), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
release.set()
pusher.join()
print("child status", os.waitstatus_to_exitcode(status), x.numpy().tolist())
"""


def test_a_fork_waits_for_a_small_op_running_now_on_another_thread() -> None:
    """A small op run now on its pushing thread holds its vars outside the engine lock; a fork meanwhile
    (from another thread) copied them held into the child, whose read of the op's array waited forever.
    The fork now waits (up to 5 s) for such ops to end; one still running then fails its arrays in the child."""
    proc = run_python(RUNNING_NOW, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:4] == ["child [1.0, 1.0, 1.0, 1.0]", "child status 0", "child EngineShutdownError True",
                                           "child status 0 [1.0, 1.0, 1.0, 1.0]"], (proc.stdout, proc.stderr[-3000:])


STATE = r"""
import os, signal, threading
import autopar as ap
from autopar import engine
from autopar.engine._group import atomic

(ap.ones(2) + 1).wait_to_read()  # the engine is made (and the Ctrl-C handler installed) on the main thread


def bad():
    raise ValueError("the parent's failure")


engine.push(bad, writes=[engine.Var()], name="failing")
engine.current_engine().drain()  # failed, owed to the parent's waitall


@atomic("a group")
def group():
    signal.raise_signal(signal.SIGINT)  # deferred in a group; raised when it returns, on the main thread


def forked():  # forked from a thread that is not the parent's main one: in the child it is
    pid = os.fork()
    if pid == 0:
        try:
            engine.waitall()
            owed = "nothing owed"
        except ValueError as error:
            owed = f"owes {error}"
        try:
            group()
            ctrl_c = "lost"
        except KeyboardInterrupt:
            ctrl_c = "raised"
        print("child", owed, ctrl_c, flush=True)
        os._exit(0)
    os.waitpid(pid, 0)


thread = threading.Thread(target=forked)
thread.start()
thread.join()
try:
    engine.waitall()
except ValueError as error:
    print("parent", str(error).split(" [")[0])
"""


def test_a_forked_childs_engine_owes_nothing_and_takes_ctrl_c_on_its_only_thread() -> None:
    """The child resets the engine's books: a failure the parent owes is the parent's (the child's
    waitall raised it too), and the thread that forked -- the child's only one, its main thread --
    gets a deferred Ctrl-C (it was owed to the parent's main thread, which the child lacks: lost)."""
    proc = run_python(STATE, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:2] == ["child nothing owed raised", "parent the parent's failure"], (proc.stdout, proc.stderr[-3000:])
