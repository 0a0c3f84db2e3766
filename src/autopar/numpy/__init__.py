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

Which NumPy names and parameters are not supported, and why, is
``autopar.numpy._unsupported.UNSUPPORTED`` (also in docs/arrays.md).
"""

from __future__ import annotations

from autopar.arrays import __all__ as _array_names
from autopar.numpy._namespace import lazy

# autopar's own names served here although NumPy lacks them
_EXTRA = ("waitall",)

__all__, __getattr__, __dir__ = lazy(
    globals(), "autopar", "numpy", [n for n in _array_names if n not in ("fft", "linalg", "random")] + ["waitall"],
    extra=_EXTRA, local={
        "fft": lambda: __import__("autopar.numpy.fft", fromlist=["fft"]),
        "linalg": lambda: __import__("autopar.numpy.linalg", fromlist=["linalg"]),
        "random": lambda: __import__("autopar.numpy.random", fromlist=["random"]),
    },
)
