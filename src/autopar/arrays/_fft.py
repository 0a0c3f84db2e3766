"""The standard's ``fft`` extension on ``torch.fft``: one table entry per transform.

Dtypes by the standard: complex transforms keep a complex input's dtype and
make a real one complex of its precision; ``rfft*``/``ihfft`` need a real
input and give complex; ``irfft*``/``hfft`` give the real dtype. Integer
inputs become the default float first. Shapes come from torch's meta kernels.
"""

from __future__ import annotations

from typing import Any

import torch

from autopar.arrays import _dtypes
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._manipulation import _array_like, normalize_axis
from autopar.arrays._table import TABLE, define, fixed

_NORMS = ("backward", "ortho", "forward")


def _rule(result: str, category: str) -> Any:
    def rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
        d = dtypes[0]
        _dtypes.check_category(op, d, category)
        if result == "same" and _dtypes.numpy_mode.on:  # fftshift is a roll: NumPy keeps the dtype
            return (d,), (d,)
        f = _dtypes.to_float(d)
        if result == "complex":
            out = _dtypes.complex_of(f)
        elif result == "real":
            out = _dtypes.REAL_OF.get(f, f)
        else:
            out = f
        return (out,), (f,)

    return rule


_TRANSFORMS = {
    "fft": (torch.fft.fft, "complex", "numeric"),
    "ifft": (torch.fft.ifft, "complex", "numeric"),
    "fftn": (torch.fft.fftn, "complex", "numeric"),
    "ifftn": (torch.fft.ifftn, "complex", "numeric"),
    "rfft": (torch.fft.rfft, "complex", "real numeric"),
    "irfft": (torch.fft.irfft, "real", "numeric"),
    "rfftn": (torch.fft.rfftn, "complex", "real numeric"),
    "irfftn": (torch.fft.irfftn, "real", "numeric"),
    "hfft": (torch.fft.hfft, "real", "numeric"),
    "ihfft": (torch.fft.ihfft, "complex", "real numeric"),
}


def _one(fn: Any) -> Any:
    def kernel(t: torch.Tensor, n: Any, axis: int, norm: str) -> torch.Tensor:
        return fn(t, n=n, dim=axis, norm=norm)

    return kernel


def _many(fn: Any) -> Any:
    def kernel(t: torch.Tensor, s: Any, axes: Any, norm: str) -> torch.Tensor:
        return fn(t, s=s, dim=axes, norm=norm)

    return kernel


for _name, (_fn, _result, _category) in _TRANSFORMS.items():
    define(f"fft.{_name}", (_many if _name.endswith("n") else _one)(_fn), _rule(_result, _category))
define("fft.fftshift", lambda t, axes: torch.fft.fftshift(t, dim=axes), _rule("same", "numeric"), kernel_dtype="bits")
define("fft.ifftshift", lambda t, axes: torch.fft.ifftshift(t, dim=axes), _rule("same", "numeric"), kernel_dtype="bits")
define("fft.fftfreq", lambda n, d, dtype, device: torch.fft.fftfreq(n, d, dtype=dtype.torch, device=device),
       fixed(lambda d, s: (s["dtype"],)), shape=lambda op, sh, s: ((s["n"],),), differentiable=False)  # fmt: skip
define("fft.rfftfreq", lambda n, d, dtype, device: torch.fft.rfftfreq(n, d, dtype=dtype.torch, device=device),
       fixed(lambda d, s: (s["dtype"],)), shape=lambda op, sh, s: ((s["n"] // 2 + 1,),),
       differentiable=False)  # fmt: skip


def _check(op: str, norm: str) -> None:
    if norm not in _NORMS:
        raise ValueError(f"fft.{op}: norm={norm!r}; expected one of {', '.join(_NORMS)}")


def _out(name: str, result: Any, out: Any) -> Any:
    if out is None:
        return result
    from autopar.arrays._keywords import finish

    return finish(f"fft.{name}", result, out)


def _transform(name: str) -> Any:
    def fn(x: Any, /, n: int | None = None, axis: int = -1, norm: str | None = "backward", out: Any = None) -> Any:
        x = _array_like(x)
        norm = "backward" if norm is None else norm  # NumPy's default spelling
        _check(name, norm)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"fft.{name}: n={n!r} must be a positive int")
        ax = normalize_axis(f"fft.{name}", axis, x.ndim)
        return _out(name, bind(TABLE[f"fft.{name}"], (x,), {"n": n, "axis": ax, "norm": norm}), out)

    fn.__name__ = fn.__qualname__ = name
    return fn


def _transform_n(name: str) -> Any:
    def fn(x: Any, /, s: Any = None, axes: Any = None, norm: str | None = "backward", out: Any = None) -> Any:
        x = _array_like(x)
        norm = "backward" if norm is None else norm
        _check(name, norm)
        ax = None if axes is None else tuple(normalize_axis(f"fft.{name}", a, x.ndim) for a in axes)
        sizes = None if s is None else tuple(int(v) for v in s)
        return _out(name, bind(TABLE[f"fft.{name}"], (x,), {"s": sizes, "axes": ax, "norm": norm}), out)

    fn.__name__ = fn.__qualname__ = name
    return fn


fft = _transform("fft")
ifft = _transform("ifft")
rfft = _transform("rfft")
irfft = _transform("irfft")
hfft = _transform("hfft")
ihfft = _transform("ihfft")
fftn = _transform_n("fftn")
ifftn = _transform_n("ifftn")
rfftn = _transform_n("rfftn")
irfftn = _transform_n("irfftn")


def _shift(name: str, x: Any, axes: Any) -> Any:
    x = _array_like(x)
    ax = tuple(range(x.ndim)) if axes is None else tuple(normalize_axis(f"fft.{name}", a, x.ndim) for a in
                                                           ((axes,) if isinstance(axes, int) else axes))  # fmt: skip
    return bind(TABLE[f"fft.{name}"], (x,), {"axes": ax})


def fftshift(x: Any, /, *, axes: Any = None) -> Any:
    return _shift("fftshift", x, axes)


def ifftshift(x: Any, /, *, axes: Any = None) -> Any:
    return _shift("ifftshift", x, axes)


def _freq(name: str, n: int, d: float, dtype: Any, device: Any) -> Any:
    from autopar.arrays._array import as_device

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"fft.{name}: n={n!r} must be a positive int")
    dt = _dtypes.default_float() if dtype is None else _dtypes.as_dtype(dtype, f"fft.{name}")
    dev = as_device(device)
    return bind(TABLE[f"fft.{name}"], (), {"n": n, "d": float(d), "dtype": dt, "device": dev.torch_name},
                device=dev)  # fmt: skip


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    return _freq("fftfreq", n, d, dtype, device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    return _freq("rfftfreq", n, d, dtype, device)


def _transform_2(name: str) -> Any:
    """NumPy's 2-D transforms: the n-D one over ``axes`` (the last two by default)."""
    many = _transform_n(name[:-1] + "n")

    def fn(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Any:
        x = _array_like(a)
        if x.ndim < 2 and axes == (-2, -1):
            raise ValueError(f"fft.{name}: the array has shape {x.shape}; a 2-D transform needs at least 2 dimensions")
        result = many(x, s=s, axes=axes, norm="backward" if norm is None else norm)
        if out is None:
            return result
        out[...] = result
        return out

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"NumPy's ``fft.{name}``: ``{name[:-1]}n`` over ``axes`` (default: the last two)."
    return fn


fft2 = _transform_2("fft2")
ifft2 = _transform_2("ifft2")
rfft2 = _transform_2("rfft2")
irfft2 = _transform_2("irfft2")
