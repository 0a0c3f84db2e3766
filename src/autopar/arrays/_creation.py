"""Making arrays: from data (captured at the call), constants, ranges, and interop.

Host data -- Python sequences, NumPy arrays, CPU torch tensors -- is copied
when ``array``/``asarray`` is called, so later changes to the caller's
buffer cannot leak into pending work. Memory is
shared only when asked: ``asarray(x, copy=False)``, ``from_torch``,
``from_dlpack``; then the caller promises not to change it until the ops
reading it have run. For a CUDA device the snapshot is uploaded by a copy
op on the device's ``copy_h2d`` lane.

Constants and ranges (``zeros``, ``full``, ``arange``, ``linspace``, ``eye``)
are table entries without inputs: their kernels make the tensor on the
device, inside the engine.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from autopar.arrays import _dtypes, _interpreters
from autopar.arrays._array import NDArray, as_device, make
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._table import TABLE, define, fixed, same
from autopar.arrays._views import storage
from autopar.devices import Device


def _dtype_of(d: tuple[DType, ...], s: dict[str, Any]) -> tuple[DType, ...]:
    return (s["dtype"],)


def _static_shape(op: str, shapes: tuple[Any, ...], s: dict[str, Any]) -> tuple[Any, ...]:
    return (s["shape"],)


def _full(shape: tuple[int, ...], value: Any, dtype: DType, device: str) -> torch.Tensor:
    if dtype.kind in "fc" and not _in_range(value, dtype):
        # torch.full refuses a float past the dtype's largest; NumPy and asarray round it (to the largest or inf)
        wide = torch.complex128 if dtype.kind == "c" else torch.float64
        return torch.empty(shape, dtype=dtype.torch, device=device).fill_(torch.tensor(value, dtype=wide))
    return torch.full(shape, value, dtype=dtype.torch, device=device)


def _in_range(value: Any, dtype: DType) -> bool:
    largest = torch.finfo(dtype.torch).max
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    return all(not math.isfinite(p) or abs(p) <= largest for p in parts)


def _empty(shape: tuple[int, ...], dtype: DType, device: str) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype.torch, device=device)


def _arange(shape: tuple[int, ...], start: Any, step: Any, dtype: DType, device: str) -> torch.Tensor:
    n = shape[0]
    if dtype.kind in "iu" and isinstance(start, int) and isinstance(step, int):
        last = start + step * (n - 1) if n else start
        if all(-(2**63) <= v < 2**63 for v in (start, last, step)):
            return torch.arange(start, start + step * n, step, dtype=torch.int64, device=device)
        # uint64 values of 2**63 and above: the same bits, computed modulo 2**64 in int64
        wrap = [(v + 2**63) % 2**64 - 2**63 for v in (start, step)]
        return torch.arange(n, dtype=torch.int64, device=device) * wrap[1] + wrap[0]
    return torch.arange(n, dtype=torch.float64, device=device) * step + start


def _linspace(shape: tuple[int, ...], start: Any, stop: Any, endpoint: bool, dtype: DType, device: str) -> torch.Tensor:
    """NumPy's formula in double precision (bit-identical to ``numpy.linspace`` in float64; torch's
    ``linspace`` counts from both ends and differs in the last bit): ``_linspaced``'s kernel, which runs
    it for array endpoints too, on 0-d endpoints."""
    wide = torch.complex128 if dtype.kind == "c" else torch.float64
    ends = (torch.tensor(start, dtype=wide, device=device), torch.tensor(stop, dtype=wide, device=device))
    return _linspaced.kernel(*ends, num=shape[0], endpoint=endpoint, dtype=dtype)


def _eye(shape: tuple[int, ...], k: int, dtype: DType, device: str) -> torch.Tensor:
    t = torch.zeros(shape, dtype=dtype.torch, device=device)
    t.diagonal(k).fill_(1)
    return t


def _as_is(t: torch.Tensor, **static: Any) -> torch.Tensor:
    return t


define("full", _full, fixed(_dtype_of), shape=_static_shape, differentiable=False)
define("empty", _empty, fixed(_dtype_of), shape=_static_shape, differentiable=False)
define("arange", _arange, fixed(_dtype_of), shape=_static_shape, differentiable=False)
define("linspace", _linspace, fixed(_dtype_of), shape=_static_shape, differentiable=False)
define("eye", _eye, fixed(_dtype_of), shape=_static_shape, differentiable=False)
define("astype", _as_is, fixed(_dtype_of), shape=lambda op, shapes, s: shapes, kernel_dtype="exact")
define("tril", lambda t, k: torch.tril(t, k), same())
define("triu", lambda t, k: torch.triu(t, k), same())


# -- shapes and dtypes of creation calls ------------------------------------------------------


def shape_arg(op: str, shape: tuple[Any, ...]) -> tuple[int, ...]:
    """``(2, 3)``, ``[2, 3]``, ``2`` or the PyTorch spelling ``2, 3``, as a tuple of sizes."""
    if len(shape) == 1:
        shape = shape[0]
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = (shape,)
    try:
        out = tuple(int(s.__index__()) for s in shape)
    except (AttributeError, TypeError):
        raise TypeError(f"{op}: shape={shape!r}: expected an int or a tuple of ints, like (2, 3)") from None
    if any(s < 0 for s in out):
        raise ValueError(f"{op}: shape={out}: sizes must be >= 0")
    return out


def _split_shape(op: str, args: tuple[Any, ...], dtype: Any) -> tuple[tuple[int, ...], Any]:
    """NumPy passes ``(shape, dtype)`` positionally, PyTorch ``*sizes``: tell them apart."""
    if len(args) == 2 and not isinstance(args[1], (int, np.integer)) and dtype is None:
        return shape_arg(op, args[:1]), args[1]
    if not args:
        raise TypeError(f"{op}: missing the shape, e.g. {op}((2, 3))")
    return shape_arg(op, args), dtype


def _place(device: Any, ctx: Any, op: str) -> Device:
    return as_device(device, ctx, op)


def requiring(out: NDArray, requires_grad: bool) -> NDArray:
    """PyTorch's ``requires_grad=`` of creation functions: the new array as a leaf that requires grad."""
    if requires_grad:
        out.requires_grad_()
    return out


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None, ctx: Any = None,
         requires_grad: bool = False) -> NDArray:  # fmt: skip
    dims = shape_arg("full", (shape,))
    if isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    if type(fill_value) is NDArray:
        fill_value = fill_value.item()
    if not isinstance(fill_value, (bool, int, float, complex)):
        raise TypeError(f"full: fill_value={fill_value!r}: expected a number")
    d = _dtypes.infer_python(fill_value) if dtype is None else _dtypes.as_dtype(dtype, "full")
    if d.kind == "c":
        fill_value = complex(fill_value)
    elif d.kind in "iu" and isinstance(fill_value, int) and not isinstance(fill_value, bool):
        _dtypes.scalar_dtype("full", d, fill_value)  # OverflowError if it does not fit
    dev = _place(device, ctx, "full")
    out = bind(TABLE["full"], (), {"shape": dims, "value": fill_value, "dtype": d, "device": dev.torch_name},
               device=dev)  # fmt: skip
    return requiring(out, requires_grad)


