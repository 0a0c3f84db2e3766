"""The watcher: one thread that sends remote ops' calls and completes the ops when the nodes answer.

Design note
-----------
A remote op is an engine ``push_async`` op: once it is ready, its lane
worker hands its call here (:meth:`Watcher.send`) and returns. The watcher is
one daemon thread per session. It takes what is new from a queue and loops::

    send the new calls: per node, one Ray call for all of them (apply_many), or apply for one
    ready = ray.wait(pending, num_returns=1, timeout=SLICE)     # at least one ready, or SLICE passed
    ready += ray.wait(rest, num_returns=len(rest), timeout=0)  # and whatever else is ready now
    (with one call pending: ray.get(it, timeout=SLICE), which answers sooner than ray.wait)
    for each ready ref: its answer (ray.get: already here) -> on_value(answer), complete()
                        or its error, made autopar's          -> complete(error)

Sending from this thread costs a chain of dependent ops nothing (the lane
worker hands the call over as it would hand over a ref to watch, and the
thread, with nothing pending, is asleep on the queue and wakes at once), and
it batches by itself: the calls that became ready while the thread was busy
go to their node in one Ray call. A Ray call costs about a millisecond of
CPU across the driver, the raylets and the actor; pipelined small ops are
bound by it, so one call for many ops is what brings them near a plain
actor's rate. Calls that carry data (uploads) or wait for another node's
data (moves) are sent by their lane worker and only watched here
(:meth:`Watcher.watch`), so a 64 MB upload never holds up this thread.

``SLICE`` (2 ms) bounds how long something queued while the thread waits in
``ray.wait`` stays unsent or unwatched; with nothing pending the thread
sleeps on the queue instead, and when idle it empties the runtimes' bins of
freed keys (``on_idle``). Measured in part 1 (1,000 pipelined calls to one
actor): completing through such a loop costs what ``ray.get`` of the list
costs, and 20% less than Ray's own ``future()`` callbacks.

Errors. A kernel's error comes back with its own type; a call whose actor or
node died becomes :class:`~autopar.NodeLostError` naming the node
(``_ray.mapped``), and the runtime is marked lost (``on_lost``), which fails
the arrays it held. After a transient fault (``_ray``'s note) an idempotent
call is sent again once its pause is over: it waits in ``_later`` (a heap by
time due; the thread's sleep on the queue ends by then), and each op of a
batch is sent again on its own. The loop never dies silently (STYLE 18): an unexpected
error completes every pending op with a :class:`~autopar.errors.ClusterError`
naming it, is reported on stderr, and the loop goes on.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from autopar.cluster import _ray
from autopar.errors import ClusterError

SLICE = 0.002  # seconds a ray.wait may block while refs are pending
IDLE = 0.5  # seconds between idle chores (sending freed keys) when nothing is pending

Complete = Callable[[BaseException | None], None]
_UNREAD = object()  # an answer not fetched yet


class _Entry:
    __slots__ = ("complete", "on_value", "nodes", "what", "resend", "attempts")

    def __init__(self, complete: Complete, on_value: Callable[[Any], None] | None, nodes: Sequence[Any],
                 what: str, resend: Callable[[], Any] | None = None) -> None:  # fmt: skip
        self.complete = complete
        self.on_value = on_value
        self.nodes = nodes
        self.what = what
        self.resend = resend  # sends the call again after a transient fault (None: not idempotent)
        self.attempts = 0


class _Batch:
    """Calls sent to one node in one ``apply_many``: its answer is one ``(error, answer)`` per call."""

    __slots__ = ("entries",)

    def __init__(self, entries: list[_Entry]) -> None:
        self.entries = entries


class Watcher:
    """Completes remote ops as their calls answer; see the module note."""

    def __init__(self, on_lost: Callable[[Any, Any], None], on_idle: Callable[[], None] = lambda: None) -> None:
        self._on_lost = on_lost
        self._on_idle = on_idle
        # New work: (ref, entry) to watch, or (node, call, entry) to send; None to stop.
        self._new: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._pending: dict[Any, _Entry | _Batch] = {}
        self._outbox: dict[Any, list[tuple[tuple[Any, ...], _Entry]]] = {}
        self._later: list[tuple[float, int, _Entry]] = []  # calls to send again after a transient fault, by time due
        self._order = itertools.count()
        self._stopping = False
        self._gate = threading.Lock()
        self.faults = 0  # unexpected errors survived (for tests)
        self.thread = threading.Thread(target=self._run, name="autopar-cluster-watcher", daemon=True)
        self.thread.start()

    def watch(self, ref: Any, complete: Complete, on_value: Callable[[Any], None] | None, nodes: Sequence[Any],
              what: str, resend: Callable[[], Any] | None = None) -> None:  # fmt: skip
        """Complete the op when ``ref`` answers; ``nodes`` are the runtimes the call involves (where it ran first).

        ``resend`` sends the call again after a transient fault (``None``: the call is not idempotent).
        """
        self._put((ref, _Entry(complete, on_value, nodes, what, resend)))

    def send(self, node: Any, call: tuple[Any, ...], complete: Complete, on_value: Callable[[Any], None] | None,
             what: str, idempotent: bool = False) -> None:  # fmt: skip
        """Send ``call`` to ``node`` (a ``RemoteNode``) from this thread, with the others due there; complete on the answer."""
        resend = (lambda: node.submit_apply(call)) if idempotent else None
        self._put((node, call, _Entry(complete, on_value, (node,), what, resend)))

    def _put(self, item: tuple[Any, ...]) -> None:
        with self._gate:  # once stopping, nothing more is queued: the last drain sees every item
            if not self._stopping:
                self._new.put(item)
                return
        _complete(item[-1], ClusterError(f"{item[-1].what}: the cluster connection has ended (disconnect); "
                                         f"nothing was sent"))  # fmt: skip

    def stop(self, reason: str, timeout: float = 5.0) -> None:
        """End the thread; ops still pending complete with a ClusterError giving ``reason``."""
        with self._gate:
            self._stopping = True
            self._new.put(None)
        if self.thread is not threading.current_thread():
            self.thread.join(timeout)
        self._fail_all(ClusterError(f"the cluster connection ended ({reason}) before the node answered"))

    @property
    def idle(self) -> bool:
        """Nothing in flight, queued or waiting to be sent (read without a lock: a hint)."""
        return not self._pending and not self._outbox and not self._later and self._new.empty()

    @property
    def pending(self) -> int:
        return len(self._pending) + len(self._later) + self._new.qsize()

    # -- the loop --------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping:
            try:
                self._step()
            except BaseException as bug:  # noqa: BLE001 - never die silently: fail what is pending, go on
                self.faults += 1
                print(f"autopar: the cluster watcher hit an internal error; its pending ops fail:\n"
                      f"{''.join(traceback.format_exception(bug))}", file=sys.stderr)
                self._fail_all(ClusterError(f"internal error in autopar's cluster watcher: {bug!r}"))
        self._fail_all(ClusterError("the cluster connection ended before the node answered"))

    def _take(self, block: bool) -> bool:
        """Move newly watched refs into ``_pending``; False once told to stop.

        ``block``: sleep on the queue until something comes, the next call
        to send again is due, or ``IDLE`` passes (then do the idle chore).
        """
        try:
            if block:
                wait = IDLE if not self._later else max(0.0, min(IDLE, self._later[0][0] - time.monotonic()))
                item = self._new.get(timeout=wait)
            else:
                item = self._new.get_nowait()
        except queue.Empty:
            if block and not self._later:
                self._on_idle()
            return True
        while True:
            if item is None:
                return False
            if len(item) == 2:
                self._pending[item[0]] = item[1]
            else:
                self._outbox.setdefault(item[0], []).append((item[1], item[2]))
            try:
                item = self._new.get_nowait()
            except queue.Empty:
                return True

    def _step(self) -> None:
        if not self._take(block=not self._pending):
            return
        if self._later:
            self._send_again()
        if self._outbox:
            self._send_all()
        if not self._pending:
            return
        ray = sys.modules["ray"]
        refs = list(self._pending)
        if len(refs) == 1:  # one call in flight (a chain of dependent ops): ray.get answers sooner than ray.wait
            try:
                answers = [ray.get(refs[0], timeout=SLICE)]
            except ray.exceptions.GetTimeoutError:
                return
            except Exception:  # noqa: BLE001 - the call failed: read alone below
                answers = None
            ready = refs
        else:
            ready, rest = ray.wait(refs, num_returns=1, timeout=SLICE, fetch_local=False)
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0, fetch_local=False)
                ready += more
            try:  # one get for every answer that is here (each ready answer is small: None, or shapes)
                answers = ray.get(ready, timeout=0)
            except Exception:  # noqa: BLE001 - some call failed: each ref is read alone below
                answers = None
        pending = self._pending
        for i, ref in enumerate(ready):
            # Removed once finished: if finishing fails unexpectedly, the loop's guard still fails its ops.
            self._finish(ref, pending[ref], answers[i] if answers is not None else _UNREAD)
            del pending[ref]

    def _send_all(self) -> None:
        outbox, self._outbox = self._outbox, {}
        for node, items in outbox.items():
            try:
                if len(items) == 1:
                    call, entry = items[0]
                    self._pending[node.submit_apply(call)] = entry
                else:
                    self._pending[node.submit_many([call for call, _ in items])] = _Batch([e for _, e in items])
            except Exception as error:  # noqa: BLE001 - a lost node (NodeLostError): the calls fail
                for _, entry in items:
                    _complete(entry, error)

    def _send_again(self) -> None:
        """Send the calls whose pause after a transient fault is over."""
        now = time.monotonic()
        while self._later and self._later[0][0] <= now:
            _, _, entry = heapq.heappop(self._later)
            assert entry.resend is not None, "only an idempotent call waits to be sent again"
            try:
                self._pending[entry.resend()] = entry
            except Exception as error:  # noqa: BLE001 - the node was found lost meanwhile (NodeLostError)
                _complete(entry, error)

    def _finish(self, ref: Any, item: _Entry | _Batch, value: Any) -> None:
        ray = sys.modules["ray"]
        if type(item) is _Batch:
            try:
                answers = ray.get(ref, timeout=0) if value is _UNREAD else value
            except Exception as raised:  # noqa: BLE001 - the whole call failed: every op in it fails, or is sent again
                if _ray.is_transient(raised):
                    for entry in item.entries:
                        self._failed(entry, raised)
                    return
                first = item.entries[0]
                error = _ray.mapped(raised, first.nodes, f"{len(item.entries)} ops on {first.nodes[0].name}",
                                    self._on_lost)  # fmt: skip
                for entry in item.entries:
                    _complete(entry, error)
                return
            for entry, (failure, answer) in zip(item.entries, answers):
                _finish_one(entry, failure, answer)
            return
        assert type(item) is _Entry
        try:
            if value is _UNREAD:
                value = ray.get(ref, timeout=0)
        except Exception as raised:  # noqa: BLE001 - every error completes the op
            self._failed(item, raised)
            return
        _finish_one(item, None, value)

    def _failed(self, entry: _Entry, raised: BaseException) -> None:
        """The call of ``entry`` failed with ``raised``: complete its op with autopar's error, or send it again."""
        if _ray.is_transient(raised):
            verdict = _ray.after_transient(raised, entry.nodes, entry.what, entry.attempts, entry.resend is not None,
                                           self._on_lost)  # fmt: skip
            if not isinstance(verdict, BaseException):
                entry.attempts += 1
                heapq.heappush(self._later, (time.monotonic() + verdict, next(self._order), entry))
                return
            _complete(entry, verdict)
            return
        _complete(entry, _ray.mapped(raised, entry.nodes, entry.what, self._on_lost))

    def _fail_all(self, error: BaseException) -> None:
        self._take(block=False)
        pending, self._pending = self._pending, {}
        outbox, self._outbox = self._outbox, {}
        later, self._later = self._later, []
        entries = [e for item in pending.values() for e in (item.entries if isinstance(item, _Batch) else [item])]
        entries += [e for items in outbox.values() for _, e in items]
        entries += [e for _, _, e in later]
        for entry in entries:
            _complete(entry, error)


def _finish_one(entry: _Entry, failure: BaseException | None, answer: Any) -> None:
    if failure is None and entry.on_value is not None:
        try:
            entry.on_value(answer)
        except Exception as error:  # noqa: BLE001 - reading the answer failed: the op fails
            failure = error
    _complete(entry, failure)


def _complete(entry: _Entry, error: BaseException | None) -> None:
    try:
        entry.complete(error)
    except RuntimeError:
        pass  # completed already: cancelled at exit
