"""A training segment compiled as one graph: its forward and its backward traced together.

Design note
-----------
The staged compile (``_staged.py``) runs a training segment as a compiled
forward whose backward AOTAutograd compiled too, reached through
``torch.autograd.grad``: each call goes through dynamo's frame machinery,
AOTAutograd's runtime wrappers, an autograd Function and the autograd
engine -- about 100 us of Python, holding the interpreter lock, before the
first kernel of a LeNet step. Two CPU devices' lanes start a data-parallel
step's segments at the same moment and take turns at that lock.

A segment that is a recorded forward followed by the backward of its loss
-- each device's share of a data-parallel step -- is traced instead as one
function: its replay (``_backends.body``: the kernels, then
``torch.autograd.grad`` and the writes into ``.grad``) through torch's
``make_fx``, whose graph holds the backward's kernels as well (the autograd
engine runs them under the trace, as AOTAutograd's own joint trace does).
``torch.compile`` compiles that graph with inductor's C++ wrapper: one call,
no autograd at run time, the gradients written into ``.grad`` as the
graph's input mutations. Measured on the 2-core machine (a data-parallel
LeNet step, batch 128 per device, alternated fresh processes): two devices
26.3-26.8k samples/s and 1.88-1.94x one device, against 23.5-25.6k and
1.75-1.87x staged.

Tracing with ``make_fx`` sets a flag of ``torch.fx`` for the whole process,
under which a compiled function called on another thread raises. So every
compiled call of a capture holds a shared claim (``calls``, a
readers-writer lock) and a trace an exclusive one: it waits for the calls in
flight and holds new ones back while it traces, and only then. Not covered:
torch's own traces while it compiles a staged backward at its first
``torch.autograd.grad`` on a lane (an inductor pass traces with ``make_fx``
there, outside torch's compiling mark) -- seen in a stack, not seen to fail.

Any failure to trace or compile falls back to the staged compile of the
same segment, which ``Backend`` falls back from in turn (to replay).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from autopar._capture import _backends
from autopar._capture._trace import BackwardStep, KernelStep, Step


class Calls:
    """Compiled calls in flight, shared; a trace, exclusive (a readers-writer lock)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._calls = 0
        self._tracing = False

    @contextmanager
    def call(self) -> Iterator[None]:
        with self._cond:
            while self._tracing:
                self._cond.wait()
            self._calls += 1
        try:
            yield
        finally:
            with self._cond:
                self._calls -= 1
                if not self._calls:
                    self._cond.notify_all()

    @contextmanager
    def trace(self) -> Iterator[None]:
        with self._cond:
            while self._tracing or self._calls:
                self._cond.wait()
            self._tracing = True
        try:
            yield
        finally:
            with self._cond:
                self._tracing = False
                self._cond.notify_all()


calls = Calls()


def fits(seg_steps: Sequence[Step]) -> bool:
    """Whether a segment is a recorded forward and then one backward: kernels recording gradients, the
    backward last, not retaining its graph and not a piece of a cut one."""
    *forward, last = seg_steps
    return (type(last) is BackwardStep and not last.retain and not last.cut and not last.above and not last.below
            and bool(forward) and all(type(s) is KernelStep and s.grad for s in forward))  # fmt: skip


def make(replay: Callable[..., tuple[Any, ...]],
         staged: Callable[..., Callable[..., Any]]) -> Callable[..., Callable[..., Any]]:  # fmt: skip
    """A factory of the joint driver of a segment that ``fits``: ``replay``, the segment's replay
    (``_backends.body``), traced and compiled; ``staged``: the staged compile's factory, its fallback."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def factory(cpp: bool = True) -> Callable[..., Any]:
        compiled: list[Any] = []  # the compiled graph, once traced (or the staged driver, if tracing failed)

        def trace(tensors: tuple[Any, ...]) -> Any:
            try:
                with calls.trace():
                    graph = make_fx(lambda *ts: replay(*ts))(*tensors)  # (runs the segment once, on the warm-up's clones)
                options: dict[str, Any] = {"guard_filter_fn": _backends.no_guards, "cpp_wrapper": cpp}
                return torch.compile(graph, dynamic=False, fullgraph=True, options=options)
            except Exception:  # make_fx or dynamo refused: the staged compile, as for any segment
                return staged(cpp)

        def driver(*tensors: Any, shared: Any = None, storages: Any = None) -> tuple[Any, ...]:
            if not compiled:
                compiled.append(trace(tensors))
            run = compiled[0]
            if not isinstance(run, torch.nn.Module):
                return run(*tensors, shared=shared, storages=storages)
            with calls.call():
                return tuple(run(*tensors))

        driver.joint = lambda: bool(compiled) and isinstance(compiled[0], torch.nn.Module)  # type: ignore[attr-defined]
        return driver

    return factory
