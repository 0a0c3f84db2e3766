"""The arrays a captured function closes over, found at trace time to tell them from its arguments.

Design note
-----------
A trace knows storages, not Python names: when ``f(w)`` is traced and ``f``
also reads a closed-over ``w``, both reads land on one slot, an argument's,
and a later ``f(x)`` would read ``x`` where ``f`` reads ``w``. So after each
trace the function's reachable arrays -- closure cells, the globals its code
names (nested code too), a bound method's object, a partial's arguments,
walked through containers and objects' attributes a few levels deep -- are
collected, and an argument whose storage is one of them is *pinned*
(``Program.pinned``): a call with another array there traces again. The
search is a bounded heuristic (depth, object count, objects whose attributes
raise are skipped); arrays reached deeper are not found.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from autopar.arrays._array import NDArray


def closed_over(fn: Any, limit: int = 4) -> set[int]:
    """``id`` of each storage of an array ``fn`` closes over: its closure cells and the globals its
    code names (nested code too), a bound method's object, a partial's arguments, walked through
    containers and objects' attributes ``limit`` levels deep. At trace time only: an argument whose
    storage is one of these is *pinned* (``Program.pinned``) -- the trace cannot tell the function's
    reads of it as the argument from those through the closure."""
    found: set[int] = set()
    seen: set[int] = set()

    def names(code: Any) -> set[str]:
        out = set(code.co_names)
        for c in code.co_consts:
            if type(c) is type(code):
                out |= names(c)
        return out

    def walk(obj: Any, depth: int) -> None:
        if depth < 0 or id(obj) in seen or len(seen) > 20_000:
            return
        seen.add(id(obj))
        try:
            look(obj, depth)
        except Exception:  # an object whose attributes raise (a proxy): not searched
            pass

    def look(obj: Any, depth: int) -> None:
        if type(obj) is NDArray:
            found.add(id(obj._storage))
        elif type(obj) in (list, tuple, set, frozenset):
            for o in obj:
                walk(o, depth - 1)
        elif type(obj) is dict:
            for o in obj.values():
                walk(o, depth - 1)
        elif isinstance(obj, functools.partial):
            walk(obj.func, depth - 1)
            walk(obj.args, depth - 1)
            walk(obj.keywords, depth - 1)
        elif hasattr(obj, "__func__") and hasattr(obj, "__self__"):  # a bound method
            walk(obj.__func__, depth - 1)
            walk(obj.__self__, depth - 1)
        elif hasattr(obj, "__code__"):  # a function: its cells and the globals it names
            for cell in obj.__closure__ or ():
                try:
                    walk(cell.cell_contents, depth - 1)
                except ValueError:  # an empty cell
                    pass
            space = getattr(obj, "__globals__", {})
            for name in names(obj.__code__):
                if name in space:
                    walk(space[name], depth - 1)
        elif not isinstance(obj, (type, types.ModuleType)) and isinstance(getattr(obj, "__dict__", None), dict):
            for o in obj.__dict__.values():
                walk(o, depth - 1)

    walk(fn, limit)
    return found


__all__ = ["closed_over"]
