"""What an op is, for the profiler: a copy between devices, a sum of copied data, or other work.

Traffic is counted by what ops do, not by their names, so the book's own
hand-written ``allreduce`` (``data[0][:] += data[i].to(data[0].device)``)
counts as much as ``autopar.parallel``'s. The classifier sees each op when it
is pushed -- in program order, before it runs -- with the vars it reads and
writes, and keeps two sets of var ids (vars are numbered once and never
reuse a number):

- ``seen``: vars some earlier op read or wrote. An op that writes only vars
  not seen before makes new arrays; one that writes a seen var (or reads
  what it writes, like ``+=``) writes into an existing array.
- ``arrived``: vars whose last write was a copy between devices.

Then:

- ``copy``: an op on a copy lane (``copy``, ``copy_h2d``, ``copy_d2h``: where
  every copy between devices runs) that makes new arrays. Its outputs have
  *arrived*.
- ``sum``: an op that reads an arrived var and writes into an existing array
  -- a gradient summed with its copy from another device (``+=``, an
  ``allreduce``'s sum) or overwritten by it (the broadcast back) --, or an op
  whose function says it reads every device's array (``between_devices``):
  CPU devices of one process sum their arrays with one op that reads them all
  and writes the sum into each, no copy first (``parallel/_local.py``; a
  captured segment holding one says so too). A ``copyto`` into an existing
  array on one device is not a sum. A forward op that reads an arrived batch
  shard makes new arrays: it is not traffic.
- ``""``: everything else.

Limits: a var first seen inside the profile counts as new, so a profile that
starts between a step's backward and its hand-written sums sees an
overwrite (``data[i][:] = ...``) of a gradient as new work; an ``+=`` is
still found (it reads what it writes).
"""

from __future__ import annotations

import threading

from autopar.engine import Op

COPY_LANES = frozenset({"copy", "copy_h2d", "copy_d2h"})
COPY, SUM = "copy", "sum"
TRAFFIC = frozenset({COPY, SUM})


class Classifier:
    """Classifies ops as they are pushed (thread-safe: pushes may come from several threads)."""

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self._arrived: set[int] = set()
        self._lock = threading.Lock()

    def classify(self, op: Op) -> str:
        writes = [v.id for v in op.writes]
        reads = [v.id for v in op.reads] + [v.id for v in op.rw]
        with self._lock:
            existing = bool(op.rw) or any(w in self._seen for w in writes)
            if op.lane in COPY_LANES and writes and not existing:
                kind = COPY
            elif existing and (getattr(op.fn, "between_devices", False) or any(r in self._arrived for r in reads)):
                kind = SUM
            else:
                kind = ""
            self._seen.update(writes)
            self._seen.update(reads)
            if kind == COPY:
                self._arrived.update(writes)
            else:
                self._arrived.difference_update(writes)
        return kind
