"""Making arrays: from data (copied at the call), constants, ranges, and interop."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from autopar.ndarray import _dtypes, _shapes
from autopar.ndarray._core import NDArray, Storage, as_device, launch, make
from autopar.devices import Device


def _host_tensor(obj: Any, dtype: torch.dtype | None, copy: bool) -> torch.Tensor:
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if t.device.type != "cpu":
            t = t.cpu()
    elif isinstance(obj, np.ndarray) or isinstance(obj, np.generic):
        arr = np.asarray(obj)
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"array: NumPy arrays of dtype {arr.dtype} are not supported; use numbers or bools")
        if not arr.flags.writeable or arr.dtype.byteorder not in "=|":
            arr = arr.astype(arr.dtype.newbyteorder("="), copy=True)
        t = torch.from_numpy(np.ascontiguousarray(arr) if not copy else np.array(arr, order="C"))
        copy = False  # np.array above copied already
    else:
        if dtype is None:
            dtype = _dtypes.infer_from_python(obj)
        try:
            return torch.tensor(obj, dtype=dtype)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"array: cannot make an array from {type(obj).__name__} {obj!r:.80}: {error}") from None
    if dtype is not None and t.dtype is not dtype:
        return t.to(dtype)
    return t.clone() if copy else t


def _placed(host: torch.Tensor, device: Device) -> NDArray:
    """An array on ``device`` holding ``host`` (a CPU tensor it may keep)."""
    shape = tuple(host.shape)
    if device.kind == "cpu":
        return make(shape, host.dtype, device, Storage(host))
    out = make(shape, host.dtype, device)
    index = device.index

    def upload(t: torch.Tensor) -> torch.Tensor:
        pinned = t if t.is_pinned() else t.pin_memory()
        return torch.empty(shape, dtype=t.dtype, device=f"cuda:{index}").copy_(pinned, non_blocking=True)

    source = make(shape, host.dtype, Device("cpu", 0), Storage(host))
    return launch("upload", upload, out, (source,), lane="copy_h2d", tiny=False)


def array(obj: Any, device: Any = None, dtype: Any = None, ctx: Any = None, copy: bool = True) -> NDArray:
    """A new array holding a copy of ``obj`` (nested lists, numbers, NumPy arrays,
    torch tensors, autopar arrays). Default dtype: float32 for Python floats."""
    dev = as_device(device, ctx, "array")
    tdtype = None if dtype is None else _dtypes.to_torch_dtype(dtype)
    if type(obj) is NDArray:
        out = obj.copyto(dev) if (copy or obj.device != dev) else obj
        return out if tdtype is None or tdtype is out._tdtype else out.astype(tdtype)
    return _placed(_host_tensor(obj, tdtype, copy=copy), dev)


def asarray(obj: Any, device: Any = None, dtype: Any = None, ctx: Any = None) -> NDArray:
    """Like :func:`array`, but without a copy where the data can be shared
    (autopar arrays, torch tensors, NumPy arrays on the CPU)."""
    if isinstance(obj, torch.Tensor) and device is None and ctx is None:
        out = from_torch(obj)
        return out if dtype is None else out.astype(dtype, copy=False)
    if type(obj) is NDArray:
        dev = obj.device if device is None and ctx is None else as_device(device, ctx, "asarray")
        out = obj if dev == obj.device else obj.copyto(dev)
        return out if dtype is None else out.astype(dtype, copy=False)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (np.ndarray, np.generic)):
        return asarray(torch.from_dlpack(obj), device=device, dtype=dtype, ctx=ctx)  # other frameworks' arrays
    return array(obj, device=device, dtype=dtype, ctx=ctx, copy=False)


def from_torch(tensor: torch.Tensor, device: Any = None, ctx: Any = None) -> NDArray:
    """An array sharing memory with ``tensor`` (on its device; a CPU tensor may be
    given to any CPU device with ``device=``). Its pending CUDA work is waited for
    on the device, not the host."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"from_torch: expected a torch.Tensor, got {type(tensor).__name__}")
    t = tensor.detach()
    dev = Device(t.device) if device is None and ctx is None else as_device(device, ctx, "from_torch")
    if (dev.kind == "cuda") != t.is_cuda or (dev.kind == "cuda" and dev.index != t.device.index):
        raise ValueError(f"from_torch: the tensor is on {t.device}; device={dev} would need a copy (use asarray(t).to(...))")
    storage = Storage(t)
    if t.is_cuda:
        from autopar import engine
        from autopar.devices._cuda import CudaEvent

        # the user's kernels producing t may still run: every reader waits for them
        engine.push_event(CudaEvent(torch.cuda.current_stream(t.device)), writes=(storage.var,), device=dev,
                          name="from_torch")
    return make(tuple(t.shape), t.dtype, dev, storage)


