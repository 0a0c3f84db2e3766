"""``autopar.call``: the user's own function as an op (table entry ``call``).

The function is a static parameter; its result's shape and dtype are
declared by the caller, so nothing is inferred. It never runs on the calling
thread (it stays asynchronous whatever its size, and may call back into
autopar), and if it raises or returns another shape the error is stored on
the result (the contract's failure rules).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from autopar.arrays import _dtypes
from autopar.arrays._array import NDArray, as_device
from autopar.arrays._creation import shape_arg
from autopar.arrays._dispatch import bind, same_device
from autopar.arrays._table import TABLE, define, fixed


class _Function:
    """The user's function as a static parameter. Unhashable on purpose: the plan cache keys on a
    call's static parameters, and a function there was kept alive -- with all it captured -- until
    the cache filled (65,536 entries; 600 MB after 600 calls of a closure over 1 MB). An unhashable
    static parameter makes the dispatcher plan the call without caching it, which costs little
    here: the shape and dtype are given."""

    __slots__ = ("fn",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Function) and other.fn is self.fn

    def __repr__(self) -> str:
        return f"<function {getattr(self.fn, '__qualname__', self.fn)!r}>"


def _kernel(*tensors: torch.Tensor, fn: _Function | Callable[..., Any], shape: tuple[int, ...], label: str,
            device: str, dtype: Any) -> Any:
    result = (fn.fn if isinstance(fn, _Function) else fn)(*tensors)  # (a bare function: a call built by hand)
    if not isinstance(result, torch.Tensor):
        result = torch.as_tensor(np.asarray(result), device=device)
    if tuple(result.shape) != shape:
        raise ValueError(f"call: {label} returned shape {tuple(result.shape)}, but shape={shape} was declared")
    return result


define("call", _kernel, fixed(lambda d, s: (s["dtype"],)), shape=lambda op, sh, s: (s["shape"],),
       differentiable=False, kernel_dtype="exact")  # fmt: skip


def call(
    fn: Callable[..., Any],
    *arrays: NDArray,
    shape: Any,
    dtype: Any = None,
    device: Any = None,
    ctx: Any = None,
    name: str | None = None,
) -> NDArray:
    """Run ``fn(*tensors)`` asynchronously on the arrays' values; return its result as an array.

    The result has ``shape`` and ``dtype`` (default: the first input's) and
    lives on the inputs' device. If ``fn`` raises, or returns another shape,
    the error is stored on the result (the contract's failure rules).
    """
    if not callable(fn):
        raise TypeError(f"call: fn must be callable; got {fn!r}")
    for i, arr in enumerate(arrays):
        if type(arr) is not NDArray:
            raise TypeError(f"call: argument {i + 1} is {type(arr).__name__}; pass autopar arrays (autopar.asarray(...))")
    out_shape = shape_arg("call", (shape,))
    asked = None if device is None and ctx is None else as_device(device, ctx, "call")
    if arrays:
        dev = same_device("call", arrays)
        if asked is not None and asked != dev:
            raise ValueError(f"call: device={asked} but the arrays are on {dev}; move them with .to({asked})")
    else:
        dev = asked if asked is not None else as_device(None)
    if dtype is not None:
        out_dtype = _dtypes.as_dtype(dtype, "call")
    elif arrays:
        out_dtype = arrays[0].dtype
    else:
        out_dtype = _dtypes.DEFAULT_FLOAT
    label = name or getattr(fn, "__name__", "call")
    static = {"fn": _Function(fn), "shape": out_shape, "label": str(label), "device": dev.torch_name, "dtype": out_dtype}
    out: NDArray = bind(TABLE["call"], arrays, static, device=dev, inline=False, name=str(label))
    return out
