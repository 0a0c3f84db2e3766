"""NDArray: data on one device whose value may still be pending.

Design note
-----------
An array is a *view* of a *storage*. A storage holds one engine ``Var`` and one
torch tensor, which the op that produces the storage sets exactly once, inside
the engine; every later op changes the tensor's contents in place (``x += 1``,
``x[0] = 5``), never the reference. An array adds to its storage a view
function (``None`` for the whole storage), a shape, a dtype and a device.

Views -- basic indexing, ``reshape`` of a whole storage, ``transpose``/``.T`` --
share the storage and its var, as in NumPy: writing through a view is a write
to the base, ordered by the same var, so no op can see half of an update.
Every op reads the vars of its inputs' storages and writes its output's; the
engine does the rest. Shape and dtype are computed when the op is called
(``_shapes.py``, ``_dtypes.py``), so errors are raised there, and ``.shape``
never waits.

Reading a value (``numpy()``, ``item()``, ``repr`` ...) waits for the storage's
var and raises its failure, if any (SPEC §4); a failed array never shows data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from autopar import engine
from autopar.ndarray import _dtypes
from autopar.devices import Device, cpu
from autopar.errors import DeviceError

# Ops whose output has at most this many elements run on the pushing thread
# when their inputs are ready and their lane is idle: the hand-off to a worker
# would cost more than the kernel.
TINY_NUMEL = 1 << 14

torch.get_num_threads()  # settle this thread's intra-op threads before any worker sets its own


class Storage:
    """One engine var and the tensor it guards (``None`` until produced)."""

    __slots__ = ("var", "tensor", "lane", "contiguous")

    def __init__(self, tensor: torch.Tensor | None = None, name: str | None = None) -> None:
        self.var = engine.Var(name)
        self.tensor = tensor
        self.lane = "compute"  # the lane whose stream allocated the tensor (CUDA)
        # Ops always produce contiguous tensors; only from_torch may bring others.
        self.contiguous = tensor is None or tensor.is_contiguous()


class NDArray:
    """An n-dimensional array on one device; operations on it run asynchronously.

    ``shape``, ``dtype``, ``ndim``, ``size`` and ``device`` (alias ``ctx``) are
    known at once; reading values (``numpy()``, ``item()``, ``float(x)``,
    ``repr``) waits for the work that produces them.
    """

    __slots__ = ("_storage", "_view", "shape", "_tdtype", "device", "__weakref__")
    __array_ufunc__ = None  # NumPy operators defer to ours: `ndarray + x` is an autopar op
    __hash__ = None  # type: ignore[assignment]  # == is elementwise

    _storage: Storage
    _view: Callable[[torch.Tensor], torch.Tensor] | None
    shape: tuple[int, ...]
    _tdtype: torch.dtype
    device: Device

    # -- properties -----------------------------------------------------------

    @property
    def dtype(self) -> Any:
        return _dtypes.numpy_dtype(self._tdtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ctx(self) -> Device:
        return self.device

    @property
    def T(self) -> NDArray:
        return _ops.transpose(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self) -> Iterator[NDArray]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    # -- reading values (blocking) ----------------------------------------------

    def wait_to_read(self) -> NDArray:
        """Block until this array's pending writes have finished; raise its failure."""
        engine.wait_for_var(self._storage.var)
        return self

    def _ready_tensor(self) -> torch.Tensor:
        engine.wait_for_var(self._storage.var)
        return value_of(self)

    def torch(self) -> torch.Tensor:
        """The value as a torch tensor (blocks); shares memory with this array."""
        return self._ready_tensor()

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the value (blocks)."""
        t = self._ready_tensor().detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype is torch.bfloat16:
            t = t.float()
        return t.numpy().copy()

    asnumpy = numpy

    def item(self) -> Any:
        if self.size != 1:
            raise ValueError(f"item: only an array of size 1 has one item; this one has shape {self.shape}")
        return self._ready_tensor().item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._tdtype.is_floating_point or self._tdtype is torch.bool:
            raise TypeError(f"only integer arrays of size 1 can be used as an index; this one is {self.dtype}")
        return int(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of an array of shape {self.shape} is ambiguous; use (x).any() or (x).all()"
            )
        return bool(self.item())

    def __repr__(self) -> str:
        text = repr(self.numpy())
        if self.device != cpu(0):
            text = text[:-1] + f", device={self.device})"
        return text

    def __str__(self) -> str:
        return str(self.numpy())

    def __dlpack__(self, stream: Any = None) -> Any:
        return self._ready_tensor().__dlpack__(stream=stream) if stream is not None else self._ready_tensor().__dlpack__()

    def __dlpack_device__(self) -> Any:
        return self._ready_tensor().__dlpack_device__()

    def __reduce__(self) -> Any:
        return (_rebuild, (self.numpy(), str(self.device)))

    # -- operators (NumPy semantics; see _ops.py) -------------------------------------

    def __add__(self, other: Any) -> NDArray:
        return _binary("add", self, other)

    def __radd__(self, other: Any) -> NDArray:
        return _binary("add", self, other, True)

    def __iadd__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("add", self, other)

    def __sub__(self, other: Any) -> NDArray:
        return _binary("subtract", self, other)

    def __rsub__(self, other: Any) -> NDArray:
        return _binary("subtract", self, other, True)

    def __isub__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("subtract", self, other)

    def __mul__(self, other: Any) -> NDArray:
        return _binary("multiply", self, other)

    def __rmul__(self, other: Any) -> NDArray:
        return _binary("multiply", self, other, True)

    def __imul__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("multiply", self, other)

    def __truediv__(self, other: Any) -> NDArray:
        return _binary("divide", self, other)

    def __rtruediv__(self, other: Any) -> NDArray:
        return _binary("divide", self, other, True)

    def __itruediv__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("divide", self, other)

    def __floordiv__(self, other: Any) -> NDArray:
        return _binary("floor_divide", self, other)

    def __rfloordiv__(self, other: Any) -> NDArray:
        return _binary("floor_divide", self, other, True)

    def __ifloordiv__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("floor_divide", self, other)

    def __mod__(self, other: Any) -> NDArray:
        return _binary("mod", self, other)

    def __rmod__(self, other: Any) -> NDArray:
        return _binary("mod", self, other, True)

    def __imod__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("mod", self, other)

    def __pow__(self, other: Any) -> NDArray:
        return _binary("power", self, other)

    def __rpow__(self, other: Any) -> NDArray:
        return _binary("power", self, other, True)

    def __ipow__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("power", self, other)

    def __and__(self, other: Any) -> NDArray:
        return _binary("bitwise_and", self, other)

    def __rand__(self, other: Any) -> NDArray:
        return _binary("bitwise_and", self, other, True)

    def __iand__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("bitwise_and", self, other)

    def __or__(self, other: Any) -> NDArray:
        return _binary("bitwise_or", self, other)

    def __ror__(self, other: Any) -> NDArray:
        return _binary("bitwise_or", self, other, True)

    def __ior__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("bitwise_or", self, other)

    def __xor__(self, other: Any) -> NDArray:
        return _binary("bitwise_xor", self, other)

    def __rxor__(self, other: Any) -> NDArray:
        return _binary("bitwise_xor", self, other, True)

    def __ixor__(self, other: Any) -> NDArray:
        return _ops.binary_inplace("bitwise_xor", self, other)

    def __eq__(self, other: Any) -> NDArray:  # type: ignore[override]
        return _binary("equal", self, other)

    def __ne__(self, other: Any) -> NDArray:  # type: ignore[override]
        return _binary("not_equal", self, other)

    def __lt__(self, other: Any) -> NDArray:
        return _binary("less", self, other)

    def __le__(self, other: Any) -> NDArray:
        return _binary("less_equal", self, other)

    def __gt__(self, other: Any) -> NDArray:
        return _binary("greater", self, other)

    def __ge__(self, other: Any) -> NDArray:
        return _binary("greater_equal", self, other)

    def __neg__(self) -> NDArray:
        return _ops.unary("negative", self)

    def __pos__(self) -> NDArray:
        return self

    def __abs__(self) -> NDArray:
        return _ops.unary("abs", self)

    def __invert__(self) -> NDArray:
        return _ops.unary("invert", self)

    def __matmul__(self, other: Any) -> NDArray:
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> NDArray:
        return _ops.matmul(other, self)

    def __imatmul__(self, other: Any) -> NDArray:
        result = _ops.matmul(self, other)
        if result.shape != self.shape:
            raise ValueError(f"matmul (in place): result shape {result.shape} differs from the target's {self.shape}")
        self[...] = result
        return self

    def __getitem__(self, key: Any) -> NDArray:
        return _ops.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _ops.setitem(self, key, value)

    # -- methods ----------------------------------------------------------------------------

    def dot(self, other: Any) -> NDArray:
        return _ops.dot(self, other)

    def mm(self, other: Any) -> NDArray:
        return _ops.mm(self, other)

    def matmul(self, other: Any) -> NDArray:
        return _ops.matmul(self, other)

    def sum(self, axis: Any = None, keepdims: bool = False) -> NDArray:
        return _ops.sum(self, axis, keepdims)

    def mean(self, axis: Any = None, keepdims: bool = False) -> NDArray:
        return _ops.mean(self, axis, keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> NDArray:
        return _ops.max(self, axis, keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> NDArray:
        return _ops.min(self, axis, keepdims)

    def maximum(self, other: Any) -> NDArray:
        return _ops.maximum(self, other)

    def minimum(self, other: Any) -> NDArray:
        return _ops.minimum(self, other)

    def exp(self) -> NDArray:
        return _ops.unary("exp", self)

    def log(self) -> NDArray:
        return _ops.unary("log", self)

    def tanh(self) -> NDArray:
        return _ops.unary("tanh", self)

    def sqrt(self) -> NDArray:
        return _ops.unary("sqrt", self)

    def sin(self) -> NDArray:
        return _ops.unary("sin", self)

    def cos(self) -> NDArray:
        return _ops.unary("cos", self)

    def sigmoid(self) -> NDArray:
        return _ops.unary("sigmoid", self)

    def relu(self) -> NDArray:
        return _ops.unary("relu", self)

    def abs(self) -> NDArray:
        return _ops.unary("abs", self)

    def reshape(self, *shape: Any) -> NDArray:
        """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``; ``-1`` infers one dimension."""
        return _ops.reshape(self, *shape)

    def transpose(self, *axes: Any) -> NDArray:
        """Reverse the axes, or permute them: ``x.transpose(1, 0, 2)`` / ``x.transpose((1, 0, 2))``."""
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = () if axes[0] is None else tuple(axes[0])
        return _ops.transpose(self, axes or None)

    def astype(self, dtype: Any, copy: bool = True) -> NDArray:
        return _ops.astype(self, dtype, copy)

    def copy(self) -> NDArray:
        return _ops.copy(self)

    def copyto(self, target: Any) -> NDArray:
        """Copy to ``target``: a device (a new array there) or an array (written
        into). Always asynchronous, on a copy lane."""
        return _copy.copyto(self, target)

    def to(self, device: Any, non_blocking: bool = False) -> NDArray:
        """This array on ``device`` (itself if already there). With
        ``non_blocking=False`` it returns after the copy has finished (raising its
        failure); with ``True`` at once."""
        return _copy.to(self, device, non_blocking)

    def as_in_ctx(self, ctx: Any) -> NDArray:
        """MXNet's spelling of ``to(ctx, non_blocking=True)``."""
        return _copy.to(self, ctx, non_blocking=True)



