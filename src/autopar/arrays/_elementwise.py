"""Elementwise ops: the standard's elementwise functions and NumPy's extras, as table entries.

Each entry is one :func:`_table.define` call: the torch kernel, the dtype
rule in the standard's words, and broadcasting as its shape rule. Where torch
differs from NumPy, the kernel says so: integer ``//`` and ``%`` by zero give
0 as in NumPy (torch raises inside the kernel), ``sign`` of a complex number
is ``x / |x|``, ``round`` of a complex rounds both parts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch

from autopar.arrays import _dtypes
from autopar.arrays._dispatch import bind, bind_into
from autopar.arrays._dtypes import DType
from autopar.arrays._fmod import float_remainder, fmod
from autopar.arrays._table import TABLE, comparing, define, fixed, floating, promoting, same

Shape = tuple[int, ...]
_SCALARS = (bool, int, float, complex)


def broadcast_shapes(op: str, shapes: tuple[Shape, ...]) -> Shape:
    first = shapes[0]
    if len(shapes) == 2 and shapes[1] == first:
        return first
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        for i, size in enumerate(s, n - len(s)):
            if size != 1:
                if out[i] != 1 and out[i] != size:
                    shown = " and ".join(str(x) for x in shapes)
                    raise ValueError(
                        f"{op}: shapes {shown} do not broadcast: {out[i]} != {size} in dimension {i - n} "
                        f"and neither is 1; reshape or index one operand (x[:, None]) so they line up"
                    )
                out[i] = size
    return tuple(out)


def _broadcast(op: str, shapes: tuple[Shape, ...], static: dict[str, Any]) -> tuple[Shape, ...]:
    if len(shapes) == 1:
        return shapes
    return (broadcast_shapes(op, shapes),)


def _real_result(category: str) -> Any:
    """``abs``: a complex input gives the real dtype of its precision."""

    def rule(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
        d = dtypes[0]
        _dtypes.check_category(op, d, category)
        return (_dtypes.REAL_OF.get(d, d),), None

    return rule


def _ew(name: str, kernel: Callable[..., Any], dtype: Any, scalars: bool = False, **fields: Any) -> None:
    define(name, kernel, dtype, shape=_broadcast, scalars=scalars, elementwise=True, **fields)


# -- kernels that differ from torch's ----------------------------------------------------------


def _int_safe(fn: Callable[..., torch.Tensor], floats: Callable[..., torch.Tensor] | None = None) -> Callable[..., torch.Tensor]:
    """NumPy's integer division by zero: the result is 0 (torch raises)."""

    def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if a.is_floating_point() or a.is_complex():
            return (floats or fn)(a, b)
        zero = b == 0
        return torch.where(zero, 0, fn(a, torch.where(zero, 1, b))).to(torch.promote_types(a.dtype, b.dtype))

    return kernel


