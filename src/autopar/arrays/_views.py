"""Storages and views: how an array finds its elements, as in NumPy.

Design note
-----------
A :class:`Storage` holds one engine ``Var`` and one torch tensor, set once by
the op that produces it (inside the engine); later ops change the tensor's
contents, never the reference. It also records, at the call, the tensor's
shape, dtype, strides and device, so views can be computed before the tensor
exists.

An array is a :class:`View` of a storage -- or the whole storage, ``view is
None`` (the fast path). A view is NumPy's triple: an element ``offset``
(relative to the storage tensor's own offset), a ``shape`` and ``strides`` in
elements, any of which may be **negative**. Basic indexing, ``T``/``mT``,
``permute_dims``, ``flip``, ``expand_dims``, ``squeeze`` and contiguous
``reshape`` compute a new triple in Python, with NumPy's arithmetic, and
push nothing: the result shares the storage and its var, so writing through
it is a write of the base, ordered by the same var.

torch has no negative strides. :func:`read` takes the same elements with
positive strides (``as_strided``) and flips the reversed dimensions (a
copy, for reading); :func:`write` flips the *value* instead and copies it
into the positive view, so writes through ``x[::-1]`` reach ``x``.

A write whose view covers every element of its storage (:func:`covers`)
overwrites it: it does not read the old value, runs even if the storage had
failed, and allocates the tensor if the failed producer never made it
(contract, failures rule 2).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from autopar import engine
from autopar.arrays._dtypes import DType, numpy_mode
from autopar.engine._var import _var_ids

Shape = tuple[int, ...]


def c_strides(shape: Shape) -> Shape:
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def note_tensor(t: torch.Tensor) -> None:
    """A tensor from outside autopar's kernels is kept (``from_torch``, ``asarray``, a user function's result).
    One of a torch.Tensor subclass may run Python code in every kernel it meets (``__torch_function__``): from
    then on no kernel runs under the engine lock (``engine/_bulk.py``'s pure ops; ``_dispatch``'s lean paths)."""
    if type(t) is not torch.Tensor:
        engine.forbid_pure_kernels()


_new = object.__new__


class Storage(engine.Var):
    """The tensor an engine var guards (``None`` until produced), and that var itself.

    A storage *is* its var (``storage.var`` is the storage): one object per
    array's data instead of two, which an array-heavy program (many small
    results kept) feels in allocation and in Python's garbage collector.
    ``shape``/``dtype``/``device`` are the tensor's, known at the call;
    ``strides`` are C-contiguous (ops always store contiguous tensors) unless a
    tensor was given (``from_torch``).
    """

    __slots__ = ("tensor", "lane", "shape", "dtype", "device", "_strides", "contiguous")
    remote = False  # a cluster node holds the data (``_remote.RemoteStorage``); no tensor here
    # Made in NumPy mode (``_dtypes``' note): ops on it follow NumPy's dtype defaults. A class attribute
    # (``NumpyStorage`` says True), so marking costs an array nothing: no slot to fill, one lookup to read.
    npmode = False
    # A compiled capture's alias of this array as a leaf (``_capture._leaves.kept_alias``): set in the
    # var's ``__dict__`` on the few arrays that are captured leaves, so a class-level default here.
    leaf: Any = None

    def __init__(
        self,
        shape: Shape,
        dtype: DType,
        device: Any,
        tensor: torch.Tensor | None = None,
        lane: str | None = "compute",
    ) -> None:
        engine.Var.__init__(self)
        self.tensor = tensor
        # The stream lane whose stream allocated the tensor (CUDA); None: not
        # autopar's (a user's tensor from from_torch), so every lane records its use.
        self.lane = lane
        self.shape = shape
        self.dtype = dtype
        self.device = device  # an autopar Device
        self._strides: Shape | None = None
        if tensor is not None:
            self._strides = tuple(tensor.stride())
            note_tensor(tensor)
        self.contiguous = tensor is None or tensor.is_contiguous()  # ops store contiguous tensors

    @classmethod
    def fresh(cls, shape: Shape, dtype: DType, device: Any) -> Storage:
        """``Storage(shape, dtype, device)`` -- a new result's storage, no tensor yet -- without the two
        ``__init__`` frames: every op makes one, and this is about 90 ns less. It sets the fields of
        ``Var.__init__`` and of ``__init__`` with the same values (a test compares them)."""
        s = _new(cls)
        s.id = next(_var_ids)
        s._name = None
        s.version = 0
        s.failure = None
        s._reading = 0
        s._writing = False
        s._queue = None
        s._writes_pushed = 0
        s.tensor = None
        s.lane = "compute"
        s.shape = shape
        s.dtype = dtype
        s.device = device
        s._strides = None
        s.contiguous = True
        return s

    @property
    def var(self) -> engine.Var:
        """The engine var that orders this storage's reads and writes: the storage itself."""
        return self

    @property
    def strides(self) -> Shape:
        s = self._strides
        if s is None:
            s = self._strides = c_strides(self.shape)
        return s

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def settle(self, t: torch.Tensor) -> None:
        """Take the shape of a tensor produced by a data-dependent op."""
        self.shape = tuple(t.shape)
        self._strides = tuple(t.stride())

    def base(self) -> torch.Tensor:
        """The tensor, allocated if it was never produced (an overwrite after a failure)."""
        t = self.tensor
        if t is None:
            t = self.tensor = torch.empty(self.shape, dtype=self.dtype.torch, device=self.device.torch_device)
        return t


