"""``linspace`` between arrays: ``linspace(x.min(), x.max(), 100)``, ``linspace(starts, stops, n)``.

Design note
-----------
``linspace`` of Python numbers is a creation (``_creation``: the numbers are
static). Where ``start`` or ``stop`` is an array -- a 0-d result of
``x.min()``, or one start per column -- the endpoints are the op's inputs,
so nothing is read on the host: one table entry, ``linspace.arrays``, runs
NumPy's formula (:func:`kernel`, which ``_creation._linspace`` runs too) on the broadcast
endpoints, the new axis first, as NumPy's ``axis=0``. NumPy's test for a
zero step (``any(step == 0)``, which switches every element to ``y / div *
delta``) is made on the device too.

The dtype is NumPy's ``result_type(start, stop, float(num))``: the arrays'
dtypes promoted, Python numbers weak, and a floating result (the default
float for integer endpoints).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from autopar.arrays import _dtypes
from autopar.arrays._array import NDArray
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._table import TABLE, define

_NUMBERS = (bool, int, float, complex)


def kernel(start: torch.Tensor, stop: torch.Tensor, *, num: int, endpoint: bool, dtype: DType) -> torch.Tensor:
    """NumPy's ``linspace`` formula on (broadcast) endpoints, the new axis first (module note)."""
    wide = torch.complex128 if dtype.kind == "c" else torch.float64
    start, stop = torch.broadcast_tensors(start.to(wide), stop.to(wide))
    div = (num - 1) if endpoint else num
    y = torch.arange(num, dtype=torch.float64, device=start.device).to(wide).reshape((-1,) + (1,) * start.ndim)
    delta = stop - start
    if div > 0:
        step = delta / div
        y = torch.where((step == 0).any(), y / div * delta, y * step)
    else:
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y[-1] = stop
    if dtype.kind in "iu":
        y = torch.floor(y)
    return y


def _dtype_rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    for i, d in enumerate(dtypes):
        _dtypes.check_category("linspace", d, "numeric", ("start", "stop")[i])
    return (s["dtype"],), None


def _shape_rule(op: str, shapes: tuple[Any, ...], s: dict[str, Any]) -> Any:
    return ((s["num"], *np.broadcast_shapes(*shapes)),)


define("linspace.arrays", kernel, _dtype_rule, shape=_shape_rule, differentiable=False)


def is_array(v: Any) -> bool:
    """Whether ``v`` is an endpoint this module takes (an array or array-like, not a number)."""
    return not isinstance(v, (*_NUMBERS, np.generic))


def linspace(start: Any, stop: Any, num: int, endpoint: bool, dtype: Any, device: Any,
             asarray: Callable[..., NDArray]) -> NDArray:  # fmt: skip
    """``linspace`` with an array endpoint (module note); ``num`` checked by the caller, whose ``asarray``
    (``_creation``'s: this module sits below it) makes arrays of array-like endpoints."""
    like = next((v for v in (start, stop) if type(v) is NDArray), None)
    dev = device if device is not None else (like.device if like is not None else None)
    ends = [v if type(v) is NDArray else asarray(v, device=dev) if is_array(v) else v for v in (start, stop)]
    arrays = [v for v in ends if type(v) is NDArray]
    if dtype is None:
        d = _dtypes.result_type(*(a._dtype for a in arrays))
        if any(isinstance(v, (complex, np.complexfloating)) for v in (start, stop)):
            d = _dtypes.complex_of(d)
        d = _dtypes.to_float(d)
    else:
        d = _dtypes.as_dtype(dtype, "linspace")
    pair = [v if type(v) is NDArray else asarray(complex(v) if isinstance(v, complex) else float(v), dtype="float64"
                                                if not isinstance(v, complex) else "complex128", device=arrays[0].device)
            for v in ends]  # fmt: skip
    return bind(TABLE["linspace.arrays"], tuple(pair), {"num": num, "endpoint": bool(endpoint), "dtype": d})