def zeros(shape: Any, *sizes: Any, dtype: Any = None, device: Any = None, ctx: Any = None,
          requires_grad: bool = False) -> NDArray:
    """``zeros((2, 3))``, ``zeros(2, 3)`` (PyTorch) or ``zeros((2, 3), 'int64')`` (NumPy)."""
    dims, dtype = _split_shape("zeros", (shape, *sizes), dtype)
    d = _dtypes.default_float() if dtype is None else _dtypes.as_dtype(dtype, "zeros")
    return full(dims, 0, dtype=d, device=device, ctx=ctx, requires_grad=requires_grad)


def ones(shape: Any, *sizes: Any, dtype: Any = None, device: Any = None, ctx: Any = None,
         requires_grad: bool = False) -> NDArray:
    dims, dtype = _split_shape("ones", (shape, *sizes), dtype)
    d = _dtypes.default_float() if dtype is None else _dtypes.as_dtype(dtype, "ones")
    return full(dims, 1, dtype=d, device=device, ctx=ctx, requires_grad=requires_grad)


def empty(shape: Any, *sizes: Any, dtype: Any = None, device: Any = None, ctx: Any = None,
          requires_grad: bool = False) -> NDArray:
    dims, dtype = _split_shape("empty", (shape, *sizes), dtype)
    d = _dtypes.default_float() if dtype is None else _dtypes.as_dtype(dtype, "empty")
    dev = _place(device, ctx, "empty")
    out = bind(TABLE["empty"], (), {"shape": dims, "dtype": d, "device": dev.torch_name}, device=dev)
    return requiring(out, requires_grad)


