"""Observer hooks: op pushed / started / finished, with device, lane and times.

A listener is any object with ``op_pushed(op)``, ``op_started(op)`` and
``op_finished(op)``. They are called on whatever thread the event happens on
(the pusher's, a lane worker's), so a listener must be quick and thread-safe.
Nobody listening costs one truth test of a module global per event, and no
timestamps are taken.
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
