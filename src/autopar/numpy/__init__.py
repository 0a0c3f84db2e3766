"""``import autopar.numpy as np``: a drop-in for NumPy programs.

The same functions as ``autopar`` (one op table, no copy), served in NumPy
mode: Python floats and default-dtype creations are ``float64``, integer
inputs of floating functions follow NumPy's rules, ``int / int`` and ``mean``
give ``float64`` -- NumPy 2's dtypes -- and arrays made here keep those rules
wherever they go (``autopar.numpy._mode``'s note). ``import autopar`` keeps the
deep-learning default (``float32``); ``autopar.set_default_dtype("float64")``
or ``AUTOPAR_DEFAULT_DTYPE=float64`` switches it.

Operations still return at once and run in parallel; reading a value waits.
One exception: ``linalg.cholesky``, ``inv`` and ``solve`` wait for their own
result so that ``LinAlgError`` is raised at the call, where NumPy programs
catch it (``autopar.numpy.linalg``).

Which NumPy names and parameters are not supported, and why, is the table
in ``autopar.numpy._unsupported`` (``NAMES``, ``PARAMETERS``,
``FUNCTION_PARAMETERS``), shown in docs/arrays.md; a NumPy argument a
function does not take raises ``TypeError`` naming it and the table's reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as _numpy

from autopar.arrays import __all__ as _array_names
from autopar.numpy import _errstate
from autopar.numpy._namespace import lazy

# autopar's own names served here although NumPy lacks them
_EXTRA = ("waitall",)


def _module(name: str) -> Callable[[], Any]:
    return lambda: __import__(f"autopar.numpy.{name}", fromlist=[name])


def _numpys(name: str) -> Callable[[], Any]:
    return lambda: getattr(_numpy, name)


_LOCAL: dict[str, Callable[[], Any]] = {
    "fft": _module("fft"),
    "linalg": _module("linalg"),
    "random": _module("random"),
    "errstate": lambda: _errstate.errstate,
    "geterr": lambda: _errstate.geterr,
    "seterr": lambda: _errstate.seterr,
    # NumPy's abstract scalar types, for issubdtype(x.dtype, np.floating) and friends
    **{n: _numpys(n) for n in ("generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
                               "floating", "complexfloating")},
}

__all__, __getattr__, __dir__ = lazy(
    globals(), "autopar", "numpy", [n for n in _array_names if n not in _LOCAL], extra=_EXTRA, local=_LOCAL,
)