class NumpyStorage(Storage):
    """A storage made in NumPy mode (``Storage.npmode``)."""

    __slots__ = ()
    npmode = True


def storage(shape: Shape, dtype: DType, device: Any, tensor: torch.Tensor | None = None,
            lane: str | None = "compute", npmode: bool | None = None) -> Storage:  # fmt: skip
    """A new storage, marked if made in NumPy mode (``npmode``; None: if this thread is in it)."""
    cls = NumpyStorage if (numpy_mode.on if npmode is None else npmode) else Storage
    return cls(shape, dtype, device, tensor, lane)


class View:
    """Elements ``offset + sum(i_k * strides[k])`` of a storage, for indices within ``shape``."""

    __slots__ = ("offset", "shape", "strides")

    def __init__(self, offset: int, shape: Shape, strides: Shape) -> None:
        self.offset = offset
        self.shape = shape
        self.strides = strides

    def __repr__(self) -> str:
        return f"View(offset={self.offset}, shape={self.shape}, strides={self.strides})"


def layout(storage: Storage, view: View | None) -> View:
    return view if view is not None else View(0, storage.shape, storage.strides)


def simplify(storage: Storage, view: View) -> View | None:
    """``None`` when ``view`` is exactly the whole storage."""
    if view.offset == 0 and view.shape == storage.shape and view.strides == storage.strides:
        return None
    return view


def covers(storage: Storage, view: View | None) -> bool:
    """True when writing through ``view`` writes every element of ``storage``."""
    if view is None:
        return True
    numel = storage.numel
    if numel == 0:
        return True
    return math.prod(view.shape) == numel and 0 not in view.strides


def _positive(base: torch.Tensor, view: View) -> tuple[torch.Tensor, list[int] | None]:
    """The view's elements with positive strides, and the dimensions to flip (None: none)."""
    offset = view.offset
    strides = view.strides
    flips = None
    if any(s < 0 for s in strides):
        flips = [i for i, s in enumerate(strides) if s < 0]
        for i in flips:
            offset += (view.shape[i] - 1) * strides[i]
        strides = tuple(abs(s) for s in strides)
    return base.as_strided(view.shape, strides, base.storage_offset() + offset), flips


def read(base: torch.Tensor, view: View | None) -> torch.Tensor:
    """The view's elements as a tensor (a torch view, or a flipped copy for negative strides)."""
    if view is None:
        return base
    t, flips = _positive(base, view)
    return _flip(t, flips) if flips else t


