"""Vars and failures: the state the engine keeps per piece of data."""

from __future__ import annotations

import copy
import itertools
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autopar.engine._op import Op

_var_ids = itertools.count()


class Var:
    """A handle for a piece of state whose reads and writes are ordered.

    ``version`` counts the writes to it that have finished (for an op on a
    stream lane: whose device work has finished); ``failure`` is the failure
    stored on it by a failed write (the contract's failure rules), or ``None``.
    """

    __slots__ = (
        "_name",
        "id",
        "version",
        "failure",
        "_reading",
        "_writing",
        "_queue",
        "_writes_pushed",
        "__dict__",  # made only for a var that someone waits on, or that device work in flight touches
        "__weakref__",
    )

    # Rarely set, so class-level defaults: a new var (one per array) costs less.
    _waiters = 0  # threads in wait_for_var on this var
    # Device work in flight (_device.py): the op on a stream lane that wrote this var last
    # and whose device work has not finished, and per lane the last such op that read it since.
    _writer: Op | None = None
    _readers: dict[object, Op] | None = None

    def __init__(self, name: str | None = None) -> None:
        self.id = next(_var_ids)
        self._name = name
        self.version = 0
        self.failure: Failure | None = None
        # Tracker state (_tracker.py): granted reads not yet released, a granted
        # write not yet released, and the requests waiting, in push order (a deque
        # made by the first request that has to wait).
        self._reading = 0
        self._writing = False
        self._queue: deque[tuple[Op, bool]] | None = None
        self._writes_pushed = 0

    @property
    def name(self) -> str:
        return self._name if self._name is not None else f"var{self.id}"

    @property
    def pending_writes(self) -> int:
        """Writes pushed to this var that have not finished yet."""
        return self._writes_pushed - self.version

    def __repr__(self) -> str:
        state = "failed" if self.failure is not None else ("writing" if self._writing else "idle")
        if self._reading and not self._writing:
            state = f"{self._reading} reading"
        return f"<Var {self.name!r} version={self.version} {state} queued={len(self._queue or ())}>"


class Failure:
    """An error raised inside an op, stored on every var the op writes.

    ``origin`` says what raised it when it was not the op's own function (an
    engine listener, a device event, the engine itself). ``observed`` becomes
    true once a blocking read (or ``waitall``) has raised it.
    """

    __slots__ = ("op_name", "device", "error", "origin", "observed")

    def __init__(self, op_name: str, device: object, error: BaseException, origin: str = "") -> None:
        self.op_name = op_name
        self.device = device
        self.error = error
        self.origin = origin
        self.observed = False

    def exception(self) -> BaseException:
        """A fresh exception of the original type whose message names the failed op.

        The original (with its traceback from the worker) is chained as ``__cause__``.
        """
        err = self.error
        where = f"in autopar operation {self.op_name!r} on {self.device}"
        if self.origin:
            where += f"; raised by {self.origin}"
        message = str(err)
        fresh: BaseException
        try:
            fresh = type(err)(f"{message} [{where}]" if message else where)
            if type(fresh) is not type(err):
                raise TypeError("constructor returned another type")
        except Exception:
            fresh = copy.copy(err)
            fresh.add_note(where)
        fresh.__cause__ = err
        return fresh

    def __repr__(self) -> str:
        return f"<Failure {type(self.error).__name__} in {self.op_name!r} on {self.device}>"
