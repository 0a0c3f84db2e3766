"""NDArray: data on one device whose value may still be pending.

An array is a view (``_views.View``, or ``None`` for the whole) of a storage
(``_views.Storage``: an engine var and the tensor it guards). Its ``shape``,
``dtype`` and ``device`` are known at the call; reading a value
(``numpy()``, ``item()``, ``repr`` ...) waits for the storage's var and raises
its failure, if any (the contract's failure rules).

This module holds the array type and what needs no op: its attributes,
reading values, making arrays and views. The operators and the methods that
run ops are attached to the class from above (``_methods.py``, which imports
both this module and the op modules, as JAX's ``array_methods.py`` does), so
the op modules can import this one without a circle. For type checkers only,
the class derives from the attached classes (``_Attached``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from autopar import engine
from autopar.arrays import _autograd, _dtypes, _interpreters, _views
from autopar.arrays._dtypes import DType
from autopar.devices import Device, cpu
from autopar.errors import DeviceError

if TYPE_CHECKING:
    from autopar.arrays._grad_methods import GradMethods
    from autopar.arrays._methods import Methods
    from autopar.arrays._operators import Operators

    class _Attached(Operators, GradMethods, Methods):
        """What ``_methods.attach`` gives the class at import, as the type checker sees it."""

else:
    _Attached = object

torch.get_num_threads()  # settle this thread's intra-op threads before any worker sets its own


class NDArray(_Attached):
    """An n-dimensional array on one device; operations on it run asynchronously.

    ``shape``, ``dtype``, ``ndim``, ``size`` and ``device`` (alias ``ctx``) are
    known at once; reading values (``numpy()``, ``item()``, ``float(x)``,
    ``repr``) waits for the work that produces them. ``autopar.ndarray`` is
    this class.
    """

    __slots__ = ("_storage", "_view", "_shape", "_dtype", "device", "_ag", "__weakref__")
    __array_ufunc__ = None  # NumPy operators defer to ours: `numpy_array + x` is an autopar op
    __array_priority__ = 1000
    __hash__ = None  # type: ignore[assignment]  # == is elementwise

    _storage: _views.Storage
    _view: _views.View | None
    _shape: tuple[int, ...]
    _dtype: DType
    device: Device
    _ag: Any  # its gradient record (_autograd.Leaf or Edge), None if it does not require grad

    if TYPE_CHECKING:

        @property
        def shape(self) -> tuple[int, ...]: ...

        @shape.setter
        def shape(self, value: Any) -> None: ...

    else:  # a C getter (a slot read through attrgetter): every op reads shapes; the setter is _methods'
        shape = property(operator.attrgetter("_shape"), doc="The array's shape, a tuple of ints.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "autopar.ndarray(...) is not how arrays are made; use autopar.array(data), "
            "autopar.asarray(data) or autopar.zeros(shape)"
        )

    # -- properties -----------------------------------------------------------

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ctx(self) -> Device:
        return self.device

    context = ctx

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array is undefined; it has no first dimension (use x.size)")
        return self.shape[0]

    def __iter__(self) -> Iterator[NDArray]:
        if not self.shape:
            raise TypeError("iteration over a 0-d array is undefined; read it with x.item()")
        for i in range(self.shape[0]):
            yield self[i]

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12"):
            raise ValueError(f"__array_namespace__: api_version={api_version!r}; autopar implements 2023.12")
        import autopar

        return autopar

    # -- reading values (blocking) ----------------------------------------------

    def wait_to_read(self) -> NDArray:
        """Block until this array's pending writes have finished; raise its failure."""
        if _interpreters.active:
            _interpreters.reading(self, "waits for (wait_to_read)")
        engine.wait_for_var(self._storage.var)
        return self

    def _ready_tensor(self) -> torch.Tensor:
        if _interpreters.active:
            _interpreters.reading(self, "reads the value")
        storage = self._storage
        engine.wait_for_var(storage.var)
        if storage.remote:
            return _interpreters.remote.fetch(self)
        return value_of(self)

    def torch(self) -> torch.Tensor:
        """The value as a torch tensor (blocks); shares memory with this array
        unless the view has negative strides (or the array is on a cluster node:
        then it is a copy here)."""
        t = self._ready_tensor()
        if t.is_cuda:  # the caller's stream will use memory autopar's stream allocated
            t.record_stream(torch.cuda.current_stream(t.device))
            from autopar.devices import _cuda

            _cuda.keep_on_loss(t)  # its free now records a CUDA event: kept if the device is lost
        return t

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the value (blocks)."""
        t = self._ready_tensor().detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype is torch.bfloat16:
            t = t.float()
        return t.numpy().copy()

    asnumpy = numpy

    def item(self, *args: Any) -> Any:
        """The element as a Python number (reads: waits): ``x.item()`` of a size-1 array, ``x.item(i)``
        the i-th of the flattened array, ``x.item(i, j)`` at that index (NumPy's)."""
        if args:
            if len(args) == 1 and isinstance(args[0], tuple):
                args = args[0]
            flat = len(args) == 1 and self.ndim != 1
            if flat:
                n = self.size
                if not -n <= args[0] < n:
                    raise IndexError(f"item: index {args[0]} is out of bounds for size {n}")
                return self.reshape(-1)[args[0]].item()
            return self[args].item()
        if self.size != 1:
            raise ValueError(f"item: only an array of size 1 has one item; this one has shape {self.shape}")
        return self._ready_tensor().item()

    def tolist(self) -> Any:
        return self.numpy().tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def _scalar(self, kind: str) -> Any:
        if self.size != 1:
            raise TypeError(f"{kind}(): only an array of size 1 converts to a Python scalar; this one has shape {self.shape}")
        return self.item()

    def __float__(self) -> float:
        if self._dtype.kind == "c":
            raise TypeError("float(): the array is complex; use complex(x) or x.real")
        return float(self._scalar("float"))

    def __int__(self) -> int:
        if self._dtype.kind == "c":
            raise TypeError("int(): the array is complex; use complex(x) or x.real")
        return int(self._scalar("int"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if self._dtype.kind not in "iu":
            raise TypeError(f"only integer arrays of size 1 can be used as an index; this one is {self._dtype.name}")
        return int(self._scalar("index"))

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of an array of shape {self.shape} is ambiguous; use x.any() or x.all()"
            )
        return bool(self.item())

    def __repr__(self) -> str:
        text = repr(self.numpy())
        if self._dtype is _dtypes.bfloat16:
            text = text.replace("dtype=float32", "dtype=bfloat16")
        if self.device != cpu(0):
            text = text[:-1] + f", device={self.device})"
        return text

    def __str__(self) -> str:
        return str(self.numpy())

    def __format__(self, spec: str) -> str:
        if self.ndim == 0 and spec:
            return format(self.item(), spec)
        return format(str(self), spec)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        t = self._ready_tensor()
        kwargs: dict[str, Any] = {}
        if stream is not None:
            kwargs["stream"] = stream
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return t.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        if self.device.kind == "cuda" and self.device.node is None:
            return (2, self.device.index)
        return (1, 0)

    def __copy__(self) -> NDArray:
        return self.copy()

    def __deepcopy__(self, memo: Any) -> NDArray:
        return self.copy()

    # -- internals ---------------------------------------------------------------

    def _settle(self) -> None:
        """After a data-dependent op has run: take the shape its tensor has."""
        storage = self._storage
        t = storage.tensor
        if t is not None:
            storage.settle(t)
            self._shape = storage.shape


_numpy_mode = _dtypes.numpy_mode
_new = object.__new__
_fresh = _views.Storage.fresh
_fresh_numpy = _views.NumpyStorage.fresh


def make(
    shape: tuple[int, ...],
    dtype: DType,
    device: Device,
    storage: _views.Storage | None = None,
    view: _views.View | None = None,
    npmode: bool | None = None,
) -> NDArray:
    """An array of a new storage (``npmode``: made in NumPy mode; None: if this thread is), or of ``storage``."""
    arr = _new(NDArray)
    arr._storage = storage if storage is not None else \
        (_fresh_numpy if (_numpy_mode.on if npmode is None else npmode) else _fresh)(shape, dtype, device)
    arr._view = view
    arr._shape = shape
    arr._dtype = dtype
    arr.device = device
    arr._ag = None
    return arr


def view_of(a: NDArray, view: _views.View) -> NDArray:
    """An array sharing ``a``'s storage, seeing ``view`` of it (not recorded for gradients: see :func:`derive`)."""
    storage = a._storage
    return make(view.shape, a._dtype, a.device, storage, _views.simplify(storage, view))


def derive(a: NDArray, view: Callable[[_views.View], _views.View]) -> NDArray:
    """The view of ``a`` that ``view`` makes of ``a``'s layout (basic indexing, transposes, reshapes).

    When ``a`` requires grad and recording is on, the result is recorded as a
    view node: ``view`` of a contiguous layout of ``a``'s shape says which of
    ``a``'s elements the result sees (``_autograd.record_view``).
    """
    result = view_of(a, view(_views.layout(a._storage, a._view)))
    if a._ag is not None and _autograd.wants_view(a):
        _autograd.record_view(a, result, view(_views.View(0, a.shape, _views.c_strides(a.shape))))
    return result


def value_of(arr: NDArray) -> torch.Tensor:
    """The array's tensor; valid inside an op that reads or writes it (or after a wait)."""
    tensor = arr._storage.tensor
    if tensor is None:  # pragma: no cover - the engine orders this away
        raise RuntimeError(f"internal error: array of shape {arr.shape} read before it was produced")
    view = arr._view
    return tensor if view is None else _views.read(tensor, view)


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

