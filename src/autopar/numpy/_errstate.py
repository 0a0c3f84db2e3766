"""NumPy's floating-point error settings: ``errstate``, ``seterr``, ``geterr``.

autopar does not check results for floating-point errors: a division by
zero gives ``inf``, an invalid operation ``nan``, silently -- what NumPy does
under ``errstate(all="ignore")``, and what torch's kernels do. So ``"ignore"``
and ``"warn"``/``"print"``/``"log"`` (asked for a message autopar would not
print) are accepted as settings that change nothing; ``"raise"`` and
``"call"``, which would need the check, are refused with the way to test
results instead (``isfinite``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_KINDS = ("divide", "over", "under", "invalid")
_ACCEPTED = ("ignore", "warn", "print", "log", None)


def _check(settings: dict[str, Any]) -> None:
    for name, value in settings.items():
        if name not in (*_KINDS, "all"):
            raise TypeError(f"seterr: {name}= is not a floating-point error kind; expected all, {', '.join(_KINDS)}")
        if value not in _ACCEPTED:
            raise ValueError(
                f"seterr: {name}={value!r} is not supported: autopar does not check results for floating-point "
                f"errors (they give inf or nan, as errstate(all='ignore')); test them with isfinite(x).all()"
            )


def geterr() -> dict[str, str]:
    """What autopar does on each floating-point error: ignore it (module note)."""
    return dict.fromkeys(_KINDS, "ignore")


def seterr(all: Any = None, divide: Any = None, over: Any = None, under: Any = None,  # noqa: A002
           invalid: Any = None) -> dict[str, str]:  # fmt: skip
    """Accepts ``"ignore"`` and the message settings (nothing changes); refuses ``"raise"``/``"call"``."""
    _check({"all": all, "divide": divide, "over": over, "under": under, "invalid": invalid})
    return geterr()


@contextlib.contextmanager
def errstate(**settings: Any) -> Iterator[None]:
    """``with errstate(divide="ignore"):`` -- accepted as :func:`seterr` accepts it."""
    settings.pop("call", None)
    _check(settings)
    yield
