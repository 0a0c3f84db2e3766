"""Lane workers: one thread per lane of a device, running the ops that are ready there.

A lane is a heap of ready ops ordered by ``(-priority, seq)`` -- higher
priority first, push order among equals -- and one worker thread. A worker
finishes its op and takes the next under a single acquisition of the engine
lock, and sleeps only when its heap is empty, so a burst of ready ops costs one
wake-up, not one per op. It runs an op with ``_run.run`` (never holding the
lock) and hands the result to the engine (``engine.ran``), which records it.

While it sleeps a worker holds no op: a dropped result (on a GPU: device
memory) is freed when its last reader finishes, not when the lane next works.

CPU workers set torch's intra-op threads to their device's share of the cores
the first time they run an op after torch is imported (``devices``'
``set_worker_threads``: only for themselves), so two CPU devices on two cores
run side by side instead of oversubscribing each other.

A stream lane's worker makes the lane's stream current for good (its kernels
queue there) and closes the stream when it stops; its :class:`Watcher`
finishes the ops it issued when their events complete. A remote device's
lane (``LaneSpec.remote``) is a host lane whose ops are ``push_async`` ones:
the worker only submits each to the node, and the cluster's watcher
completes it.

Threads never die silently: an error in the engine's own bookkeeping fails
the op concerned (``engine.internal_fault``) and the worker goes on.
"""

from __future__ import annotations

import heapq
import threading
from typing import Any, Protocol

from autopar.devices import LaneSpec
from autopar.devices._threads import set_worker_threads
from autopar.engine import _run
from autopar.engine._device import Watcher
from autopar.engine._op import Op, OpState
from autopar.engine._var import Failure

_RUNNING = OpState.RUNNING


class LaneEngine(Protocol):
    _lock: Any

    def ran(self, op: Op, error: BaseException | Failure | None) -> None: ...

    def device_done(self, op: Op, error: BaseException | Failure | None) -> None: ...

    def internal_fault(self, op: Op, error: BaseException) -> None: ...


class Lane:
    """One lane of one device: a priority heap of ready ops and a worker thread."""

    def __init__(self, engine: LaneEngine, spec: LaneSpec, worker: bool = True) -> None:
        self.engine = engine
        self.spec = spec
        self.heap: list[tuple[int, int, Op]] = []
        # The doorbell: a lock held while nobody rings. The worker, with nothing
        # to do, sets `waiting` and blocks on it; whoever queues work (under the
        # engine lock) sees `waiting` and releases it once. Cheaper than a
        # Condition, which allocates a lock per wait.
        self._doorbell = threading.Lock()
        self._doorbell.acquire()
        self.waiting = False
        self.stopping = False
        self.pending = 0  # ops pushed to this lane and not finished
        self.running: Op | None = None
        self.lost: Failure | None = None  # its device can run nothing more (a sticky device error)
        self.stream: Any = spec.make_stream() if spec.make_stream is not None else None
        self.watcher = Watcher(engine, str(spec)) if self.stream is not None or not worker else None
        self._threads_set = spec.make_stream is not None or spec.remote  # a remote lane only submits
        self.thread: threading.Thread | None = None
        if worker:
            self.thread = threading.Thread(target=self._work, name=f"autopar-{spec}", daemon=True)
            self.thread.start()

    def __repr__(self) -> str:
        return f"<Lane {self.spec} queued={len(self.heap)} pending={self.pending}>"

    def ring(self) -> None:
        """Wake the worker if it sleeps. Call with the engine lock held."""
        if self.waiting:
            self.waiting = False
            self._doorbell.release()

    def stop(self) -> None:
        """Let the worker and the watcher end once idle. Call with the engine lock held."""
        self.stopping = True
        self.ring()
        if self.watcher is not None:
            self.watcher.stop()

    def join(self, timeout: float) -> None:
        for thread in (self.thread, self.watcher.thread if self.watcher is not None else None):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout)

    def _work(self) -> None:
        if self.stream is None:
            self._serve()
            return
        # This thread issues onto this stream for good. The activation is entered
        # and left here, on this thread: left to the garbage collector, a
        # generator-based one would be closed on whatever thread collects it and
        # reset *that* thread's current stream.
        try:
            with self.stream.activate():
                self._serve()
        finally:
            self.stream.close()

    def _serve(self) -> None:
        engine = self.engine
        lock = engine._lock
        heap = self.heap
        doorbell = self._doorbell
        stream = self.stream
        done: Op | None = None
        error: BaseException | Failure | None = None
        while True:
            lock.acquire()
            try:
                if done is not None:
                    self.running = None
                    try:
                        engine.ran(done, error)
                    except BaseException as bug:  # never die: fail the op, say so, go on
                        engine.internal_fault(done, bug)
                    done = error = None
                while not heap or self.running is not None:
                    if self.stopping and not heap:
                        return
                    self.waiting = True
                    lock.release()
                    try:
                        doorbell.acquire()
                    finally:
                        lock.acquire()
                op = heapq.heappop(heap)[2]
                op.state = _RUNNING
                self.running = op
            finally:
                lock.release()
            if self.lost is not None:  # the device is lost: the op fails without touching it
                error = self.lost
            else:
                if not self._threads_set:
                    self._threads_set = set_worker_threads(self.spec.threads)
                error = _run.run(op, stream)
            done = op
            del op
