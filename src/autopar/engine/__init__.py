"""The dependency engine: push Python work that reads and writes vars; it runs
whatever is independent at the same time, in an order no program can tell
apart from step-by-step execution.

    from autopar import engine
    a, b = engine.Var("a"), engine.Var("b")
    engine.push(load, writes=[a])                 # returns at once
    engine.push(step, reads=[a], writes=[b])      # runs after load
    engine.wait_for_var(b)                        # blocks; raises step's error, if any

Two policies share one dependency tracker (``_tracker.py``), one function
that runs an op (``_run.py``) and one that records its outcome
(``_outcome.py``): ``threaded`` (default; per-device lanes with worker
threads, ``_threaded.py``) and ``naive`` (each op on the calling thread, one at
a time; the reference, ``_naive.py``). Choose with ``AUTOPAR_ENGINE`` or
:func:`set_engine`. ``docs/design/engine.md`` says which file holds which idea.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from autopar import _config
from autopar.devices import Device
from autopar.devices import _device as _devices
from autopar.devices import _threads as _device_threads
from autopar.engine import _bulk, _failures, _hooks, _ki, _run
from autopar.engine._hooks import Listener, add_listener, remove_listener
from autopar.engine._naive import NaiveEngine
from autopar.engine._op import Completion, Op, OpState
from autopar.engine._threaded import ThreadedEngine
from autopar.engine._var import Failure, Var
from autopar.errors import AutoparError

__all__ = [
    "Completion",
    "Failure",
    "Listener",
    "Op",
    "OpState",
    "Var",
    "add_listener",
    "current_engine",
    "get_engine",
    "pending",
    "push",
    "push_async",
    "push_event",
    "remove_listener",
    "set_cpu_devices",
    "set_engine",
    "set_max_pending",
    "synchronize",
    "wait_for_var",
    "waitall",
]

Engine = ThreadedEngine | NaiveEngine

_lock = threading.Lock()
_engine: Engine | None = None
_max_pending: int | None = None  # None: AUTOPAR_MAX_PENDING or the default


def _make(name: str) -> Engine:
    _ki.install()  # Ctrl-C that leaves the engine consistent (only over Python's default handler)
    if name == "naive":
        return NaiveEngine()
    return ThreadedEngine(_max_pending if _max_pending is not None else _config.max_pending())


def current_engine() -> Engine:
    """The engine in use, made on first use from ``AUTOPAR_ENGINE``."""
    global _engine
    engine = _engine
    if engine is None:
        with _lock:
            if _engine is None:
                _engine = _make(_config.engine_name())
            engine = _engine
    return engine


def get_engine() -> str:
    """The name of the engine policy in use: ``"threaded"`` or ``"naive"``."""
    return current_engine().name


def set_engine(name: str) -> None:
    """Switch the policy to ``"threaded"`` or ``"naive"``.

    Pending work on the old engine finishes first; failures nobody has
    observed stay to be raised by the next ``waitall``.
    """
    global _engine
    if name not in _config.ENGINES:
        raise ValueError(f"set_engine: unknown engine {name!r}; expected one of {', '.join(_config.ENGINES)}")
    _run.check_not_in_op("set_engine()")
    with _lock:
        old = _engine
        if old is not None and old.name == name:
            return
        if old is not None:
            old.drain()
            old.shutdown(0)
        _engine = _make(name)


def push(
    fn: Callable[[], Any],
    reads: Iterable[Var] = (),
    writes: Iterable[Var] = (),
    device: Any = None,
    priority: int = 0,
    name: str | None = None,
    lane: str = "compute",
) -> Op:
    """Schedule ``fn()`` on ``device``'s ``lane``; return its :class:`Op` at once.

    ``fn`` runs once every earlier write to ``reads`` and every earlier read or
    write of ``writes`` has finished. Among ready ops on one lane, higher
    ``priority`` runs first. ``device`` defaults to ``cpu:0``; ``lane`` is
    ``"compute"`` or one of the device's copy lanes. Blocks only when the
    pending-work bound is reached (:func:`set_max_pending`).

    Failures (the contract's failure rules): if ``fn`` raises, the error is stored on ``writes``. If
    a var in ``reads`` holds a failure, ``fn`` does not run and ``writes`` carry
    that failure. A var only in ``writes`` is an *overwrite*: ``fn`` runs even if
    it had failed, and its failure is cleared when ``fn`` succeeds. So a var
    that ``fn`` changes only partly (it keeps some of the old value) must be
    listed in ``reads`` too: a var in both is ordered as a write, and a failure
    on it stops ``fn``.
    """
    return (_engine or current_engine()).push(fn, reads, writes, device, priority, name, lane)


def push_async(
    fn: Callable[[Completion], Any],
    reads: Iterable[Var] = (),
    writes: Iterable[Var] = (),
    device: Any = None,
    priority: int = 0,
    name: str | None = None,
    lane: str = "compute",
) -> Op:
    """Like :func:`push`, for work that finishes after ``fn`` returns (MXNet's ``PushAsync``).

    ``fn(complete)`` receives one argument, ``complete``: call
    ``complete()`` -- or ``complete(error)`` -- exactly once, from any thread,
    when the work is done (a gradient hook, a remote future's callback). Until
    then the op keeps its vars: it is pending for ``waitall``, back-pressure and
    exit (at exit, an op never completed is cancelled with
    ``EngineShutdownError``). If ``fn`` itself raises, that error is the op's
    failure, and a later ``complete`` raises ``RuntimeError``; so does a second
    call. On a stream lane (CUDA), ``complete()`` also marks the lane's stream:
    the op finishes when the stream gets there.

        def fetch(complete):
            future = pool.submit(download, url)
            future.add_done_callback(lambda f: complete(f.exception()))
        engine.push_async(fetch, writes=[data])
    """
    return (_engine or current_engine()).push_async(fn, reads, writes, device, priority, name, lane)


def push_event(event: Any, writes: Iterable[Var] = (), device: Any = None, name: str | None = None) -> Op:
    """Stand for device work queued outside the engine (a user's CUDA kernels): an op
    that writes ``writes`` and finishes when ``event`` (with ``query()`` and
    ``synchronize()``, as ``devices``' stream events) completes.

    Later ops that touch those vars wait for the event: on the device for ops
    on stream lanes, on the host otherwise. ``from_torch`` uses it for a
    tensor whose producer may still be running on the user's stream.
    """
    return (_engine or current_engine()).push_event(event, writes, device, name)


def wait_for_var(var: Var) -> None:
    """Block until the writes pushed to ``var`` so far have finished.

    Does not wait for reads. Raises the failure stored on ``var``, every time.
    """
    if not isinstance(var, Var):  # a subclass too: an array's storage is its var
        raise TypeError(f"wait_for_var: expected an engine.Var, got {var!r}")
    current_engine().wait_for_var(var)


def waitall() -> None:
    """Block until every pushed op has finished; then raise the first failure
    that no read has raised yet (each failure at most once)."""
    current_engine().waitall()


def synchronize(device: Any = None) -> None:
    """Block until all work on ``device`` (every device if ``None``) has finished.

    Raises, like :func:`waitall`, the first unobserved failure of that device.
    """
    dev = None if device is None else Device(device)
    current_engine().synchronize(dev)


def forbid_pure_kernels() -> None:
    """From now on no small op runs under the engine lock, whatever its caller promised (``_bulk.py``'s
    note on *pure* ops): the array layer calls this once a kernel may run Python code."""
    _bulk.pure_allowed = False


def pending() -> int:
    """How many pushed ops have not finished yet."""
    return current_engine().pending()


def set_max_pending(n: int | None) -> None:
    """Bound the pushed-but-unfinished ops; ``push`` blocks past it.

    ``None`` restores the default (``AUTOPAR_MAX_PENDING``, else 10,000).
    """
    global _max_pending
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"set_max_pending: n={n!r}; expected a whole number >= 1, or None for the default")
    _max_pending = n
    value = n if n is not None else _config.max_pending()
    engine = _engine
    if engine is not None:
        engine.set_max_pending(value)


def set_cpu_devices(n: int) -> None:
    """Split the machine's cores into ``n`` CPU devices ``cpu:0..n-1``.

    Callable whenever no work is pending; each device gets an even share of
    the cores for its operations.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_cpu_devices: n={n!r}; expected a whole number >= 1")
    _run.check_not_in_op("set_cpu_devices()")
    engine = _engine
    if engine is not None and engine.pending():
        raise AutoparError(
            f"set_cpu_devices({n}): {engine.pending()} operations are still pending; "
            f"call autopar.waitall() first"
        )
    _devices._set_cpu_device_count(n)
    if engine is not None:
        engine.reset_lanes()


def _at_exit() -> None:
    global _engine
    engine = _engine
    if engine is None:
        return
    # Work pushed by exit handlers that run after this one runs inline.
    _engine = NaiveEngine()
    try:
        timeout = _config.exit_timeout()
    except ValueError:
        timeout = _config.DEFAULT_EXIT_TIMEOUT
    try:
        engine.shutdown(timeout)
    except KeyboardInterrupt:
        print("autopar: interrupted while waiting for pending work at exit; cancelling it", file=sys.stderr)
        try:  # cancel the rest now; the ops already running end first (a thread left in torch aborts)
            engine.shutdown(0, finish_running=timeout)
        except KeyboardInterrupt:  # a second Ctrl-C: the cancelling is done by then
            pass
    left = _failures.unobserved()
    n = len(left)
    if n:
        first = left[0]
        print(
            f"autopar: {n} failed operation(s) were never observed; the first: "
            f"{type(first.error).__name__} in {first.op_name!r} on {first.device}: {first.error}",
            file=sys.stderr,
        )


FORK_WAIT = 5.0  # seconds a fork waits for the small ops running now on other threads (_bulk.py)


def _before_fork() -> None:
    engine = _engine
    if engine is not None:  # fork at a consistent state: no thread is halfway through the engine's books
        lock_for_fork = getattr(engine, "lock_for_fork", None)
        if lock_for_fork is not None:
            lock_for_fork(FORK_WAIT)  # nor through a small op it runs now, holding its vars
        else:
            engine._lock.acquire()


def _after_fork_in_parent() -> None:
    engine = _engine
    if engine is not None:
        try:
            engine._lock.release()
        except RuntimeError:  # it was made by another thread between the two hooks: nothing was taken
            pass


def _after_fork_in_child() -> None:
    """A forked child (``os.fork``, multiprocessing's ``fork``) has only the thread that forked: the
    lanes' workers are gone, and locks held by other threads stay held. The child gets fresh locks
    and a new engine of the same policy; what the parent had pending is cancelled here (its result
    exists only in the parent) and the failures the parent owes stay the parent's."""
    global _engine, _lock
    _lock = threading.Lock()
    _failures.after_fork()
    _hooks._lock = threading.Lock()
    # The devices' locks too: a lane worker holds _threads' while it sets its torch threads (its
    # first op); forked then, the child's workers waited for it forever, and so did its first op.
    _device_threads._lock = threading.Lock()
    _devices._lock = threading.Lock()
    _ki.after_fork()
    old = _engine
    if old is not None:
        old.abandon_after_fork()
        _engine = _make(old.name)


atexit.register(_at_exit)
os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
