"""What a node runtime agrees to run: autopar's own ops, and the user's own ``call`` functions.

A remote call never ships code from autopar: it *names* an entry of the op
table (``arrays._table``), which the node looks up in its own copy of
autopar (:func:`lookup`). The only code that travels is the function the user
handed to ``autopar.call`` -- the ``fn`` static parameter of the table's
``call`` entry. :func:`check` is the gate every call passes on the node
before anything runs: a known kind of call, an op the table has, and no
function among the static parameters of any other op.
"""

from __future__ import annotations

from typing import Any

KINDS = ("bind", "into", "read", "write", "copy", "seed", "grad")
USER_CODE_OP = "call"  # the table entry whose static `fn` is the user's own function
# The table entries that draw from the device's random generator (each run advances it): the draws
# ("random", "random.choice") and dropout's mask -- every op bound with the generator's var as `state`.
DRAWS = frozenset({"random", "random.choice", "random.draw", "dropout"})


def idempotent(call: tuple[Any, ...]) -> bool:
    """Whether running ``call`` twice leaves the node as running it once (so it may be sent again).

    Reads, uploads, copies and seeding set a key to a value; a ``bind``
    makes fresh arrays under its output keys from inputs it only reads (the
    user's ``autopar.call`` functions are taken to be pure, as every kernel
    is) -- except an op that draws from the generator (:data:`DRAWS`: a
    second run would advance it again and give other numbers). An ``into``
    writes in place (``x += 1`` twice is not once) and ``grad`` adds into
    gradients: never sent twice.
    """
    kind = call[0]
    if kind == "bind":
        return call[1] not in DRAWS
    return kind in ("read", "write", "copy", "seed")


def lookup(name: str) -> Any:
    """The op table entry named ``name``; ``KeyError`` if autopar has no such op."""
    from autopar.arrays import _namespace  # noqa: F401 - every op module, so the table is complete
    from autopar.arrays._table import TABLE

    entry = TABLE.get(name) if isinstance(name, str) else None
    if entry is None:
        raise KeyError(f"remote op {name!r} is not an autopar op; a node runs only the op table's entries "
                       f"({len(TABLE)} of them, e.g. add, matmul) and the user's autopar.call functions")
    return entry


def check(call: Any) -> None:
    """Raise unless ``call`` asks for one of autopar's ops (or the user's own ``call`` function)."""
    if not isinstance(call, tuple) or not call or call[0] not in KINDS:
        raise ValueError(f"remote call {call!r:.80}: not an autopar call (expected one of {', '.join(KINDS)})")
    if call[0] not in ("bind", "into"):
        return
    name, static = call[1], call[4 if call[0] == "into" else 3]
    lookup(name)
    if not isinstance(static, dict):
        raise TypeError(f"remote op {name!r}: static parameters must be a dict, not {type(static).__name__}")
    for key, value in static.items():
        if _has_code(value) and not (name == USER_CODE_OP and key == "fn"):
            raise TypeError(f"remote op {name!r}: static parameter {key!r} is code ({value!r:.60}); "
                            f"a node runs no code but autopar's ops and the functions given to autopar.call")


def _has_code(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_has_code(v) for v in value)
    if isinstance(value, dict):
        return any(_has_code(v) for v in value.values())
    return callable(value) and not isinstance(value, type) and not _is_dtype(value)


def _is_dtype(value: Any) -> bool:
    from autopar.arrays._dtypes import DType

    return isinstance(value, DType)