def _like(op: str, x: Any, dtype: Any, device: Any, ctx: Any) -> tuple[Any, DType, Device]:
    x = asarray(x)
    d = x.dtype if dtype is None else _dtypes.as_dtype(dtype, op)
    dev = x.device if device is None and ctx is None else _place(device, ctx, op)
    return x, d, dev


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None, ctx: Any = None,
               requires_grad: bool = False) -> NDArray:  # fmt: skip
    x, d, dev = _like("zeros_like", x, dtype, device, ctx)
    return full(x.shape, 0, dtype=d, device=dev, requires_grad=requires_grad)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None, ctx: Any = None,
              requires_grad: bool = False) -> NDArray:  # fmt: skip
    x, d, dev = _like("ones_like", x, dtype, device, ctx)
    return full(x.shape, 1, dtype=d, device=dev, requires_grad=requires_grad)


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None, ctx: Any = None,
               requires_grad: bool = False) -> NDArray:  # fmt: skip
    x, d, dev = _like("empty_like", x, dtype, device, ctx)
    return empty(x.shape, dtype=d, device=dev, requires_grad=requires_grad)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None, ctx: Any = None,
              requires_grad: bool = False) -> NDArray:  # fmt: skip
    x, d, dev = _like("full_like", x, dtype, device, ctx)
    return full(x.shape, fill_value, dtype=d, device=dev, requires_grad=requires_grad)


