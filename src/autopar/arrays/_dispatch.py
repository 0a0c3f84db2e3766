"""The one dispatcher: every array op from call to push.

Design note
-----------
Every operation of the array layer -- ``x + 1``, ``sum``, ``linalg.solve``,
``x[0] = 5``, a copy to another device, a random draw -- goes through
:func:`bind` (a new result) or :func:`bind_into` (a write into an existing
array), and those go through the same four steps:

1. **validate**: operands are arrays or Python numbers, on one device
   (``DeviceError`` otherwise); Python numbers take the dtype of the arrays
   next to them and an int must fit it (``OverflowError``, at the call).
2. **infer**: the entry's dtype rule gives the result dtypes and the dtype
   each input reaches the kernel in; its shape rule -- or torch meta tensors
   (``_infer``) -- gives the result shapes; its work rule says whether the
   op is small enough to run on the calling thread. The answers form a
   :class:`Plan`, cached per (op, input dtypes and shapes, kinds of Python
   numbers, static parameters): a repeated call costs one dict lookup here.
   Every error a shape or dtype can reveal is raised in this step, naming
   the op.
3. **allocate**: result arrays with new storages (no tensor yet), whose
   shape and dtype are known at once.
4. **push**: one function that reads the inputs' tensors, casts them to the
   computation dtypes, calls the kernel, casts the result to the inferred
   dtype and stores it (a closure; for ``x + 1`` and ``x + y``, a module
   function bound with ``functools.partial``, which is cheaper to make),
   pushed by :func:`push` -- the only place the array
   layer calls the engine. It reads the inputs' vars and writes the results'
   (and any extra var, like a random generator's). An op whose work is at
   most ``TINY_WORK`` may run on the calling thread when it is ready and its
   lane idle (``inline``); CUDA ops never do. On a cluster node's device
   (``node1/cpu:0``) step 4 sends the op there instead: another push
   target, registered by the cluster layer (``_interpreters.remote``),
   the same four steps.

Writes into an existing array (in-place operators, ``x[k] = v``,
``copyto(x)``) compute the out-of-place result first and copy it through
the target's view (``_views.write``), so overlapping operands (``m += m.T``,
``y[1:] = y[:-1]``) give NumPy's answer. A write that covers its whole
storage is an *overwrite*: its var is written but not read, so the op runs
even if the target had failed (SPEC §4.2); a partial write reads the target.

Ops whose result shape depends on data (``OpDef.data_dependent``) are
pushed like any other, then waited for, and the shape is read from the
result (SPEC §2): such calls block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from autopar import engine
from autopar.arrays import _array, _autograd, _dtypes, _interpreters, _views
from autopar.arrays._plan import TINY_WORK, plan
from autopar.arrays._dtypes import DType
from autopar.arrays._table import OpDef
from autopar.devices import Device, cpu
from autopar.errors import DeviceError

if TYPE_CHECKING:
    from autopar.arrays._array import NDArray

_EMPTY: dict[str, Any] = {}
_SCALARS = (bool, int, float, complex)
Shape = tuple[int, ...]


def push(
    fn: Callable[[], Any],
    reads: tuple[engine.Var, ...],
    writes: tuple[engine.Var, ...],
    device: Device,
    name: str,
    lane: str = "compute",
    inline: bool = False,
) -> None:
    """The one call from the array layer into the engine.

    ``reads`` and ``writes`` may overlap (a var in both is read-write; one
    only in ``writes`` is an overwrite); ``inline`` lets a ready op run on
    the calling thread when its lane is idle.
    """
    eng = engine._engine or engine.current_engine()
    eng.push_checked(fn, reads, writes, device, 0, name, lane, inline)


def same_device(op: str, arrays: Sequence[NDArray]) -> Device:
    device = arrays[0].device
    for other in arrays[1:]:
        if other.device is not device and other.device != device:
            raise DeviceError(
                f"{op}: operands are on different devices, {device} and {other.device}; "
                f"move one first, e.g. x.to({device!s:s}) or x.copyto(autopar.Device('{device}'))"
            )
    return device


def shape_of(entry: OpDef, args: Sequence[Any], static: dict[str, Any] = _EMPTY) -> Shape:
    """The shape ``bind`` would give, without pushing anything."""
    return plan(entry, args, static).out_shapes[0]


def bind(
    entry: OpDef,
    args: Sequence[Any],
    static: dict[str, Any] = _EMPTY,
    *,
    device: Device | None = None,
    lane: str = "compute",
    out_device: Device | None = None,
    state: tuple[engine.Var, ...] = (),
    inline: bool | None = None,
    name: str | None = None,
) -> Any:
    """Run ``entry`` on ``args`` (arrays and Python numbers): validate, infer, allocate, push.

    Returns the result array, or a tuple of them for ops with several results.
    ``device`` places an op without array operands (creation, random draws),
    or names the device whose ``lane`` runs a copy; ``out_device`` is where the
    results live (default: where the op runs). ``state`` are vars the op reads
    and updates besides its operands (a random generator's).
    """
    p = plan(entry, args, static)
    if p.array_and_number and device is None and out_device is None and not state and inline is None:
        first, second = args
        if first._view is None and first._storage.contiguous and first.device.kind != "cuda" and first.device.node is None and (
            type(second) is not _array.NDArray
            or second._view is None and second._storage.contiguous and second.device is first.device
        ) and (not _autograd.used or first._ag is None and getattr(second, "_ag", None) is None):
            return _array_and_number(entry, p, first, second, name)
    idx = p.arrays
    if len(idx) == 1:
        first = args[idx[0]]
        dev = first.device
        reads: tuple[engine.Var, ...] = (first._storage.var,)
    elif idx:
        arrays = [args[i] for i in idx]
        dev = same_device(entry.name, arrays)
        reads = tuple([a._storage.var for a in arrays])
    else:
        dev = cpu(0)
        reads = ()
    if device is not None:
        dev = device
    home = dev if out_device is None else out_device
    if dev.node is not None:  # a cluster node's device: the same op, sent there (_interpreters.remote)
        return _interpreters.remote.bind(entry, p, args, static, dev, lane, state, name or entry.name)
    cuda = dev.kind == "cuda"
    make = _array.make
    if entry.nout == 1:
        result = make(p.out_shapes[0], p.out_dtypes[0], home)
        storage = result._storage
        storages = [storage]
        tdtype = storage.dtype.torch

        def store(value: Any, inputs: Sequence[Any]) -> None:
            if value.dtype is not tdtype:
                value = value.to(tdtype)
            elif value._is_view() or _among(value, inputs):
                value = value.clone(memory_format=torch.contiguous_format)
            if not value.is_contiguous():
                value = value.contiguous()
            storage.tensor = value

        writes = (storage.var, *state) if state else (storage.var,)
        results: Any = result
    else:
        results = tuple([make(s, d, home) for s, d in zip(p.out_shapes, p.out_dtypes)])
        storages = [r._storage for r in results]

        def store(value: Any, inputs: Sequence[Any]) -> None:
            for s, v in zip(storages, value):
                if v.dtype is not s.dtype.torch:
                    v = v.to(s.dtype.torch)
                elif v._is_view() or _among(v, inputs):
                    v = v.clone(memory_format=torch.contiguous_format)
                s.tensor = v if v.is_contiguous() else v.contiguous()

        writes = (*[s.var for s in storages], *state)
    if state:
        reads = (*reads, *state)
    if cuda:
        for s in storages:
            s.lane = lane
    node = _autograd.recording(entry, args, static, p.out_dtypes, dev, lane, name or entry.name) if _autograd.used else None
    if node is not None:
        _autograd.attach(node, results if type(results) is tuple else (results,), args)
    run = _runner(entry, args, p.kernel_dtypes, static, store, lane if cuda else None, None, dev, node)
    push(run, reads, writes, dev, name or entry.name, lane, (p.small and not cuda) if inline is None else inline)
    if entry.data_dependent:
        engine.wait_for_var(storages[0].var)
        for r in results if type(results) is tuple else (results,):
            r._settle()
    return results


def _array_and_number(entry: OpDef, p: Any, first: NDArray, second: Any, name: str | None) -> NDArray:
    """``bind`` for the hottest cases, ``x + 1`` and ``x + y`` on whole, contiguous CPU arrays.

    The same four steps with nothing to decide: an elementwise kernel that
    takes a Python number (``OpDef.scalars``) returns a fresh contiguous
    tensor for contiguous inputs, stored as it is. A number given again (the
    same object) reaches a torch kernel as the plan's 0-d tensor of it
    (``_plan``'s note: the same result, half torch's cost).
    """
    result = _array.make(p.out_shapes[0], p.out_dtypes[0], first.device)
    source, out = first._storage, result._storage
    reads: tuple[engine.Var, ...]
    if type(second) is _array.NDArray:
        other, kd2, reads = second._storage, p.kernel_dtypes[1], (source.var, second._storage.var)
    else:
        other, kd2, reads = p.kernel_number(second) if p.numbers_as_tensors else second, None, (source.var,)
    run = partial(_run_binary, entry.kernel, source, p.kernel_dtypes[0], other, kd2, out, out.dtype.torch)
    push(run, reads, (out.var,), first.device, name or entry.name, "compute", p.small)
    return result


def _run_binary(kernel: Any, source: _views.Storage, kd: torch.dtype, other: Any, kd2: torch.dtype | None,
                out: _views.Storage, out_t: torch.dtype) -> None:  # fmt: skip
    """The engine op of ``_array_and_number`` (``other``: a storage read in ``kd2``, or a number), bound
    with ``functools.partial``: one object to make, where a closure over these values is seven."""
    t: Any = source.tensor
    if t.dtype is not kd:
        t = t.to(kd)
    if kd2 is not None:
        other = other.tensor
        if other.dtype is not kd2:
            other = other.to(kd2)
    r = kernel(t, other)
    out.tensor = r if r.dtype is out_t else r.to(out_t)


def _among(value: torch.Tensor, inputs: Sequence[Any]) -> bool:
    for t in inputs:
        if value is t:
            return True
    return False


def bind_into(
    entry: OpDef,
    target: NDArray,
    args: Sequence[Any],
    static: dict[str, Any] = _EMPTY,
    *,
    what: str | None = None,
    casting: str = "same_kind",
    device: Device | None = None,
    lane: str = "compute",
) -> NDArray:
    """Compute ``entry`` on ``args`` and write the result through ``target``'s view.

    The result must broadcast to ``target``'s shape and cast to its dtype by
    NumPy's same-kind rule (``casting="unsafe"``: any cast, as assignment does).
    Python numbers take ``target``'s dtype. Returns ``target``.
    """
    op = what or entry.name
    p = plan(entry, args, static, target._dtype)
    arrays = [a for a in args if type(a) is _array.NDArray]
    if _autograd.used:
        _autograd.check_inplace(op, target, arrays)
    if device is None:
        dev = same_device(op, [target, *arrays])
    else:
        dev = device
    if not _broadcasts_to(p.out_shapes[0], target.shape):
        raise ValueError(f"{op}: a value of shape {p.out_shapes[0]} cannot be broadcast to the target's shape {target.shape}")
    if casting == "same_kind" and not _dtypes.can_cast_same_kind(p.out_dtypes[0], target._dtype):
        raise TypeError(
            f"{op}: cannot store a {p.out_dtypes[0].name} result in a {target._dtype.name} array "
            f"(NumPy's same_kind rule); assign to a new name instead (x = x + y), or cast with astype"
        )
    storage, view = target._storage, target._view
    tdtype = storage.dtype.torch

    def store(value: Any, inputs: Sequence[Any]) -> None:
        if type(value) is tuple:
            value = value[0]
        base = storage.base()
        if value.dtype is not tdtype:
            value = value.to(tdtype)
        elif _views.shares(value, base):
            value = value.clone()
        _views.write(base, view, value)

    cuda = dev.kind == "cuda"
    run = _runner(entry, args, p.kernel_dtypes, static, store, lane if cuda else None, target, dev)
    reads_target = any(a._storage is storage for a in arrays)
    overwrite = not reads_target and _views.covers(storage, view)
    reads = tuple(a._storage.var for a in arrays) + (() if overwrite or reads_target else (storage.var,))
    if dev.node is not None:
        return _interpreters.remote.bind_into(entry, target, args, static, op, casting, dev, lane, reads)
    push(run, reads, (storage.var,), dev, op, lane, p.small and not cuda)
    return target


def _runner(
    entry: OpDef,
    args: Sequence[Any],
    kernel_dtypes: tuple[torch.dtype, ...],
    static: dict[str, Any],
    store: Callable[[Any, Sequence[Any]], None],
    cuda_lane: str | None,
    target: NDArray | None = None,
    device: Device | None = None,
    node: _autograd.Node | None = None,
) -> Callable[[], None]:
    """The engine op: read the inputs, cast, run the kernel, store."""
    kernel = entry.kernel
    NDArray = _array.NDArray
    value_of = _array.value_of
    if len(args) == 2 and type(args[0]) is NDArray and type(args[1]) in _SCALARS and entry.scalars and not cuda_lane \
            and node is None:
        a, scalar = args
        kd = kernel_dtypes[0]
        storage, view = a._storage, a._view

        def run_scalar() -> None:  # the hot case, x + 1: no loop, no list
            t = storage.tensor if view is None else value_of(a)
            if t.dtype is not kd:
                t = t.to(kd)
            store(kernel(t, scalar, **static), (t,))

        return run_scalar
    prepared: list[Any] = []
    for i, (a, kd) in enumerate(zip(args, kernel_dtypes)):
        if type(a) is NDArray:
            prepared.append(a)
        elif entry.scalars and i > 0:
            prepared.append(_Scalar(a))
        else:  # a 0-d CPU tensor: torch mixes it with CUDA tensors without a sync
            prepared.append(_Scalar(torch.tensor(a, dtype=kd)))

    def inputs(leaves: list[torch.Tensor] | None = None, differentiable: frozenset[int] = frozenset()) -> list[Any]:
        """The kernel's inputs, cast; those at ``differentiable`` positions as leaves that require grad."""
        tensors = []
        for i, (a, kd) in enumerate(zip(prepared, kernel_dtypes)):
            if type(a) is _Scalar:
                tensors.append(a.value)
                continue
            t = value_of(a)
            if leaves is not None and i in differentiable:
                t = t.detach().requires_grad_()
                leaves.append(t)
            if t.dtype is not kd:
                t = t.to(kd)
            tensors.append(t)
        if cuda_lane is not None and device is not None:
            _record_streams(prepared, device, cuda_lane, target)
        return tensors

    if node is None:

        def run() -> None:
            tensors = inputs()
            store(kernel(*tensors, **static), tensors)

        return run
    # A recorded call (_autograd.py): the kernel runs on leaves that require grad, and the graph torch
    # builds from them to the results is kept for the gradient -- unless the entry has its own vjp.
    graph = entry.vjp is None
    differentiable = frozenset(node.positions) if graph else frozenset()

    def run_recorded() -> None:
        leaves: list[torch.Tensor] = []
        with torch.set_grad_enabled(graph):
            tensors = inputs(leaves, differentiable)
            store(kernel(*tensors, **static), tensors)
        _autograd.capture(node, leaves if graph else tensors)

    return run_recorded


class _Scalar:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _record_streams(prepared: Sequence[Any], device: Device, lane: str, target: NDArray | None) -> None:
    """Tell torch's caching allocator that this op's stream uses memory allocated on another.

    A storage's memory belongs to the stream of the (device, lane) that made
    it -- or to a user's stream (``from_torch``: lane None). Without
    ``record_stream``, memory freed there could be reused while this stream
    still reads it (PyTorch CUDA semantics). Keyed on the device *and* the
    lane: a copy from ``cuda:0``'s compute lane on ``cuda:1``'s compute lane
    uses memory of another stream although the lane names agree.
    """
    stream = torch.cuda.current_stream(device.torch_device)
    for a in (*prepared, *(() if target is None else (target,))):
        if type(a) is _Scalar:
            continue
        storage = a._storage
        if (storage.lane != lane or storage.device != device) and storage.tensor is not None and storage.tensor.is_cuda:
            storage.tensor.record_stream(stream)


def _broadcasts_to(src: Shape, dst: Shape) -> bool:
    if len(src) > len(dst):
        return False
    return all(s == d or s == 1 for s, d in zip(src, dst[len(dst) - len(src) :]))