def _constant(name: str, shape: Any, value: Any, dtype: Any, device: Any, ctx: Any) -> NDArray:
    dims = _shapes.normalize_shape(shape)
    dev = as_device(device, ctx, name)
    if dtype is not None:
        tdtype = _dtypes.to_torch_dtype(dtype)
    elif name == "full":
        tdtype = _dtypes.with_scalar(torch.bool, value)  # bool, int64, float32 or complex64, by the value's kind
    else:
        tdtype = _dtypes.DEFAULT_FLOAT
    where = dev.torch_device
    return launch(name, lambda: torch.full(dims, value, dtype=tdtype, device=where), make(dims, tdtype, dev), ())


def zeros(shape: Any, dtype: Any = None, device: Any = None, ctx: Any = None) -> NDArray:
    return _constant("zeros", shape, 0, dtype, device, ctx)


def ones(shape: Any, dtype: Any = None, device: Any = None, ctx: Any = None) -> NDArray:
    return _constant("ones", shape, 1, dtype, device, ctx)


def full(shape: Any, value: Any, dtype: Any = None, device: Any = None, ctx: Any = None) -> NDArray:
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, (bool, int, float, complex)):
        raise TypeError(f"full: value={value!r}: expected a number")
    return _constant("full", shape, value, dtype, device, ctx)


def zeros_like(a: NDArray, dtype: Any = None, device: Any = None, ctx: Any = None) -> NDArray:
    where = a.device if device is None and ctx is None else as_device(device, ctx, "zeros_like")
    return zeros(a.shape, dtype if dtype is not None else a._tdtype, where)


def ones_like(a: NDArray, dtype: Any = None, device: Any = None, ctx: Any = None) -> NDArray:
    where = a.device if device is None and ctx is None else as_device(device, ctx, "ones_like")
    return ones(a.shape, dtype if dtype is not None else a._tdtype, where)


def arange(
    start: Any, stop: Any = None, step: Any = 1, dtype: Any = None, device: Any = None, ctx: Any = None
) -> NDArray:
    """Evenly spaced values in ``[start, stop)``, as NumPy's ``arange``."""
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"arange: {name}={v!r}: expected a number")
    if step == 0:
        raise ValueError("arange: step must not be 0")
    n = max(0, math.ceil((stop - start) / step))
    if dtype is not None:
        tdtype = _dtypes.to_torch_dtype(dtype)
    elif all(isinstance(v, (int, np.integer)) for v in (start, stop, step)):
        tdtype = torch.int64
    else:
        tdtype = _dtypes.DEFAULT_FLOAT
    dev = as_device(device, ctx, "arange")
    where = dev.torch_device
    first, delta = start, step

    def kernel() -> torch.Tensor:
        return (torch.arange(n, dtype=torch.float64, device=where) * delta + first).to(tdtype)

    return launch("arange", kernel, make((n,), tdtype, dev), ())


__all__ = ["arange", "array", "asarray", "from_torch", "full", "ones", "ones_like", "zeros", "zeros_like"]
