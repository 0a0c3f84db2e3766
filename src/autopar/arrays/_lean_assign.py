"""Index assignment's lean path: ``x[k] = 3`` and ``x[2:6] = y`` without the general dispatcher.

Design note
-----------
``x[k] = v`` through the general path (``_indexing.setitem``) derives a view
array, plans ``assign``, turns a Python number into a 0-d tensor and pushes
a closure: about 10 us a call on a 2-core machine, 7x torch's own
``t[k] = v``. Most index assignments in a loop are the simplest kind, and
here they push a module function with its arguments straight to the engine,
as the operators' lean paths do (``_dispatch``'s note):

- the target is a whole, contiguous array on a CPU device of this process,
  with no interpreter active (no capture tracing), neither it nor an array
  value carrying a gradient record (the general path refuses in-place
  writes of recorded arrays);
- the key is an int, a slice, or a tuple of them (the view is the same
  ``_views.index`` computes for the general path, so are its IndexErrors);
- the value is a Python number that torch's ``fill_`` stores exactly as the
  general path's 0-d tensor copy does -- the envelope below, found by
  comparing the two over every dtype: an int in the range of an integer
  target, a bool into a bool target, a number within a floating or complex
  target's range, or inf or nan (``fill_`` refuses a finite value beyond the
  dtype's largest, which the copy rounds to inf, and ints beyond int64) -- or an
  array of the target's dtype and exactly the view's shape, whole,
  contiguous, on the same device and not the target's own memory (a
  ``from_torch`` window of outside memory may overlap another: those take
  the general path, which copies first).

Anything else takes the general path, so every error and cast is its. The
engine sees what the general path pushes: the value's var read, the
target's var read and written for a partial write (rule 2 of the failure
rules: it keeps what it does not write, so a failed target stays failed),
written only when the key covers the whole array (an overwrite, which
clears a failure).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from autopar import engine
from autopar.arrays import _autograd, _dtypes, _interpreters, _views
from autopar.arrays._array import NDArray
from autopar.arrays._dispatch import _dispatch_modes, _function_mode
from autopar.arrays._plan import THREADED_WORK, TINY_WORK

_LARGEST: dict[Any, float] = {}  # floating or complex torch dtype -> its largest finite value


def _largest(tdtype: torch.dtype) -> float:
    found = _LARGEST.get(tdtype)
    if found is None:
        found = _LARGEST[tdtype] = float(torch.finfo(tdtype).max)  # (a complex dtype's finfo is its parts')
    return found


def _fills_exactly(dtype: Any, value: Any) -> bool:
    """Whether ``fill_(value)`` stores what the general path's 0-d tensor copy stores (module note)."""
    tv = type(value)
    kind = dtype.kind
    if kind == "f" or kind == "c":
        hi = _largest(dtype.torch)
        if tv is float:  # fill_ refuses a finite value beyond the dtype's largest, which the copy rounds
            return -hi <= value <= hi or value != value or value in (float("inf"), float("-inf"))
        return -(1 << 63) <= value < (1 << 63) and -hi <= value <= hi
    if kind == "b":
        return tv is bool
    if tv is not int:
        return False
    lo, hi = _dtypes.iinfo_tuple(dtype)
    return lo <= value <= hi


def _run_fill(storage: Any, view: Any, value: Any) -> None:
    base = storage.base()
    (base if view is None else _views._positive(base, view)[0]).fill_(value)


def _run_copy(storage: Any, view: Any, source: Any) -> None:
    _views.write(storage.base(), view, source.base())


def assign(a: Any, key: Any, value: Any) -> bool:
    """``a[key] = value`` pushed on the lean path; False (nothing done) where the general path is needed."""
    if _interpreters.active or a._view is not None or _autograd.used and a._ag is not None:
        return False
    storage = a._storage
    device = a.device
    if device.kind != "cpu" or device.node is not None or not storage.contiguous:
        return False
    tk = type(key)
    if tk is int or tk is slice:
        keys: tuple[Any, ...] = (key,)
    elif tk is tuple and all(type(k) is int or type(k) is slice for k in key):
        keys = key
    else:
        return False
    tv = type(value)
    if tv is NDArray:
        source = value._storage
        if value._view is not None or not source.contiguous or value.device is not device or source is storage or \
                value._dtype is not a._dtype or storage.lane is None and source.lane is None or \
                _autograd.used and value._ag is not None:
            return False
    elif not (tv is float or tv is int or tv is bool) or not _fills_exactly(a._dtype, value):
        return False
    view = _views.simplify(storage, _views.index("index assignment", _views.layout(storage, None), keys))
    shape = storage.shape if view is None else view.shape
    if tv is NDArray and value.shape != shape:
        return False  # broadcasting, or a shape error: the general path's
    covers = _views.covers(storage, view)
    work = storage.numel if view is None else math.prod(view.shape)
    fn: Callable[[Any, Any, Any], None]
    reads: tuple[Any, ...]
    if tv is NDArray:
        fn, args, reads = _run_copy, (storage, view, source), (source,)
    else:
        fn, args, reads = _run_fill, (storage, view, value), ()
    rw = () if covers else (storage,)
    eng = engine._engine or engine.current_engine()
    if work <= TINY_WORK:
        one_thread = work > THREADED_WORK
        pure = not one_thread and not _function_mode() and not _dispatch_modes()
        eng.push_small(fn, args, reads, (storage,), device, "index assignment", "compute", one_thread, rw, (), pure)
    else:
        eng.push_checked(partial(fn, *args), (*reads, *rw), (storage,), device, 0, "index assignment", "compute",
                         False)  # fmt: skip
    return True