def _number(op: str, name: str, v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if type(v) is NDArray:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{op}: {name}={v!r}: expected a real number")
    return v


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
           ctx: Any = None) -> NDArray:  # fmt: skip
    """Evenly spaced values in ``[start, stop)``, as NumPy's ``arange``."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number("arange", n, v) for n, v in (("start", start), ("stop", stop), ("step", step)))
    if step == 0:
        raise ValueError("arange: step must not be 0")
    if all(isinstance(v, int) for v in (start, stop, step)):
        n = len(range(start, stop, step))  # exact for ints of any size
    else:
        n = max(0, math.ceil((stop - start) / step))
    if dtype is not None:
        d = _dtypes.as_dtype(dtype, "arange")
    elif all(isinstance(v, int) for v in (start, stop, step)):
        d = _dtypes.INDEX
    else:
        d = _dtypes.default_float()
    dev = _place(device, ctx, "arange")
    static = {"shape": (n,), "start": start, "step": step, "dtype": d, "device": dev.torch_name}
    return bind(TABLE["arange"], (), static, device=dev)


def linspace(start: Any, stop: Any, /, num: int = 50, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True, ctx: Any = None) -> NDArray:  # fmt: skip
    if isinstance(num, bool) or not isinstance(num, int) or num < 0:
        raise ValueError(f"linspace: num={num!r} must be an int >= 0")
    if _linspaced.is_array(start) or _linspaced.is_array(stop):  # linspace(x.min(), x.max(), n): _linspaced
        return _linspaced.linspace(start, stop, num, endpoint, dtype, _place(device, ctx, "linspace")
                                   if device is not None or ctx is not None else None, asarray)  # fmt: skip
    complex_ = isinstance(start, complex) or isinstance(stop, complex)
    d = (_dtypes.default_complex() if complex_ else _dtypes.default_float()) if dtype is None else _dtypes.as_dtype(dtype)
    dev = _place(device, ctx, "linspace")
    static = {"shape": (num,), "start": start, "stop": stop, "endpoint": bool(endpoint), "dtype": d,
              "device": dev.torch_name}  # fmt: skip
    return bind(TABLE["linspace"], (), static, device=dev)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None,
        ctx: Any = None) -> NDArray:  # fmt: skip
    rows = shape_arg("eye", (n_rows,))[0]
    cols = rows if n_cols is None else shape_arg("eye", (n_cols,))[0]
    d = _dtypes.default_float() if dtype is None else _dtypes.as_dtype(dtype, "eye")
    dev = _place(device, ctx, "eye")
    return bind(TABLE["eye"], (), {"shape": (rows, cols), "k": int(k), "dtype": d, "device": dev.torch_name},
                device=dev)  # fmt: skip


def identity(n: int, dtype: Any = None, *, device: Any = None, ctx: Any = None) -> NDArray:
    return eye(n, dtype=dtype, device=device, ctx=ctx)


def tril(x: Any, /, k: int = 0) -> NDArray:  # k positional too: NumPy's tril(m, k)
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"tril: the array has shape {x.shape}; it needs at least 2 dimensions")
    return bind(TABLE["tril"], (x,), {"k": int(k)})


def triu(x: Any, /, k: int = 0) -> NDArray:  # k positional too: NumPy's triu(m, k)
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"triu: the array has shape {x.shape}; it needs at least 2 dimensions")
    return bind(TABLE["triu"], (x,), {"k": int(k)})


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> NDArray:
    x = asarray(x)
    d = _dtypes.as_dtype(dtype, "astype")
    if device is not None:
        from autopar.arrays._copy import to

        x = to(x, device, non_blocking=True)
    if d is x.dtype and not copy:
        return x
    return bind(TABLE["astype"], (x,), {"dtype": d})


# -- from data (``asarray`` registers itself with _dtypes below, for ``float64(x)``) -----------


def _host_tensor(op: str, obj: Any, dtype: DType | None, copy: bool | None) -> torch.Tensor:
    """A CPU tensor holding ``obj``: a snapshot unless ``copy is False``."""
    if isinstance(obj, (np.ndarray, np.generic)):
        arr = np.asarray(obj)
        if arr.dtype.kind not in "biufc":
            raise TypeError(f"{op}: NumPy arrays of dtype {arr.dtype} are not supported; use numbers or bools")
        if arr.dtype.byteorder not in "=|":
            arr = arr.astype(arr.dtype.newbyteorder("="))
        if dtype is not None and dtype.numpy is not None and arr.dtype != dtype.numpy:
            if copy is False:
                raise ValueError(f"{op}: copy=False, but converting {arr.dtype} to {dtype.name} needs a copy")
            arr = arr.astype(dtype.numpy)
        elif copy is False:
            if not arr.flags.writeable or not arr.flags.c_contiguous and not arr.flags.f_contiguous:
                raise ValueError(f"{op}: copy=False, but this NumPy array cannot be shared (read-only or strided)")
        else:
            arr = np.array(arr, order="C", copy=True)
        t = torch.from_numpy(arr)
        return t if dtype is None or t.dtype is dtype.torch else t.to(dtype.torch)
    d = _dtypes.infer_python(obj) if dtype is None else dtype
    try:
        return torch.tensor(obj, dtype=d.torch)
    except (TypeError, ValueError, RuntimeError, OverflowError) as error:
        raise TypeError(f"{op}: cannot make an array from {type(obj).__name__} {obj!r:.80}: {error}") from None


def _placed(host: torch.Tensor, device: Device) -> NDArray:
    """An array on ``device`` holding ``host`` (a CPU tensor it may keep)."""
    shape = tuple(host.shape)
    d = _dtypes.of_tensor(host)
    here = device.kind == "cpu" and device.node is None
    source = make(shape, d, device if here else Device("cpu", 0), storage(shape, d, Device("cpu", 0), host, None))
    if here:
        return source
    from autopar.arrays._copy import copy_to_device

    return copy_to_device(source, device)


def _stack(xs: list[NDArray]) -> NDArray:
    """``stack(xs)``: the table's entry, which ``_manipulation`` (above this module) defines."""
    for x in xs[1:]:
        if x.shape != xs[0].shape:
            raise ValueError(f"stack: shapes {xs[0].shape} and {x.shape} differ; stacked arrays need one shape")
    out: NDArray = bind(TABLE["stack"], xs, {"axis": 0})
    return out


def _contains_arrays(obj: Any) -> bool:
    if type(obj) is NDArray:
        return True
    return isinstance(obj, (list, tuple)) and any(_contains_arrays(x) for x in obj)


