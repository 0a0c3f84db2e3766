"""Checking ``push``'s arguments, and splitting its vars into reads, writes and read-writes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from autopar.devices import Device, cpu
from autopar.engine._var import Var

_DEFAULT_DEVICE = cpu(0)  # cpu:0 always exists


def _var_tuple(items: Any, what: str) -> tuple[Var, ...]:
    if isinstance(items, Var):  # a subclass too: an array's storage is its var
        return (items,)
    out = items if type(items) is tuple else tuple(items)
    for item in out:
        if not isinstance(item, Var):
            raise TypeError(f"push: {what} must hold engine.Var objects; got {item!r} ({type(item).__name__})")
    return out


def split(reads: tuple[Var, ...], writes: tuple[Var, ...]) -> tuple[tuple[Var, ...], tuple[Var, ...], tuple[Var, ...]]:
    """``(reads only, writes, read-writes)`` without repeats.

    A var in both ``reads`` and ``writes`` is a *read-write*: it is ordered as a
    write and kept in ``writes``, and listed again in the third tuple because a
    failure on it stops the op (contract, failures rule 2). A var only in ``writes`` is an
    *overwrite*. The common case -- no var repeated, none in both -- returns
    the tuples as given after a few identity tests.
    """
    if len(writes) > 1:
        if len(writes) == 2:
            if writes[0] is writes[1]:
                writes = writes[:1]
        else:
            unique = tuple(dict.fromkeys(writes))
            if len(unique) != len(writes):
                writes = unique
    if not reads:
        return reads, writes, ()
    if not writes:
        if len(reads) > 1:
            unique = tuple(dict.fromkeys(reads))
            if len(unique) != len(reads):
                reads = unique
        return reads, writes, ()
    if len(writes) == 1:
        w = writes[0]
        if len(reads) == 1:
            if reads[0] is w:
                return (), writes, writes
            return reads, writes, ()
        if len(reads) == 2 and reads[0] is not reads[1] and reads[0] is not w and reads[1] is not w:
            return reads, writes, ()  # x + y: two arrays read, a new one written
    written = set(writes)
    only: dict[Var, None] = {}
    both: dict[Var, None] = {}
    for var in reads:
        (both if var in written else only)[var] = None
    if not both and len(only) == len(reads):
        return reads, writes, ()
    return tuple(only), writes, tuple(both)


def normalize(
    fn: Callable[..., Any],
    reads: Iterable[Var],
    writes: Iterable[Var],
    device: Any,
    priority: int,
    what: str = "fn must be callable with no arguments",
) -> tuple[tuple[Var, ...], tuple[Var, ...], Device]:
    """Check push's arguments; return reads, writes (as tuples of vars) and the device."""
    if not callable(fn):
        raise TypeError(f"push: {what}; got {fn!r}")
    writes_t = _var_tuple(writes, "writes") if writes else ()
    reads_t = _var_tuple(reads, "reads") if reads else ()
    if device is None:
        device = _DEFAULT_DEVICE
    elif type(device) is not Device:
        device = Device(device)
    if type(priority) is not int:
        raise TypeError(f"push: priority must be an int; got {priority!r}")
    return reads_t, writes_t, device
