"""``autopar.numpy.linalg``: ``autopar.linalg``'s functions that ``numpy.linalg`` has too, in NumPy mode.

``LinAlgError`` is autopar's (a subclass of ``numpy.linalg.LinAlgError``, so
``except numpy.linalg.LinAlgError`` catches it). ``cholesky``, ``inv`` and
``solve`` here raise it *at the call*: they wait for their own result (and
only that) before returning -- the one place ``autopar.numpy`` waits only to
raise an error at the call, because NumPy programs put these calls in
``try``/``except`` (the calls whose result shapes depend on the data wait as
in ``autopar``). Everywhere else, as in ``autopar``, an error inside an op is
raised where its result is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autopar.arrays import linalg as _source
from autopar.arrays._linalg import LinAlgError
from autopar.numpy._mode import in_numpy_mode
from autopar.numpy._namespace import lazy


def _checked(name: str) -> Any:
    fn = getattr(_source, name)

    def call(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        for result in out if isinstance(out, tuple) else (out,):
            result.wait_to_read()  # raises LinAlgError here, at the call (module note)
        return out

    call.__name__ = call.__qualname__ = name
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn  # type: ignore[attr-defined]  # inspect.signature reads fn's
    return in_numpy_mode(call)


def _maker(name: str) -> Callable[[], Any]:
    return lambda: _checked(name)


_LOCAL: dict[str, Callable[[], Any]] = {"LinAlgError": lambda: LinAlgError}
_LOCAL.update({name: _maker(name) for name in ("cholesky", "inv", "solve")})

__all__, __getattr__, __dir__ = lazy(globals(), "autopar.arrays.linalg", "numpy.linalg", _source.__all__, local=_LOCAL)
