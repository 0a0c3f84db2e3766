"""NumPy's window functions: ``bartlett``, ``blackman``, ``hamming``, ``hanning``, ``kaiser``.

NumPy's formulas over ``n = arange(1 - M, M, 2)`` (``kaiser``: over
``arange(M)`` with ``i0``), computed in float64 and given in the default float
(float64 in ``autopar.numpy``, as NumPy's). ``M < 1`` gives an empty array,
``M == 1`` a single 1.
"""

from __future__ import annotations

import math
from typing import Any

from autopar.arrays import _dtypes
from autopar.arrays._creation import arange, ones
from autopar.arrays._elementwise import call


def _window(name: str, M: Any, formula: Any, device: Any) -> Any:  # noqa: N803 - NumPy's name
    if isinstance(M, bool) or not isinstance(M, (int, float)) or int(M) != M:
        raise TypeError(f"{name}: M={M!r}; expected an int (the number of points)")
    m = int(M)
    d = _dtypes.default_float()
    if m < 1:
        return arange(0, dtype=d, device=device)
    if m == 1:
        return ones(1, dtype=d, device=device)
    return formula(m).astype(d)


def _n(m: int, device: Any) -> Any:
    return arange(1 - m, m, 2, dtype="float64", device=device)


def bartlett(M: Any, *, device: Any = None) -> Any:  # noqa: N803
    """The triangular window."""
    def formula(m: int) -> Any:
        from autopar.arrays._searching import where

        n = _n(m, device)
        return where(call("less_equal", n, 0), 1 + n / (m - 1), 1 - n / (m - 1))

    return _window("bartlett", M, formula, device)


def blackman(M: Any, *, device: Any = None) -> Any:  # noqa: N803
    def formula(m: int) -> Any:
        n = _n(m, device)
        return 0.42 + 0.5 * call("cos", math.pi * n / (m - 1)) + 0.08 * call("cos", 2.0 * math.pi * n / (m - 1))

    return _window("blackman", M, formula, device)


def hamming(M: Any, *, device: Any = None) -> Any:  # noqa: N803
    def formula(m: int) -> Any:
        return 0.54 + 0.46 * call("cos", math.pi * _n(m, device) / (m - 1))

    return _window("hamming", M, formula, device)


def hanning(M: Any, *, device: Any = None) -> Any:  # noqa: N803
    def formula(m: int) -> Any:
        return 0.5 + 0.5 * call("cos", math.pi * _n(m, device) / (m - 1))

    return _window("hanning", M, formula, device)


def kaiser(M: Any, beta: float, *, device: Any = None) -> Any:  # noqa: N803
    from autopar.arrays._creation import asarray
    from autopar.arrays._numpy import i0

    def formula(m: int) -> Any:
        n = arange(0, m, dtype="float64", device=device)
        alpha = (m - 1) / 2.0
        return i0(float(beta) * call("sqrt", 1 - ((n - alpha) / alpha) ** 2.0)) / i0(asarray(float(beta), dtype="float64"))

    return _window("kaiser", M, formula, device)