_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _flip(t: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """``t.flip(dims)``; torch has no flip for uint16/32/64, so those flip their bits as signed ints."""
    signed = _SIGNED.get(t.dtype)
    if signed is None:
        return t.flip(dims)
    return t.view(signed).flip(dims).view(t.dtype)


def write(base: torch.Tensor, view: View | None, value: torch.Tensor) -> None:
    """Copy ``value`` (broadcast to the view's shape) into the view's elements."""
    if value.dim() == 0 and value.device != base.device:  # a Python number (a 0-d CPU tensor) into a GPU
        # array: a fill, not a copy from host memory (which synchronizes the host with the GPU)
        (base if view is None else _positive(base, view)[0]).fill_(value.item())
        return
    if view is None:
        base.copy_(value)
        return
    target, flips = _positive(base, view)
    if flips:
        value = _flip(torch.broadcast_to(value, view.shape), flips)
    target.copy_(value)


def shares(t: torch.Tensor, base: torch.Tensor) -> bool:
    return t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


# -- views computed at the call (NumPy's arithmetic) -------------------------------------------


def index(op: str, v: View, key: tuple[Any, ...]) -> View:
    """The view of ``v`` selected by a basic index (ints, slices, None, Ellipsis)."""
    n_real = 0
    ellipses = 0
    for k in key:
        if k is Ellipsis:
            ellipses += 1
        elif k is not None:
            n_real += 1
    if ellipses > 1:
        raise IndexError(f"{op}: an index can have only one ellipsis ('...'); got {key!r}")
    if n_real > len(v.shape):
        raise IndexError(
            f"{op}: too many indices for an array of shape {v.shape}: {n_real} were given; "
            f"index at most {len(v.shape)} dimensions"
        )
    offset = v.offset
    shape: list[int] = []
    strides: list[int] = []
    dim = 0
    for k in key:
        if k is None:
            shape.append(1)
            strides.append(0)
        elif k is Ellipsis:
            span = len(v.shape) - n_real
            shape.extend(v.shape[dim : dim + span])
            strides.extend(v.strides[dim : dim + span])
            dim += span
        elif type(k) is slice:
            start, stop, step = k.indices(v.shape[dim])
            n = len(range(start, stop, step))
            if n:
                offset += start * v.strides[dim]
            shape.append(n)
            strides.append(v.strides[dim] * step)
            dim += 1
        else:
            size = v.shape[dim]
            if not -size <= k < size:
                raise IndexError(
                    f"{op}: index {k} is out of bounds for axis {dim} with size {size}; "
                    f"valid indices are {-size}..{size - 1}" if size else
                    f"{op}: index {k} is out of bounds for axis {dim} with size 0"
                )
            offset += (k % size) * v.strides[dim]
            dim += 1
    shape.extend(v.shape[dim:])
    strides.extend(v.strides[dim:])
    return View(offset, tuple(shape), tuple(strides))


def permute(v: View, perm: tuple[int, ...]) -> View:
    return View(v.offset, tuple(v.shape[i] for i in perm), tuple(v.strides[i] for i in perm))


def flip(v: View, axes: tuple[int, ...]) -> View:
    offset = v.offset
    strides = list(v.strides)
    for ax in axes:
        if v.shape[ax]:
            offset += (v.shape[ax] - 1) * strides[ax]
        strides[ax] = -strides[ax]
    return View(offset, v.shape, tuple(strides))


def reshape(v: View, new: Shape) -> View | None:
    """A view with shape ``new`` when ``v``'s elements are C-contiguous, else None (copy)."""
    if math.prod(v.shape) == 0:
        return View(0, new, c_strides(new))
    expected = c_strides(v.shape)
    for n, s, e in zip(v.shape, v.strides, expected):
        if n != 1 and s != e:
            return None
    return View(v.offset, new, c_strides(new))


def restride(v: View, shape: Shape, strides: Shape) -> View:
    return View(v.offset, shape, strides)