# -- making arrays --------------------------------------------------------------


def make(
    shape: tuple[int, ...],
    tdtype: torch.dtype,
    device: Device,
    storage: Storage | None = None,
    view: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> NDArray:
    arr = object.__new__(NDArray)
    arr._storage = storage if storage is not None else Storage()
    arr._view = view
    arr.shape = shape
    arr._tdtype = tdtype
    arr.device = device
    return arr


def value_of(arr: NDArray) -> torch.Tensor:
    """The array's tensor; valid inside an op that reads or writes it (or after a wait)."""
    view = arr._view
    tensor = arr._storage.tensor
    if tensor is None:  # pragma: no cover - the engine orders this away
        raise RuntimeError(f"internal error: array of shape {arr.shape} read before it was produced")
    return tensor if view is None else view(tensor)


def as_device(device: Any, ctx: Any = None, what: str = "device") -> Device:
    """Resolve ``device=`` / ``ctx=`` (MXNet spelling) to a Device; default cpu:0."""
    if device is not None and ctx is not None and Device(device) != Device(ctx):
        raise ValueError(f"{what}: device={device} and ctx={ctx} disagree; pass one of them")
    chosen = device if device is not None else ctx
    if chosen is None:
        return cpu(0)
    dev = chosen if type(chosen) is Device else Device(chosen)
    if dev.kind == "sim":
        raise DeviceError(f"{dev}: simulated devices run engine ops only; arrays live on cpu and cuda devices")
    return dev


def same_device(op: str, arrays: Sequence[NDArray]) -> Device:
    device = arrays[0].device
    for other in arrays[1:]:
        if other.device is not device and other.device != device:
            raise DeviceError(
                f"{op}: operands are on different devices, {device} and {other.device}; "
                f"move one first, e.g. x.to({device!s:s}) or x.copyto(autopar.Device('{device}'))"
            )
    return device


def _push_kernel(
    fn: Callable[[], Any],
    reads: tuple[engine.Var, ...],
    writes: tuple[engine.Var, ...],
    device: Device,
    name: str,
    tiny: bool,
    lane: str = "compute",
) -> None:
    """Push an array kernel; a ``tiny`` one may run at once on this thread (engine ``inline``)."""
    eng = engine._engine or engine.current_engine()
    eng.push_checked(fn, reads, writes, device, 0, name, lane, tiny)


def launch(
    name: str,
    kernel: Callable[..., torch.Tensor],
    out: NDArray,
    inputs: Sequence[NDArray],
    lane: str = "compute",
    tiny: bool | None = None,
    device: Device | None = None,
) -> NDArray:
    """Push ``out = kernel(*input tensors)`` as an op on ``device``'s ``lane``
    (default: ``out``'s device). ``tiny`` (default: judged by ``out``'s size)
    lets the engine run it on the calling thread when its lane is idle."""
    storage = out._storage
    dtype = out._tdtype
    where = out.device if device is None else device
    cuda = where.kind == "cuda"

    def run() -> None:
        tensors = [value_of(a) for a in inputs]
        if cuda:
            guard_streams(inputs, tensors, lane)
        result = kernel(*tensors)
        if result.dtype is not dtype:
            result = result.to(dtype)
        if not result.is_contiguous():
            result = result.contiguous()
        storage.tensor = result
        storage.lane = lane

    reads = tuple(a._storage.var for a in inputs)
    if tiny is None:
        tiny = out.size <= TINY_NUMEL
    _push_kernel(run, reads, (storage.var,), where, name, tiny and not cuda, lane)
    return out


def launch_inplace(
    name: str,
    kernel: Callable[..., Any],
    target: NDArray,
    inputs: Sequence[NDArray],
    lane: str = "compute",
    device: Device | None = None,
) -> NDArray:
    """Push ``kernel(target tensor, *input tensors)``, which updates the target in place."""
    where = target.device if device is None else device
    cuda = where.kind == "cuda"

    def run() -> None:
        tensors = [value_of(a) for a in inputs]
        t = value_of(target)
        if cuda:
            guard_streams([target, *inputs], [t, *tensors], lane)
        kernel(t, *tensors)

    # A partial update reads what it keeps: the target is read too (SPEC §4.2).
    reads = (target._storage.var, *(a._storage.var for a in inputs))
    _push_kernel(run, reads, (target._storage.var,), where, name, target.size <= TINY_NUMEL and not cuda, lane)
    return target


def guard_streams(arrays: Sequence[NDArray], tensors: Sequence[torch.Tensor], lane: str) -> None:
    """Tell torch's caching allocator that this lane's stream uses tensors allocated on another.

    Without it, memory freed on the allocating stream could be reused while this
    stream still reads it (PyTorch CUDA semantics: ``Tensor.record_stream``).
    """
    stream = None
    for arr, t in zip(arrays, tensors):
        if arr._storage.lane != lane and t.is_cuda:
            if stream is None:
                stream = torch.cuda.current_stream()
            t.record_stream(stream)


def _binary(op: str, a: NDArray, other: Any, reflected: bool = False) -> Any:
    """An operator: NotImplemented for operands we do not know, so Python tries the other side."""
    try:
        return _ops.binary(op, a, other, reflected)
    except TypeError as error:
        if "unsupported operand" in str(error):
            return NotImplemented
        raise


def _rebuild(values: np.ndarray, device: str) -> NDArray:
    from autopar.ndarray._creation import array

    return array(values, device=device)


# The operations live in their own modules, which import this one.
from autopar.ndarray import _copy, _ops  # noqa: E402

__all__ = ["NDArray", "Storage", "_ops", "launch", "launch_inplace", "make", "value_of"]
