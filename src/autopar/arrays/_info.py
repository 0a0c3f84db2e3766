"""The standard's data type functions and ``__array_namespace_info__``.

``finfo``/``iinfo``/``isdtype``/``result_type``/``can_cast`` answer from
``_dtypes`` (the promotion table autopar uses for every op), so they can
never disagree with what an op does.
"""

from __future__ import annotations

from typing import Any

import torch

from autopar.arrays import _dtypes
from autopar.arrays._dtypes import DType


class finfo_object:  # noqa: N801 - the standard's name for what finfo returns
    __slots__ = ("bits", "eps", "max", "min", "smallest_normal", "tiny", "resolution", "dtype")

    def __init__(self, d: DType) -> None:
        real = _dtypes.REAL_OF.get(d, d)
        info = torch.finfo(real.torch)
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.tiny = self.smallest_normal
        self.resolution = float(info.resolution)
        self.dtype = real

    def __repr__(self) -> str:
        return f"finfo(dtype={self.dtype}, bits={self.bits}, eps={self.eps}, max={self.max})"


class iinfo_object:  # noqa: N801
    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, d: DType) -> None:
        self.bits = 8 * d.itemsize
        self.min, self.max = _dtypes.iinfo_tuple(d)
        self.dtype = d

    def __repr__(self) -> str:
        return f"iinfo(dtype={self.dtype}, min={self.min}, max={self.max})"


def _dtype_or_array(op: str, x: Any) -> DType:
    d = getattr(x, "_dtype", None)
    return d if d is not None else _dtypes.as_dtype(x, op)


def finfo(type: Any, /) -> finfo_object:  # noqa: A002
    d = _dtype_or_array("finfo", type)
    if d.kind not in "fc":
        raise TypeError(f"finfo: {d} is not a floating dtype; use iinfo for integers")
    return finfo_object(d)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    d = _dtype_or_array("iinfo", type)
    if d.kind not in "iu":
        raise TypeError(f"iinfo: {d} is not an integer dtype; use finfo for floats")
    return iinfo_object(d)


def isdtype(dtype: Any, kind: Any) -> bool:
    d = _dtypes.as_dtype(dtype, "isdtype")
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    if isinstance(kind, str):
        kinds = _dtypes.KINDS.get(kind)
        if kinds is None:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {', '.join(_dtypes.KINDS)}")
        return d.kind in kinds
    return d == kind


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype an op on these arrays, dtypes (and Python scalars, weakly) would give."""
    dtypes: list[DType] = []
    scalars = []
    for x in arrays_and_dtypes:
        if type(x) in (bool, int, float, complex):
            scalars.append(x)
        else:
            dtypes.append(_dtype_or_array("result_type", x))
    if not dtypes:
        if not scalars:
            raise ValueError("result_type: needs at least one array or dtype")
        return _dtypes.infer_python(scalars)
    out = _dtypes.result_type(*dtypes)
    for s in scalars:
        out = _dtypes.scalar_dtype("result_type", out, s)
    return out


def can_cast(from_: Any, to: Any, /, casting: str = "safe") -> bool:
    src, dst = _dtype_or_array("can_cast", from_), _dtypes.as_dtype(to, "can_cast")
    if casting == "unsafe":
        return True
    if casting == "same_kind":
        return _dtypes.can_cast_same_kind(src, dst)
    if casting in ("no", "equiv"):
        return src is dst
    return _dtypes.promote(src, dst) is dst


def promote_types(a: Any, b: Any) -> DType:
    return _dtypes.promote(_dtypes.as_dtype(a, "promote_types"), _dtypes.as_dtype(b, "promote_types"))


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """NumPy's ``issubdtype`` for autopar dtypes and NumPy's abstract types."""
    import numpy as np

    a = _dtypes.find(arg1)
    first = a.numpy if a is not None and a.numpy is not None else arg1
    b = _dtypes.find(arg2) if not isinstance(arg2, type) or not issubclass(arg2, np.generic) else None
    second = b.numpy if b is not None and b.numpy is not None else arg2
    return bool(np.issubdtype(first, second))


class _Info:
    """What ``__array_namespace_info__()`` returns: capabilities, devices, dtypes."""

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> Any:
        from autopar.devices import cpu

        return cpu(0)

    def default_dtypes(self, *, device: Any = None) -> dict[str, DType]:
        return {
            "real floating": _dtypes.default_float(),
            "complex floating": _dtypes.default_complex(),
            "integral": _dtypes.DEFAULT_INT,
            "indexing": _dtypes.INDEX,
        }

    def devices(self) -> list[Any]:
        from autopar.devices import cpu, cpu_device_count, gpu, num_gpus

        return [cpu(i) for i in range(cpu_device_count())] + [gpu(i) for i in range(num_gpus())]

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, DType]:
        standard = [d for d in _dtypes.ALL if d.name not in ("float16", "bfloat16")]
        return {d.name: d for d in standard if kind is None or isdtype(d, kind)}


def __array_namespace_info__() -> _Info:
    return _Info()
