"""NumPy's ``poly1d``: a polynomial object over autopar arrays of coefficients (highest power first).

``poly1d(c)`` keeps ``c`` without its leading zeros (finding them reads the
coefficients: it waits, as NumPy's construction looks at them);
``poly1d(r, r=True)`` is the polynomial with roots ``r``. Calling it
evaluates (``polyval``); ``+``, ``-``, ``*``, ``/``, ``**`` and
``deriv``/``integ`` give new ones (``_poly.py``'s functions).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class poly1d:  # noqa: N801 - NumPy's name
    __hash__ = None  # type: ignore[assignment]  # NumPy's is unhashable too (it defines __eq__)
    _mode: bool | None = None  # NumPy mode for everything it does (autopar.numpy's variant), or the caller's
    _coeffs: Any
    _variable: str

    @classmethod
    def _numpy_mode_variant(cls) -> type:
        return _NumpyModePoly1d

    def __init__(self, c_or_r: Any, r: bool = False, variable: str | None = None) -> None:
        from autopar.arrays import _poly
        from autopar.arrays._creation import asarray

        if isinstance(c_or_r, poly1d):
            self._coeffs = c_or_r._coeffs
            self._variable = variable or c_or_r._variable
            return
        coeffs = _poly.poly(c_or_r) if r else _poly._coeffs("poly1d", c_or_r)
        host = coeffs.numpy().ravel()
        nonzero = np.nonzero(host)[0]
        if len(nonzero) == 0:
            coeffs = asarray([0], dtype=coeffs.dtype, device=coeffs.device)
        elif nonzero[0] > 0:
            coeffs = coeffs[int(nonzero[0]) :]
        self._coeffs = coeffs
        self._variable = variable or "x"

    # -- NumPy's attributes -----------------------------------------------------------------------
    @property
    def coeffs(self) -> Any:
        return self._coeffs

    c = coef = coefficients = coeffs

    @property
    def order(self) -> int:
        return int(self._coeffs.shape[0] - 1)

    o = order

    @property
    def roots(self) -> Any:
        from autopar.arrays._poly import roots

        return roots(self._coeffs)

    r = roots

    @property
    def variable(self) -> str:
        return self._variable

    # -- evaluation and calculus --------------------------------------------------------------------
    def __call__(self, val: Any) -> Any:
        from autopar.arrays._poly import polyval

        if isinstance(val, poly1d):  # composition, as NumPy: p(q)
            out = type(self)([0.0])
            for i in range(self.order + 1):
                out = out * val + type(self)(self._coeffs[i : i + 1])
            return out
        return polyval(self._coeffs, val)

    def deriv(self, m: int = 1) -> poly1d:
        from autopar.arrays._poly import polyder

        return type(self)(polyder(self._coeffs, m))

    def integ(self, m: int = 1, k: Any = 0) -> poly1d:
        from autopar.arrays._poly import polyint

        return type(self)(polyint(self._coeffs, m, k))

    # -- arithmetic ---------------------------------------------------------------------------------------
    def __add__(self, other: Any) -> poly1d:
        from autopar.arrays._poly import polyadd

        return type(self)(polyadd(self._coeffs, _as_coeffs(other)))

    __radd__ = __add__

    def __sub__(self, other: Any) -> poly1d:
        from autopar.arrays._poly import polysub

        return type(self)(polysub(self._coeffs, _as_coeffs(other)))

    def __rsub__(self, other: Any) -> poly1d:
        from autopar.arrays._poly import polysub

        return type(self)(polysub(_as_coeffs(other), self._coeffs))

    def __mul__(self, other: Any) -> poly1d:
        if np.isscalar(other):
            return type(self)(self._coeffs * other)
        from autopar.arrays._poly import polymul

        return type(self)(polymul(self._coeffs, _as_coeffs(other)))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        if np.isscalar(other):
            return type(self)(self._coeffs / other)
        from autopar.arrays._poly import polydiv

        q, rem = polydiv(self._coeffs, _as_coeffs(other))
        return type(self)(q), type(self)(rem)

    def __neg__(self) -> poly1d:
        return type(self)(-self._coeffs)

    def __pos__(self) -> poly1d:
        return self

    def __pow__(self, n: int) -> poly1d:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"poly1d ** {n!r}: the power must be a non-negative int")
        out = type(self)([1.0])
        for _ in range(int(n)):
            out = out * self
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, poly1d):
            return NotImplemented
        return bool(self._coeffs.shape == other._coeffs.shape and (self._coeffs.numpy() == other._coeffs.numpy()).all())

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    # -- as a sequence of coefficients --------------------------------------------------------------------
    def __len__(self) -> int:
        return self.order

    def __getitem__(self, power: int) -> Any:
        """The coefficient of ``x**power`` (0 beyond the order)."""
        if power > self.order or power < 0:
            return self._coeffs.dtype.type(0) if hasattr(self._coeffs.dtype, "type") else 0
        return self._coeffs[self.order - power]

    def __iter__(self) -> Any:
        return iter(self._coeffs)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self._coeffs.numpy()
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"poly1d({self._coeffs.numpy().tolist()!r})"


def _as_coeffs(p: Any) -> Any:
    from autopar.arrays._poly import _coeffs

    return p._coeffs if isinstance(p, poly1d) else _coeffs("poly1d", p)


def _in_its_mode(method: Any) -> Any:
    import functools

    from autopar.arrays._dtypes import in_mode

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, *args, **kwargs) if self._mode is None else in_mode(self._mode, method, self, *args, **kwargs)

    return call


for _name, _value in list(vars(poly1d).items()):
    if callable(_value) and not isinstance(_value, (type, classmethod, staticmethod)) and _name not in (
            "_numpy_mode_variant", "__repr__", "__len__", "__hash__"):  # fmt: skip
        setattr(poly1d, _name, _in_its_mode(_value))
for _name in ("coeffs", "order", "roots", "variable"):
    _prop = vars(poly1d)[_name]
    setattr(poly1d, _name, property(_in_its_mode(_prop.fget)))
poly1d.c = poly1d.coef = poly1d.coefficients = poly1d.coeffs
poly1d.o = poly1d.order
poly1d.r = poly1d.roots


class _NumpyModePoly1d(poly1d):
    """``autopar.numpy.poly1d``: made and used in NumPy mode (float64 coefficients from Python floats)."""

    _mode = True


_NumpyModePoly1d.__name__ = _NumpyModePoly1d.__qualname__ = "poly1d"