def _sign(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        return torch.sgn(t)
    if t.is_floating_point():  # torch.sign(nan) is 0; the standard and NumPy say nan
        return torch.where(torch.isnan(t), t, torch.sign(t))
    return torch.sign(t)


def _round(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        return torch.complex(torch.round(t.real), torch.round(t.imag))
    if t.is_floating_point():
        return torch.round(t)
    return t.clone()


def _integral_same(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """``ceil``/``floor``/``trunc`` of an integer array is the array (the standard)."""

    def kernel(t: torch.Tensor) -> torch.Tensor:
        return fn(t) if t.is_floating_point() else t.clone()

    return kernel


def _real(t: torch.Tensor) -> torch.Tensor:
    return t.real.clone() if t.is_complex() else t.clone()


def _imag(t: torch.Tensor) -> torch.Tensor:
    return t.imag.clone() if t.is_complex() else torch.zeros_like(t)


def _conj(t: torch.Tensor) -> torch.Tensor:
    return torch.conj_physical(t) if t.is_complex() else t.clone()


def _positive(t: torch.Tensor) -> torch.Tensor:
    return t.clone()


def _square(t: torch.Tensor) -> torch.Tensor:
    return t * t


def _pow(a: torch.Tensor, b: Any) -> torch.Tensor:
    if a.is_complex():  # torch gives nan for 0 ** 0 in complex; C99 and NumPy give 1
        return torch.where(torch.as_tensor(b == 0), torch.ones((), dtype=a.dtype, device=a.device), torch.pow(a, b))
    if type(b) is float and (b == 0.5 or b == -0.5):
        # torch takes sqrt/rsqrt here, which give nan for -inf; the standard: +inf (** 0.5), 0 (** -0.5)
        return torch.where(a == -math.inf, math.inf if b > 0 else 0.0, torch.pow(a, b))
    return torch.pow(a, b)


def _logical(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    return fn


def _shift(fn: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    """Shifts by a negative count or by the width or more: NumPy's results (0, or -1 for negatives)."""

    def kernel(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        bits = 8 * a.element_size()
        big = (b < 0) | (b >= bits)
        shifted = fn(a, torch.where(big, 0, b))
        if fn is torch.bitwise_left_shift:
            fill = torch.zeros_like(shifted)
        else:
            fill = torch.where(a < 0, -1, 0).to(a.dtype) if a.dtype.is_signed else torch.zeros_like(shifted)
        return torch.where(big, fill, shifted)

    return kernel


def _acos(t: torch.Tensor) -> torch.Tensor:
    """torch gives acos(x + 0j) a +0 imaginary part; C99 and the standard -0 (the sign opposite b's)."""
    out = torch.acos(t)
    if not t.is_complex():
        return out
    return torch.complex(out.real, torch.where(t.imag == 0, torch.copysign(out.imag, -t.imag), out.imag))


def _expm1(t: torch.Tensor) -> torch.Tensor:
    """Complex: exp(z) - 1 where z is not finite (torch's expm1 gives NaN + NaN j for the
    standard's special cases), and 0 + 0j for -0 + 0j, as the standard lists."""
    out = torch.expm1(t)
    if not t.is_complex():
        return out
    e = torch.exp(t)
    out = torch.where(torch.isfinite(t), out, torch.complex(e.real - 1, e.imag))
    return torch.where(t == 0, torch.complex(t.real + 0.0, t.imag), out)


def _tanh(t: torch.Tensor) -> torch.Tensor:
    """Complex: tanh(+-inf + bj), b finite, is +-1 + 0j with the sign of b on the zero, as the standard
    lists (C99 and torch put the sign of sin(2b) there)."""
    out = torch.tanh(t)
    if not t.is_complex():
        return out
    edge = torch.isinf(t.real) & torch.isfinite(t.imag)
    return torch.where(edge, torch.complex(torch.sign(t.real), torch.copysign(torch.zeros_like(t.imag), t.imag)), out)


def _log1p(t: torch.Tensor) -> torch.Tensor:
    """Complex: log(1 + z) where z is not finite (torch's log1p gives NaN + NaN j for some)."""
    out = torch.log1p(t)
    return torch.where(torch.isfinite(t), out, torch.log(t + 1)) if t.is_complex() else out


# -- derivatives torch has none for (piecewise constant: zero almost everywhere) ----------------------


def sum_to(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """``g`` summed over the dimensions broadcasting added to ``shape``."""
    extra = g.dim() - len(shape)
    if extra:
        g = g.sum(dim=tuple(range(extra)))
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(dim=dims, keepdim=True) if dims else g


def _zero_vjp(cotangents: Any, inputs: Any, outputs: Any) -> tuple[Any, ...]:
    return tuple(torch.zeros_like(t) for t in inputs)


def _heaviside_vjp(cotangents: Any, inputs: Any, outputs: Any) -> tuple[Any, ...]:
    x, values = inputs
    g = cotangents[0]
    return torch.zeros_like(x), sum_to(torch.where(x == 0, g, 0), values.shape)


# -- the entries -----------------------------------------------------------------------------

_ew("add", torch.add, promoting("any"), scalars=True)
_ew("subtract", torch.sub, promoting("numeric"), scalars=True)
_ew("multiply", torch.mul, promoting("any"), scalars=True)
_ew("divide", torch.true_divide, floating("numeric"), scalars=True)
_ew("floor_divide", _int_safe(torch.floor_divide), promoting("real numeric"), vjp=_zero_vjp)
_ew("remainder", _int_safe(torch.remainder, float_remainder), promoting("real numeric"))
_ew("pow", _pow, promoting("numeric"), scalars=True)
_ew("atan2", torch.atan2, floating("real numeric", ufunc=True))
_ew("copysign", torch.copysign, floating("real numeric", ufunc=True))
_ew("hypot", torch.hypot, floating("real numeric", ufunc=True))
_ew("logaddexp", torch.logaddexp, floating("real numeric", ufunc=True))
_ew("logaddexp2", torch.logaddexp2, floating("real numeric", ufunc=True))
_ew("nextafter", torch.nextafter, floating("real numeric", ufunc=True))
_ew("fmod", fmod, promoting("real numeric"))


def _float_power_rule(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
    """float64 (complex128 with a complex operand), and computed in it: ``float_power(int, -1)`` is 1/x."""
    r = _dtypes.float64 if all(x.kind != "c" for x in dtypes) else _dtypes.complex128
    return (r,), (r,) * len(dtypes)


_ew("float_power", torch.pow, _float_power_rule)
_ew("heaviside", torch.heaviside, promoting("real numeric"), vjp=_heaviside_vjp)
_ew("gcd", torch.gcd, promoting("integer"), differentiable=False)
_ew("lcm", torch.lcm, promoting("integer"), differentiable=False)
_ew("ldexp", lambda a, b: torch.ldexp(a, b), floating("real numeric", ufunc=True))
_ew("fmax", torch.fmax, promoting("real numeric"))
_ew("fmin", torch.fmin, promoting("real numeric"))
_ew("maximum", torch.maximum, promoting("real numeric"))
_ew("minimum", torch.minimum, promoting("real numeric"))
_ew("equal", torch.eq, comparing("any"), scalars=True, differentiable=False)
_ew("not_equal", torch.ne, comparing("any"), scalars=True, differentiable=False)
_ew("less", torch.lt, comparing("real"), scalars=True, differentiable=False)
_ew("less_equal", torch.le, comparing("real"), scalars=True, differentiable=False)
_ew("greater", torch.gt, comparing("real"), scalars=True, differentiable=False)
_ew("greater_equal", torch.ge, comparing("real"), scalars=True, differentiable=False)
_ew("logical_and", torch.logical_and, fixed(_dtypes.bool_), differentiable=False)
_ew("logical_or", torch.logical_or, fixed(_dtypes.bool_), differentiable=False)
_ew("logical_xor", torch.logical_xor, fixed(_dtypes.bool_), differentiable=False)
_ew("bitwise_and", torch.bitwise_and, promoting("integer or boolean"), scalars=True, differentiable=False)
_ew("bitwise_or", torch.bitwise_or, promoting("integer or boolean"), scalars=True, differentiable=False)
_ew("bitwise_xor", torch.bitwise_xor, promoting("integer or boolean"), scalars=True, differentiable=False)
_ew("bitwise_left_shift", _shift(torch.bitwise_left_shift), promoting("integer"), differentiable=False)
_ew("bitwise_right_shift", _shift(torch.bitwise_right_shift), promoting("integer"), differentiable=False)

_FLOAT_UNARY: dict[str, Callable[..., Any]] = {
    "acos": _acos, "acosh": torch.acosh, "asin": torch.asin, "asinh": torch.asinh, "atan": torch.atan,
    "atanh": torch.atanh, "cos": torch.cos, "cosh": torch.cosh, "exp": torch.exp, "expm1": _expm1,
    "log": torch.log, "log1p": _log1p, "log2": torch.log2, "log10": torch.log10, "sin": torch.sin,
    "sinh": torch.sinh, "sqrt": torch.sqrt, "tan": torch.tan, "tanh": _tanh, "exp2": torch.exp2,
    "sigmoid": torch.sigmoid, "rsqrt": torch.rsqrt, "sinc": torch.sinc, "rad2deg": torch.rad2deg,
    "deg2rad": torch.deg2rad, "erf": torch.erf, "cbrt": lambda t: torch.sign(t) * torch.abs(t).pow(1.0 / 3.0),
    "reciprocal": torch.reciprocal,
}  # fmt: skip
for _name, _fn in _FLOAT_UNARY.items():
    _ew(_name, _fn, floating("any", ufunc=True))

_ew("abs", torch.abs, _real_result("numeric"))
_ew("negative", torch.neg, same("numeric"))
_ew("positive", _positive, same("numeric"))
_ew("square", _square, same("numeric"))
_ew("sign", _sign, same("numeric"))
_ew("ceil", _integral_same(torch.ceil), same("real numeric"))
_ew("floor", _integral_same(torch.floor), same("real numeric"))
_ew("trunc", _integral_same(torch.trunc), same("real numeric"))
_ew("round", _round, same("numeric"))
_ew("conj", _conj, same("numeric"))
_ew("real", _real, _real_result("numeric"))
_ew("imag", _imag, _real_result("numeric"))
_ew("isfinite", torch.isfinite, fixed(_dtypes.bool_, "numeric"), differentiable=False)
_ew("isinf", torch.isinf, fixed(_dtypes.bool_, "numeric"), differentiable=False)
_ew("isnan", torch.isnan, fixed(_dtypes.bool_, "numeric"), differentiable=False)
_ew("signbit", torch.signbit, fixed(_dtypes.bool_, "real numeric"), differentiable=False)
_ew("logical_not", torch.logical_not, fixed(_dtypes.bool_), differentiable=False)
_ew("bitwise_invert", torch.bitwise_not, same("integer or boolean"), differentiable=False)
_ew("relu", torch.relu, same("real numeric"))


# -- calling them ------------------------------------------------------------------------------


def _coerce(op: str, x: Any, like: Any) -> Any:
    """NumPy scalars become Python numbers (weak) -- in NumPy mode 0-d arrays of their dtype, which
    promote as NumPy 2's do (``float32_array + numpy.float64(0.1)`` is float64); array-likes become
    arrays on ``like``'s device."""
    if isinstance(x, np.generic):
        if _dtypes.numpy_mode.on or (like is not None and like._storage.npmode):
            from autopar.arrays._creation import asarray

            return asarray(x, device=None if like is None else like.device)
        return x.item()
    if isinstance(x, (np.ndarray, list, tuple, torch.Tensor)) or hasattr(x, "__array_interface__"):
        from autopar.arrays._creation import asarray

        return asarray(x, device=None if like is None else like.device)
    return x


def operator(name: str, a: Any, other: Any, reflected: bool = False) -> Any:
    """``a <op> other`` (``other <op> a`` when ``reflected``); NotImplemented for unknown operands."""
    if type(other) is not _array.NDArray and type(other) not in _SCALARS:
        other = _coerce(name, other, a)
        if type(other) is not _array.NDArray and type(other) not in _SCALARS:
            return NotImplemented
    return bind(TABLE[name], (other, a) if reflected else (a, other))


def call(name: str, *args: Any, **static: Any) -> Any:
    """The function ``name`` on array-likes and numbers."""
    like = next((a for a in args if type(a) is _array.NDArray), None)
    args = tuple(a if type(a) is _array.NDArray or type(a) in _SCALARS else _coerce(name, a, like) for a in args)
    return bind(TABLE[name], args, static)


def inplace(name: str, target: Any, other: Any) -> Any:
    """``target <op>= other``: written through ``target``'s view; NumPy's same-kind rule."""
    if type(other) is not _array.NDArray and type(other) not in _SCALARS:
        other = _coerce(name, other, target)
        if type(other) is not _array.NDArray and type(other) not in _SCALARS:
            return NotImplemented
    return bind_into(TABLE[name], target, (target, other), what=f"{name} (in place)")


def _function(name: str, nargs: int) -> Callable[..., Any]:
    """The function ``name``: arrays (and numbers beside an array) go straight to ``bind``, what else
    ``call`` converts first; NumPy's ufunc keywords (``_keywords``) only when given. NumPy makes them
    keyword-only; here they may be positional too, since CPython fills positional defaults from a tuple
    but keyword-only ones by a dict lookup each (a quarter of a microsecond on every call)."""
    entry = TABLE[name]
    if nargs == 1:

        def fn(x: Any, /, out: Any = None, where: Any = True, casting: str = "same_kind", order: str = "K",
               dtype: Any = None, subok: bool = True, signature: Any = None) -> Any:  # fmt: skip
            if out is None and where is True and dtype is None and order == "K" and subok is True and signature is None:
                if type(x) is _array.NDArray:
                    return bind(entry, (x,))
                return call(name, x)
            return keywords.ufunc(name, partial(call, name), (x,), out, where, dtype, casting, order, subok, signature)

    else:

        def fn(x1: Any, x2: Any, /, out: Any = None, where: Any = True,  # type: ignore[misc]
               casting: str = "same_kind", order: str = "K", dtype: Any = None, subok: bool = True,
               signature: Any = None) -> Any:  # fmt: skip
            if out is None and where is True and dtype is None and order == "K" and subok is True and signature is None:
                t1, t2 = type(x1), type(x2)
                if t1 is _array.NDArray and (t2 is _array.NDArray or t2 in _SCALARS) or \
                        t2 is _array.NDArray and t1 in _SCALARS:
                    return bind(entry, (x1, x2))
                return call(name, x1, x2)
            return keywords.ufunc(name, partial(call, name), (x1, x2), out, where, dtype, casting, order, subok,
                                   signature)  # fmt: skip

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (Array API standard / NumPy semantics), asynchronous."
    return fn


_BINARY_NAMES = [
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "pow", "atan2", "copysign", "hypot",
    "logaddexp", "logaddexp2", "nextafter", "fmod", "float_power", "heaviside", "gcd", "lcm", "ldexp", "fmax", "fmin",
    "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift",
]  # fmt: skip
_UNARY_NAMES = [*_FLOAT_UNARY, "abs", "negative", "positive", "square", "sign", "ceil", "floor", "trunc", "round",
                "conj", "real", "imag", "isfinite", "isinf", "isnan", "signbit", "logical_not", "bitwise_invert",
                "relu"]  # fmt: skip
FUNCTIONS: dict[str, Callable[..., Any]] = {n: _function(n, 2) for n in _BINARY_NAMES}
FUNCTIONS.update({n: _function(n, 1) for n in _UNARY_NAMES})


def check_power(x: Any, exponent: Any) -> None:
    """NumPy's error at the call for an integer array to a negative Python int power (torch's would come
    at the read, from the kernel)."""
    if type(exponent) is int and exponent < 0 and type(x) is _array.NDArray and x._dtype.kind in "iu":
        raise ValueError(f"pow: integers to negative integer powers are not allowed (an array of dtype "
                         f"{x._dtype.name} ** {exponent}); make the base floating: x.astype('float64') ** {exponent}")


def _checked_pow(fn: Callable[..., Any]) -> Callable[..., Any]:
    def pow(x1: Any, x2: Any, /, *args: Any, **kwargs: Any) -> Any:  # noqa: A001 - the standard's name
        check_power(x1, x2)
        return fn(x1, x2, *args, **kwargs)

    pow.__doc__, pow.__wrapped__ = fn.__doc__, fn  # type: ignore[attr-defined]
    return pow


FUNCTIONS["pow"] = _checked_pow(FUNCTIONS["pow"])


def clip(x: Any, /, min: Any = None, max: Any = None, out: Any = None) -> Any:  # noqa: A002 - the standard's names
    """Clamp ``x`` to ``[min, max]`` (numbers or arrays that broadcast); the dtype stays ``x``'s -- in
    NumPy mode it is NumPy's, the bounds' promoted with ``x``'s (``clip(int_array, 1.5, 3)`` is float64)."""
    if out is not None:
        return keywords.finish("clip", clip(x, min, max), out)
    x = call("positive", x) if type(x) is not _array.NDArray else x
    _dtypes.check_category("clip", x._dtype, "real numeric")
    for bound in (min, max):
        if type(bound) in (bool, int, float, complex):  # checked here, so an error names clip
            _dtypes.scalar_dtype("clip", x._dtype, bound)
    out = x
    if min is not None:
        out = call("maximum", out, min)
    if max is not None:
        out = call("minimum", out, max)
    if out is x:
        return call("positive", x)
    if out._dtype is not x._dtype and not (_dtypes.numpy_mode.on or x._storage.npmode):
        out = out.astype(x._dtype)
    return out


from autopar.arrays import _array  # noqa: E402

# NumPy's ufunc keywords (``_keywords``, which sits above this module: it registers itself here)
keywords: Any = None
