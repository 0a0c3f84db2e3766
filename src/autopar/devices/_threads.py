"""Torch intra-op threads for a lane's worker, without changing them for anyone else.

``torch.set_num_threads(n)`` sets the calling thread's OpenMP threads, and
*also* a process-wide number that every thread started later takes on its
first torch call (ATen's ``init_num_threads``). A CPU lane's worker needs its
device's share of the cores; a user's thread started later must keep torch's
default. So a worker first settles its own threads (one torch call), then
sets its share, then puts the process-wide number back to what a fresh thread
got before -- from a short-lived helper thread, whose own setting dies with it.

A user thread started during those few hundred microseconds may still see the
worker's number; configuring happens once per worker, under a lock.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_lock = threading.Lock()


def _in_fresh_thread(call: Any) -> Any:
    box: list[Any] = []
    helper = threading.Thread(target=lambda: box.append(call()), name="autopar-threads-probe", daemon=True)
    helper.start()
    helper.join()
    return box[0] if box else None


def set_worker_threads(n: int) -> bool:
    """Give the calling thread ``n`` intra-op threads; False if torch is not imported yet."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    with _lock:
        default = _in_fresh_thread(torch.get_num_threads)
        torch.get_num_threads()  # this thread's first torch call: it settles on the default now
        torch.set_num_threads(n)
        if default is not None and default != n:
            _in_fresh_thread(lambda: torch.set_num_threads(default))
    return True
