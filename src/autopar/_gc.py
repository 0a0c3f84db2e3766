"""Python's garbage collector and many live arrays: what is alive when the array layer loads is frozen.

Design note
-----------
CPython's cyclic collector scans every tracked container of a generation
when it collects that generation, and it collects the oldest one (a *full*
collection) whenever the objects promoted into it since the last one exceed
a quarter of those already there. Importing torch leaves about 170,000 such
objects (modules, functions, classes, their dicts) alive for the life of the
process. Each array is two more (the ``NDArray`` and its ``Storage``, which
is its engine var) beside torch's tensor, so a program that keeps many
results -- 20,000 of ``x + 1`` in a list -- promotes enough of them to
trigger full collections that scan torch's objects again each time: on the
development machine 4.6 us per op against 2.9 with the collector off, and
torch eager 1.9 (``python bench/per_op.py --only held``).

So when the array layer has loaded (torch with it), :func:`freeze_once`
calls ``gc.freeze()`` once: every object alive then moves to the permanent
generation, which collections never scan. Thresholds are unchanged; full
collections now scan only what was made since, and happen when that has
grown by a quarter. This is what CPython's documentation suggests for
long-lived start-up state; Instagram's servers and ``autopar train`` (after
its warm-up) do the same.

The risk, and the way out: an object alive at that moment which later
becomes part of an unreachable reference cycle is not reclaimed (objects
freed by reference counting -- most -- are freed as before; arrays made
after the freeze are collected as usual). No ``gc.collect()`` is run first
(it costs 40 ms; the import leaves a few dozen objects of garbage, kept).
A program that builds large cyclic structures before its first array and
drops them later can call ``gc.unfreeze()`` (they become collectable again),
or set ``AUTOPAR_GC_FREEZE=0`` to leave the collector alone.
"""

from __future__ import annotations

import gc

from autopar import _config

_done = False


def freeze_once() -> bool:
    """Freeze every object alive now, the first time this is called (unless ``AUTOPAR_GC_FREEZE=0``).
    Returns whether this call froze them."""
    global _done
    if _done:
        return False
    _done = True
    if not _config.gc_freeze():
        return False
    gc.freeze()
    return True