def asarray(obj: Any, /, dtype: Any = None, device: Any = None, copy: bool | None = None, *,
            ctx: Any = None, requires_grad: bool = False) -> NDArray:  # fmt: skip
    """An array from ``obj``: autopar arrays pass through (unless a copy, another dtype or
    device is asked for); host data and torch tensors are copied at the call unless
    ``copy=False`` (then memory is shared where possible, and ``ValueError`` otherwise).
    ``requires_grad=True`` makes the result a leaf that requires grad (PyTorch)."""
    if requires_grad:
        return requiring(asarray(obj, dtype, device, copy, ctx=ctx), True)
    dev = None if device is None and ctx is None else _place(device, ctx, "asarray")
    d = None if dtype is None else _dtypes.as_dtype(dtype, "asarray")
    if type(obj) is NDArray:
        out = obj
        if dev is not None and dev != out.device:
            if copy is False:
                raise ValueError(f"asarray: copy=False, but the array is on {out.device}, not {dev}")
            from autopar.arrays._copy import to

            out = to(out, dev, non_blocking=True)
        if d is not None and d is not out.dtype:
            if copy is False:
                raise ValueError(f"asarray: copy=False, but converting {out.dtype} to {d} needs a copy")
            return astype(out, d)
        return out.copy() if copy is True and out is obj else out
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        if copy is not False:
            t = t.clone()  # the value now; on a CUDA tensor, ordered on the caller's stream
        out = from_torch(t) if dev is None or (dev.kind == "cuda") == t.is_cuda else _placed(t.cpu(), dev)
        if copy is not False and _interpreters.active:
            _interpreters.made(out)
        if dev is not None and out.device != dev:
            from autopar.arrays._copy import to

            out = to(out, dev, non_blocking=True)
        return out if d is None or d is out.dtype else astype(out, d)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (np.ndarray, np.generic)):
        return asarray(torch.from_dlpack(obj), dtype=dtype, device=device, copy=copy, ctx=ctx)
    if _contains_arrays(obj):
        out = _stack([asarray(x, device=dev) for x in obj])
        return out if d is None else astype(out, d, copy=False)
    out = _placed(_host_tensor("asarray", obj, d, copy), dev if dev is not None else Device("cpu", 0))
    if copy is not False and _interpreters.active:  # a capture makes it anew at each call (its trace note)
        _interpreters.made(out)
    return out


def array(obj: Any, dtype: Any = None, *, device: Any = None, copy: bool = True, ctx: Any = None,
          requires_grad: bool = False) -> NDArray:  # fmt: skip
    """A new array holding a copy of ``obj`` (nested lists, numbers, NumPy arrays,
    torch tensors, autopar arrays). Default dtype: float32 for Python floats.
    ``requires_grad=True``: a leaf that requires grad (PyTorch)."""
    return asarray(obj, dtype=dtype, device=device, copy=True if copy else None, ctx=ctx, requires_grad=requires_grad)


def from_torch(tensor: torch.Tensor, device: Any = None, ctx: Any = None) -> NDArray:
    """An array sharing memory with ``tensor`` (on its device; a CPU tensor may be
    given to any CPU device with ``device=``). Its pending CUDA work is waited for
    on the device, not the host; the caller promises not to change the tensor
    until the ops reading it have run."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"from_torch: expected a torch.Tensor, got {type(tensor).__name__}")
    t = tensor.detach()
    dev = Device(t.device) if device is None and ctx is None else _place(device, ctx, "from_torch")
    if dev.node is not None:
        raise ValueError(f"from_torch: device={dev} is a cluster node's; its memory cannot be shared from here "
                         f"(use autopar.asarray(t, device='{dev}'), which copies it there)")
    if (dev.kind == "cuda") != t.is_cuda or (dev.kind == "cuda" and dev.index != t.device.index):
        raise ValueError(f"from_torch: the tensor is on {t.device}; device={dev} would need a copy (use asarray(t).to(...))")
    if t.dtype not in _dtypes._BY_TORCH:
        raise TypeError(f"from_torch: torch dtype {t.dtype} has no autopar dtype; convert it first (t.float())")
    shape = tuple(t.shape)
    made = storage(shape, _dtypes.of_tensor(t), dev, t, None)
    if t.is_cuda:
        from autopar import engine
        from autopar.devices._cuda import CudaEvent

        # The user's kernels producing t may still run on their stream: every reader waits
        # for them (on the device for stream lanes, on the host otherwise).
        engine.push_event(CudaEvent(torch.cuda.current_stream(t.device)), writes=(made.var,), device=dev,
                          name="from_torch")  # fmt: skip
    return make(shape, made.dtype, dev, made)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> NDArray:
    """An array sharing memory with a DLPack producer (copied if ``copy=True``)."""
    t = torch.from_dlpack(x)
    out = from_torch(t.clone() if copy else t)
    if device is not None:
        from autopar.arrays._copy import to

        return to(out, device, non_blocking=True)
    return out


_dtypes._asarray = asarray

from autopar.arrays import _linspaced  # noqa: E402  (linspace between arrays)
