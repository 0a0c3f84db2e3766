"""``autopar.capture``: the captured function, its signatures and its cache of traces.

A call's *signature* is the structure of its arguments (tuples, lists and
dicts are walked), each array's shape, dtype, device, view and which other
arguments share its storage, whether it requires grad, every other
argument's type and value (they must be hashable: they are baked into the
trace), the gradient mode the call is made in, and the thread's default
float (``set_default_dtype``, NumPy mode). An argument in outside memory
(``from_torch``) is told apart from one in autopar's own: two windows on one
tensor may overlap, so its in-place writes are not replayed in place. A new signature is
traced (``_trace.py``: the call runs eagerly while the tracer records it);
a known one is replayed (``_program.py``). The traces are kept in a
least-recently-used cache of ``max_traces`` (default ``AUTOPAR_CAPTURE_TRACES``,
8): a ninth signature drops the one used longest ago, which traces again
if it comes back.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from autopar import _config
from autopar._capture._closure import closed_over
from autopar._capture._program import FAILED, STALE, Program
from autopar._capture._trace import Tracer
from autopar.arrays import _autograd, _dtypes, _interpreters
from autopar.arrays._array import NDArray
from autopar.arrays._autograd import Leaf
from autopar.errors import CaptureError

MODES = ("auto", "replay", "compile", "fastest")


def _flatten(obj: Any, arrays: list[NDArray], name: str) -> Any:
    if type(obj) is NDArray:
        arrays.append(obj)
        return ("a", len(arrays) - 1)
    if type(obj) in (tuple, list):
        return (type(obj).__name__, tuple(_flatten(o, arrays, name) for o in obj))
    if type(obj) is dict:
        return ("d", tuple(obj), tuple(_flatten(v, arrays, name) for v in obj.values()))
    if hasattr(obj, "__dlpack__") and type(obj).__hash__ is not None:  # a tensor (hashable by identity): its changing contents would be baked in
        raise CaptureError(
            f"capture({name}): an argument is a {type(obj).__module__}.{type(obj).__name__}, whose contents a trace "
            f"would bake in as they are now; pass it as an autopar array (autopar.from_torch(t) shares its memory, "
            f"autopar.asarray(t) copies it)"
        )
    try:
        hash(obj)
    except TypeError:
        raise CaptureError(
            f"capture({name}): an argument of type {type(obj).__name__} is not hashable, and a captured function's "
            f"non-array arguments are part of its signature; pass arrays as autopar arrays (autopar.asarray) and "
            f"other values as hashable ones (a tuple for a list)"
        ) from None
    return ("v", type(obj), obj)


def _rebuild(spec: Any, arrays: list[Any]) -> Any:
    kind = spec[0]
    if kind == "a":
        return arrays[spec[1]]
    if kind == "tuple":
        return tuple(_rebuild(s, arrays) for s in spec[1])
    if kind == "list":
        return [_rebuild(s, arrays) for s in spec[1]]
    if kind == "d":
        return {k: _rebuild(s, arrays) for k, s in zip(spec[1], spec[2])}
    return spec[2]


def _array_key(a: NDArray, first: dict[int, int], i: int) -> tuple[Any, ...]:
    ag = a._ag
    if ag is not None and type(ag) is not Leaf:
        raise CaptureError(
            f"capture: argument array {i} (shape {a.shape}) was computed by a recorded operation, so gradients "
            f"would flow out of the captured function; pass it detached (x.detach()), or compute it inside"
        )
    view = a._view
    storage = a._storage
    # outside memory (from_torch; lane None) may overlap another argument's: a replay must not
    # write it with torch's in-place kernel, as eagerly (``_trace.Tracer.bind_into``)
    # and an array made in NumPy mode keeps NumPy's rules (``Storage.npmode``): the plans differ
    return (a.shape, a._dtype, a.device, first.setdefault(id(storage), i), storage.shape, storage.lane is None,
            storage.npmode, None if view is None else (view.offset, view.shape, view.strides),
            None if ag is None else (ag.req, ag.always))  # fmt: skip


class Captured:
    """What ``autopar.capture(fn)`` returns: call it as ``fn``; ``traces`` says what it holds."""

    def __init__(self, fn: Callable[..., Any], mode: str = "auto", max_traces: int | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"capture: fn={fn!r} is not callable; pass a function (or use @autopar.capture)")
        if mode not in MODES:
            raise ValueError(f"capture: mode={mode!r}; expected one of {', '.join(map(repr, MODES))}")
        if max_traces is None:
            max_traces = _config.capture_traces()
        elif isinstance(max_traces, bool) or not isinstance(max_traces, int) or max_traces < 1:
            raise ValueError(f"capture: max_traces={max_traces!r}; expected a whole number >= 1 (or None for "
                             f"AUTOPAR_CAPTURE_TRACES, default 8)")  # fmt: skip
        self.fn = fn
        self.mode = mode
        self.max_traces = max_traces
        self.name = getattr(fn, "__name__", type(fn).__name__)
        self._traces: OrderedDict[Any, Program] = OrderedDict()
        self._lock = threading.Lock()
        self.traced = 0  # how many times a call traced
        functools.update_wrapper(self, fn)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    @property
    def traces(self) -> list[Program]:
        """The cached traces, least recently used first."""
        with self._lock:
            return list(self._traces.values())

    def __repr__(self) -> str:
        traces = self.traces
        backends = sorted({p.backend for p in traces})
        reasons = sorted({r for p in traces for r in p.reasons})
        said = f", {'/'.join(backends)}" if backends else ""
        why = f" (replay because {'; '.join(reasons)})" if reasons else ""
        return (f"<captured function {self.name}: {len(traces)} of at most {self.max_traces} traces{said}, "
                f"mode={self.mode!r}{why}>")  # fmt: skip

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _interpreters.current() is not None:  # inside another trace (or capture): that one records it
            return self.fn(*args, **kwargs)
        arrays: list[NDArray] = []
        spec = _flatten((args, kwargs), arrays, self.name)
        first: dict[int, int] = {}
        state = _autograd._state
        key = (spec, tuple(_array_key(a, first, i) for i, a in enumerate(arrays)), state.mode, state.training,
               _dtypes.numpy_mode.on)  # the thread's default float (creations and Python floats take it)
        with self._lock:
            program = self._traces.get(key)
            if program is not None:
                self._traces.move_to_end(key)
        if program is not None:
            results = program.run(arrays)
            if results is FAILED:  # an input already failed: step by step, so only what depends on it fails
                return _without_records(self.fn(*args, **kwargs), self.name)
            if results is not STALE:
                return _rebuild(program.outputs, results)
            with self._lock:
                self._traces.pop(key, None)
        return self._trace(key, args, kwargs, arrays)

    def _trace(self, key: Any, args: Any, kwargs: Any, arrays: list[NDArray]) -> Any:
        tracer = Tracer(self.name)
        for i, a in enumerate(arrays):
            tracer.add_arg(a, i)
        with _interpreters.interpreting(tracer):
            out = self.fn(*args, **kwargs)
        returned: list[NDArray] = []
        spec = _flatten(out, returned, self.name)
        ids = {id(a): i for i, a in enumerate(arrays)}
        where: list[tuple[str, Any]] = []
        for r in returned:
            if id(r) in ids:
                where.append(("arg", ids[id(r)]))
            else:
                op = tracer.operand(r)
                where.append(("slot", op))
        reached = closed_over(self.fn)
        pinned = {i: a._storage for i, a in enumerate(arrays) if id(a._storage) in reached}
        program = Program(self.name, tracer, spec, where, self.mode, pinned)
        with self._lock:
            self._traces[key] = program
            while len(self._traces) > self.max_traces:
                self._traces.popitem(last=False)
            self.traced += 1
        return _without_records(out, self.name, spec, returned)


def _without_records(out: Any, name: str, spec: Any = None, returned: list[NDArray] | None = None) -> Any:
    """``out`` with its arrays' gradient records dropped: a captured call's results carry none, whichever
    way it ran (the contract). ``spec``, ``returned``: ``out`` already flattened, if it was."""
    if returned is None:
        returned = []
        spec = _flatten(out, returned, name)
    if not any(r._ag is not None and type(r._ag) is not Leaf for r in returned):
        return out
    return _rebuild(spec, [r.detach() if r._ag is not None and type(r._ag) is not Leaf else r for r in returned])


def capture(fn: Callable[..., Any] | None = None, *, mode: str = "auto", max_traces: int | None = None) -> Any:
    """Capture ``fn``: later calls with a traced signature run as one engine op per device and lane.

    ``mode``: ``"auto"`` (torch.compile where a compiler is available and a
    segment has kernels to fuse, else replay), ``"replay"`` (the recorded
    kernels, no compiler), ``"compile"`` (every segment the compiler takes,
    one kernel too) or ``"fastest"`` (as ``"auto"``, then each compiled
    segment timed once against its replay and the faster kept). ``max_traces``: signatures kept
    (default ``AUTOPAR_CAPTURE_TRACES``, 8). Usable as ``@capture`` and
    ``@capture(mode="replay")``. See the guide's capture section.
    """
    if fn is None:
        return functools.partial(capture, mode=mode, max_traces=max_traces)
    return Captured(fn, mode, max_traces)


__all__ = ["Captured", "capture"]
