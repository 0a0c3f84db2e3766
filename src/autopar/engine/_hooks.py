"""Observer hooks: op pushed / started / finished, with device, lane and times.

A listener is any object with ``op_pushed(op)``, ``op_started(op)`` and
``op_finished(op)``. They are called on whatever thread the event happens on
(the pusher's, a lane worker's, a device-event watcher's; ``op_finished``
with the engine lock held), so a listener must be quick and thread-safe, and
must not push or wait. Nobody listening costs one truth test of a module
global per event, and no timestamps are taken.

A listener that raises does not kill the thread that called it (contract, failures rule 7):
its error becomes the failure of the op it was told about (``call`` returns
it, and the caller stores it like any other failure).
"""

from __future__ import annotations

import threading
from typing import Protocol

from autopar.engine._op import Op


class Listener(Protocol):
    def op_pushed(self, op: Op) -> None: ...

    def op_started(self, op: Op) -> None: ...

    def op_finished(self, op: Op) -> None: ...


listeners: tuple[Listener, ...] = ()
_lock = threading.Lock()


def add_listener(listener: Listener) -> None:
    """Start calling ``listener`` for every op event."""
    global listeners
    with _lock:
        listeners = listeners + (listener,)


def remove_listener(listener: Listener) -> None:
    """Stop calling ``listener`` (no error if it was not attached)."""
    global listeners
    with _lock:
        listeners = tuple(item for item in listeners if item is not listener)


def call(event: str, op: Op) -> tuple[BaseException, str] | None:
    """Tell every listener ``event`` about ``op``; the first error raised, and who raised it."""
    fault = None
    for listener in listeners:
        try:
            getattr(listener, event)(op)
        except BaseException as error:  # a listener's bug becomes the op's failure, not a dead thread
            if fault is None:
                fault = (error, f"engine listener {listener!r} in {event}()")
    return fault
