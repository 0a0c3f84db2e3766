"""Pushing: the entry points both policies share, from arguments to an op handed to the policy.

``push`` checks its arguments (``_args.normalize``); ``push_checked`` -- the
array layer's entry, with tuples and a Device already -- splits the vars into
reads, writes and read-writes (``_args.split``), finds the lane, makes the
:class:`Op` and hands it to the policy's ``_submit``. ``push_async`` and
``push_event`` make their kinds of op the same way. Each is a protected entry
point (``_ki``): a Ctrl-C landing inside is raised when it returns.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

from autopar.devices import Device
from autopar.engine import _args, _ki
from autopar.engine._op import Completion, Op
from autopar.engine._var import Var

EXTERNAL = "external"  # the lane of push_event's ops: device work queued outside the engine


class Pushing:
    """The push entry points; a policy provides ``_lanes``, ``_make_lane`` and ``_submit``."""

    _lanes: dict[Device, dict[str, Any]]

    def __init__(self) -> None:
        self._seq = itertools.count()

    def _make_lane(self, device: Device, name: str) -> Any:
        raise NotImplementedError

    def _submit(self, op: Op, inline: bool) -> None:
        raise NotImplementedError

    def push(
        self,
        fn: Callable[[], Any],
        reads: Iterable[Var] = (),
        writes: Iterable[Var] = (),
        device: Any = None,
        priority: int = 0,
        name: str | None = None,
        lane: str = "compute",
        inline: bool = False,
    ) -> Op:
        """See ``engine.push``."""
        reads_t, writes_t, dev = _args.normalize(fn, reads, writes, device, priority)
        return self.push_checked(fn, reads_t, writes_t, dev, priority, name, lane, inline)

    @_ki.protect
    def push_checked(
        self,
        fn: Callable[[], Any],
        reads: tuple[Var, ...],
        writes: tuple[Var, ...],
        device: Device,
        priority: int,
        name: str | None,
        lane: str,
        inline: bool,
        bulk: bool = False,
    ) -> Op:
        """``push`` for callers that pass tuples of vars and a Device (the array layer).

        ``reads`` and ``writes`` may overlap and repeat vars (``_args.split``).
        ``inline=True`` lets the op run on the calling thread when it is ready
        at once and its lane is idle: for trusted array kernels, never for user
        functions (they must stay asynchronous, and may call back into autopar).
        ``bulk=True``: ``fn`` stands for several steps and stores the outcome of
        every var it writes itself (``Op.bulk``: it runs even when a var it reads
        has failed, and its success clears no failure) -- a captured segment.
        """
        try:
            if len(writes) == 1 and (not reads or len(reads) == 1 and reads[0] is not writes[0]):
                rw: tuple[Var, ...] = ()  # the common case, without a call: nothing to dedupe
            else:
                reads, writes, rw = _args.split(reads, writes)
            lanes = self._lanes.get(device)
            lane_obj = lanes.get(lane) if lanes is not None else None
            if lane_obj is None:
                lane_obj = self._make_lane(device, lane)
            op = Op(fn, reads, writes, device, lane, priority, name, next(self._seq), rw, lane_obj)
            if bulk:
                op.bulk = True
            self._submit(op, inline)
            return op
        finally:
            if _ki.deferred:
                _ki.check()

    @_ki.entry
    def push_async(
        self,
        fn: Callable[[Completion], Any],
        reads: Iterable[Var] = (),
        writes: Iterable[Var] = (),
        device: Any = None,
        priority: int = 0,
        name: str | None = None,
        lane: str = "compute",
    ) -> Op:
        """See ``engine.push_async``."""
        reads_t, writes_t, dev = _args.normalize(
            fn, reads, writes, device, priority, "fn must be callable with one argument, complete")
        reads_t, writes_t, rw = _args.split(reads_t, writes_t)
        op = Op(fn, reads_t, writes_t, dev, lane, priority, name, next(self._seq), rw)
        op._lane = self._lanes.get(dev, {}).get(lane) or self._make_lane(dev, lane)
        op.completion = Completion(op, self._on_complete)
        self._submit(op, False)
        return op

    @_ki.entry
    def push_event(self, event: Any, writes: Iterable[Var] = (), device: Any = None, name: str | None = None) -> Op:
        """See ``engine.push_event``."""
        _, writes_t, dev = _args.normalize(lambda: None, (), writes, device, 0)
        _, writes_t, _ = _args.split((), writes_t)
        op = Op(None, (), writes_t, dev, EXTERNAL, 0, name or "external device work", next(self._seq))
        op._lane = self._lanes.get(dev, {}).get(EXTERNAL) or self._make_lane(dev, EXTERNAL)
        op.event = event
        self._submit(op, False)
        return op

    def _on_complete(self, completion: Completion, error: BaseException | None) -> None:
        raise NotImplementedError
