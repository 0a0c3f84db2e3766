"""The eager interpreter: an op's results allocated here, its kernel pushed to this process's engine.

This is step 3 and 4 of the dispatcher (``_dispatch.py``'s note) for every
call the lean paths there do not take: any number of operands, views,
static parameters, several results, CUDA lanes, gradient recording. ``bind``
allocates the results (shape and dtype from the plan, no tensor yet) and
pushes one engine op that reads the inputs' tensors, casts them to the kernel
dtypes, calls the kernel and stores the results: in the common case (one
result, a host device, nothing recorded, no extra state) the module function
:func:`_run_one` pushed with its arguments -- no closure made per call, so a
queue of pending ops holds fewer objects for Python's collector to scan --
else a function made by :func:`_runner`. ``bind_into`` does the same
(:func:`_run_into` on a host device) and writes the value through the
target's view (``_views.write``). A recorded call (``_autograd.recording``)
runs its kernel on leaves that require grad and keeps the graph torch builds
for the gradient op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import torch

from autopar import engine
from autopar.arrays import _array, _autograd, _interpreters, _plan, _views
from autopar.arrays._array import NDArray
from autopar.arrays._plan import Plan
from autopar.arrays._table import OpDef
from autopar.arrays._views import Storage
from autopar.devices import Device

_SCALARS = (bool, int, float, complex)
_TENSOR = torch.Tensor
Shape = tuple[int, ...]


def push(
    fn: Callable[[], Any],
    reads: tuple[engine.Var, ...],
    writes: tuple[engine.Var, ...],
    device: Device,
    name: str,
    lane: str = "compute",
    inline: bool = False,
    one_thread: bool = False,
    bulk: bool = False,
) -> None:
    """The one call from the array layer into the engine.

    ``reads`` and ``writes`` may overlap (a var in both is read-write; one
    only in ``writes`` is an overwrite). ``inline``: a small trusted kernel,
    which the engine may run at once on the calling thread or bulk with the
    small ops pushed right after it (``engine/_bulk.py``); ``one_thread``:
    such a kernel large enough for torch to split across intra-op threads,
    which it runs on one instead (``Plan.one_thread``); ``bulk``: ``fn`` stores
    the outcome of each var it writes itself, and runs even when a read failed
    (a captured segment: ``engine.push_checked``).
    """
    if _interpreters.active:
        _interpreters.pushing(fn, reads, writes, device, name, lane)
    eng = engine._engine or engine.current_engine()
    if inline:
        eng.push_small(fn, (), reads, writes, device, name, lane, one_thread)
    else:
        eng.push_checked(fn, reads, writes, device, 0, name, lane, False, bulk)


def bind(entry: OpDef, p: Plan, args: Sequence[Any], static: dict[str, Any], dev: Device, reads: tuple[engine.Var, ...],
         lane: str, home: Device, state: tuple[engine.Var, ...], inline: bool | None, name: str | None) -> Any:  # fmt: skip
    """Steps 3 and 4 of ``_dispatch.bind`` on ``dev`` (a device of this process); results on ``home``."""
    cuda = dev.kind == "cuda"
    node = _autograd.recording(entry, args, static, p.out_dtypes, dev, lane, name or entry.name) if _autograd.used else None
    if node is None and not cuda and entry.nout == 1 and not state and not entry.data_dependent:
        return _bind_one(entry, p, args, static, dev, reads, lane, home, inline, name)
    make = _array.make
    if entry.nout == 1:
        shape, dtype = p.out_shapes[0], p.out_dtypes[0]
        result = make(shape, dtype, home, p.storage(shape, dtype, home))
        storage = result._storage
        storages = [storage]
        tdtype = storage.dtype.torch

        def store(value: Any, inputs: Sequence[Any]) -> None:
            _store_one(storage, tdtype, value, inputs)

        writes = (storage.var, *state) if state else (storage.var,)
        results: Any = result
    else:
        results = tuple([make(s, d, home, p.storage(s, d, home)) for s, d in zip(p.out_shapes, p.out_dtypes)])
        storages = [r._storage for r in results]

        def store(value: Any, inputs: Sequence[Any]) -> None:
            for s, v in zip(storages, value):
                if v.dtype is not s.dtype.torch:
                    v = v.to(s.dtype.torch)
                elif v._is_view() or _among(v, inputs):
                    v = v.clone(memory_format=torch.contiguous_format)
                if type(v) is not _TENSOR:
                    _views.note_tensor(v)
                v = v if v.is_contiguous() else v.contiguous()
                s.tensor = v if v.dtype is s.dtype.torch else _in_dtype(v, s.dtype.torch)  # (_in_dtype's note)

        writes = (*[s.var for s in storages], *state)
    if state:
        reads = (*reads, *state)
    if cuda:
        for s in storages:
            s.lane = lane
    if node is not None:
        _autograd.attach(node, results if type(results) is tuple else (results,), args)
    run = _runner(entry, args, p.kernel_dtypes, static, store, lane if cuda else None, None, dev, node)
    push(run, reads, writes, dev, name or entry.name, lane, (p.small and not cuda) if inline is None else inline,
         p.one_thread)
    if entry.data_dependent:
        engine.wait_for_var(storages[0].var)
        for r in results if type(results) is tuple else (results,):
            r._settle()
    return results



def _bind_one(entry: OpDef, p: Plan, args: Sequence[Any], static: dict[str, Any], dev: Device,
              reads: tuple[engine.Var, ...], lane: str, home: Device, inline: bool | None, name: str | None) -> Any:  # fmt: skip
    """``bind``'s common case -- one result, a host device, nothing recorded, no state: the engine op is
    :func:`_run_one` pushed with its arguments (no closures to make), the result's var as *fresh*."""
    result = _array.make(p.out_shapes[0], p.out_dtypes[0], home, npmode=p.npmode)  # marked as the plan says
    out = result._storage
    kds = p.kernel_dtypes
    fn_args = (entry.kernel, _prepare(entry, args, kds), kds, static, out, out.dtype.torch)
    eng = engine._engine or engine.current_engine()
    if p.small if inline is None else inline:
        eng.push_small(_run_one, fn_args, reads, (), dev, name or entry.name, lane, p.one_thread, None, (out,))
    else:
        eng.push_checked(partial(_run_one, *fn_args), reads, (out,), dev, 0, name or entry.name, lane, False)
    return result


def _run_one(kernel: Callable[..., Any], inputs: Sequence[Any], kernel_dtypes: tuple[torch.dtype, ...],
             static: dict[str, Any], out: Storage, out_t: torch.dtype) -> None:  # fmt: skip
    """The engine op of :func:`_bind_one`: read the inputs, cast, run the kernel, store."""
    tensors = _read(inputs, kernel_dtypes)
    _store_one(out, out_t, kernel(*tensors, **static), tensors)


def _prepare(entry: OpDef, args: Sequence[Any], kernel_dtypes: tuple[torch.dtype, ...]) -> Sequence[Any]:
    """The operands as :func:`_read` takes them: arrays as they are, numbers as the kernel takes them (a
    number after the first operand of a ``scalars`` kernel as is, else a 0-d CPU tensor; ``_runner``'s rule)."""
    ndarray = _array.NDArray
    for a in args:
        if type(a) is not ndarray:
            return [a if type(a) is ndarray else _Scalar(_number(a, kernel_dtypes[i])) if entry.scalars and i > 0 else
                    _Scalar(torch.tensor(a, dtype=kernel_dtypes[i])) for i, a in enumerate(args)]  # fmt: skip
    return args


def _number(a: Any, kd: torch.dtype) -> Any:
    """A number as a ``scalars`` kernel takes it: torch takes True next to a number tensor as a bool
    tensor (``x - True`` with x int8 fails), so a bool meets a non-bool kernel as an int."""
    return int(a) if type(a) is bool and kd is not torch.bool else a


def _read(inputs: Sequence[Any], kernel_dtypes: tuple[torch.dtype, ...]) -> list[Any]:
    """The kernel's inputs: each array's tensor (through its view) in its kernel dtype, numbers as prepared."""
    tensors: list[Any] = []
    for a, kd in zip(inputs, kernel_dtypes):
        if type(a) is _Scalar:
            tensors.append(a.value)
            continue
        t = _array.value_of(a)
        if t.dtype is not kd:
            t = t.to(kd)
        tensors.append(t)
    return tensors


def _store_one(storage: Storage, tdtype: torch.dtype, value: Any, inputs: Sequence[Any]) -> None:
    """Store a kernel's one result: in the result's dtype, contiguous, never an input or a view of one."""
    if value.dtype is not tdtype:
        value = value.to(tdtype)
    elif value._is_view() or _among(value, inputs):
        value = value.clone(memory_format=torch.contiguous_format)
    if not value.is_contiguous():
        value = value.contiguous()
    if value.dtype is not tdtype:
        value = _in_dtype(value, tdtype)
    if type(value) is not _TENSOR:  # a user function's tensor subclass
        _views.note_tensor(value)
    storage.tensor = value


def _in_dtype(value: Any, tdtype: torch.dtype) -> Any:
    """``value`` in ``tdtype``, contiguous, with no torch mode active: a mode active on this thread (the op
    ran now, on its caller's) may answer the steps of a store -- a cast, a contiguous copy -- in a dtype of
    its own, and a storage holds a tensor of its dtype."""
    with _plan.no_modes():
        return value.to(tdtype, memory_format=torch.contiguous_format)


def _among(value: torch.Tensor, inputs: Sequence[Any]) -> bool:
    for t in inputs:
        if value is t:
            return True
    return False




def bind_into(entry: OpDef, p: Plan, target: NDArray, args: Sequence[Any], static: dict[str, Any], op: str,
              dev: Device, lane: str, reads: tuple[engine.Var, ...]) -> NDArray:  # fmt: skip
    """Steps 3 and 4 of ``_dispatch.bind_into`` on ``dev`` (checked there)."""
    storage, view = target._storage, target._view
    tdtype = storage.dtype.torch
    if dev.kind != "cuda":  # the engine op: _run_into pushed with its arguments (no closures, as _bind_one)
        fn_args = (entry.kernel, _prepare(entry, args, p.kernel_dtypes), p.kernel_dtypes, static, storage, view,
                   tdtype)  # fmt: skip
        eng = engine._engine or engine.current_engine()
        if p.small:
            eng.push_small(_run_into, fn_args, reads, (storage,), dev, op, lane, p.one_thread)
        else:
            eng.push_checked(partial(_run_into, *fn_args), reads, (storage,), dev, 0, op, lane, False)
        return target

    def store(value: Any, inputs: Sequence[Any]) -> None:
        _store_into(storage, view, tdtype, value)

    run = _runner(entry, args, p.kernel_dtypes, static, store, lane, target, dev)
    push(run, reads, (storage.var,), dev, op, lane, False, p.one_thread)
    return target


def _run_into(kernel: Callable[..., Any], inputs: Sequence[Any], kernel_dtypes: tuple[torch.dtype, ...],
              static: dict[str, Any], storage: Storage, view: Any, tdtype: torch.dtype) -> None:  # fmt: skip
    """The engine op of :func:`bind_into` on a host device: read the inputs, cast, run, write through the view."""
    _store_into(storage, view, tdtype, kernel(*_read(inputs, kernel_dtypes), **static))


def _store_into(storage: Storage, view: Any, tdtype: torch.dtype, value: Any) -> None:
    """Write a kernel's result through ``view`` of ``storage``: in its dtype, never from memory it shares."""
    if type(value) is tuple:
        value = value[0]
    base = storage.base()
    if value.dtype is not tdtype:
        value = value.to(tdtype)
    elif _views.shares(value, base):
        value = value.clone()
    _views.write(base, view, value)


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
        if type(scalar) is bool and kernel_dtypes[1] is not torch.bool:
            scalar = int(scalar)  # torch's kernels take True next to a number tensor as a bool tensor
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
            prepared.append(_Scalar(_number(a, kd)))
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
        # No record_stream for inputs made on another stream: the op holds them until its event has
        # completed (the engine drops its function only then), which is what record_stream ensures --
        # and a free that records CUDA events aborts the process after a sticky error (devices/_cuda.py).
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


def _broadcasts_to(src: Shape, dst: Shape) -> bool:
    if len(src) > len(dst):
        return False
    return all(s == d or s == 1 for s, d in zip(src, dst[len(dst) - len(src) :]))


# The engine ops of the dispatcher's lean paths (``_dispatch.binary``, ``binary_into``): module functions
# pushed with their arguments (no closure to make). Each reads its storages' tensors (final: the engine ordered the op after
# their writers), casts where the plan says, and stores a fresh contiguous tensor or writes in place.


def _run_arrays(kernel: Any, a: Storage, kda: torch.dtype, b: Storage, kdb: torch.dtype, out: Storage,
                out_t: torch.dtype) -> None:  # fmt: skip
    x: Any = a.tensor
    if x.dtype is not kda:
        x = x.to(kda)
    y: Any = b.tensor
    if y.dtype is not kdb:
        y = y.to(kdb)
    r = kernel(x, y)
    out.tensor = r if r.dtype is out_t else r.to(out_t)


def _run_number(kernel: Any, a: Storage, kda: torch.dtype, number: Any, kdn: Any, out: Storage,
                out_t: torch.dtype) -> None:  # fmt: skip
    x: Any = a.tensor
    if x.dtype is not kda:
        x = x.to(kda)
    r = kernel(x, number)
    out.tensor = r if r.dtype is out_t else r.to(out_t)


def _run_number_first(kernel: Any, number: torch.Tensor, kdn: Any, b: Storage, kdb: torch.dtype, out: Storage,
                      out_t: torch.dtype) -> None:  # fmt: skip
    y: Any = b.tensor
    if y.dtype is not kdb:
        y = y.to(kdb)
    r = kernel(number, y)
    out.tensor = r if r.dtype is out_t else r.to(out_t)


def _run_exact(kernel: Any, a: Storage, b: Storage, out: Storage) -> None:
    out.tensor = kernel(a.tensor, b.tensor)


def _run_exact_number(kernel: Any, a: Storage, number: Any, out: Storage) -> None:
    out.tensor = kernel(a.tensor, number)


def _run_exact_number_first(kernel: Any, number: torch.Tensor, b: Storage, out: Storage) -> None:
    out.tensor = kernel(number, b.tensor)


def run_unary(kernel: Any, a: Storage, kda: torch.dtype, out: Storage, out_t: torch.dtype) -> None:
    x: Any = a.tensor
    if x.dtype is not kda:
        x = x.to(kda)
    r = kernel(x)
    out.tensor = r if r.dtype is out_t else r.to(out_t)


def run_exact_unary(kernel: Any, a: Storage, out: Storage) -> None:
    out.tensor = kernel(a.tensor)


def run_noting(fn: Callable[..., None], out: Storage, *args: Any) -> None:
    """A lean runner ``fn(*args)`` pushed while a torch mode was active. The mode may have answered a tensor
    subclass, whose Python code then runs in every later kernel of ``out`` -- noted, so none runs under the
    engine lock (``_views.note_tensor``) -- or a tensor in another dtype or layout than the plan made without
    it says: stored as :func:`_store_one` stores one (the storage's dtype, contiguous)."""
    fn(*args)
    value: Any = out.tensor
    if value.dtype is not out.dtype.torch or not value.is_contiguous():
        value = _in_dtype(value, out.dtype.torch)
    if type(value) is not _TENSOR:
        _views.note_tensor(value)
    out.tensor = value


# Per lean kind: the runner when no cast is needed (Plan.exact), and the one that casts.
RUN_ARRAYS = (_run_exact, _run_arrays)
RUN_NUMBER = (_run_exact_number, _run_number)
RUN_NUMBER_FIRST = (_run_exact_number_first, _run_number_first)


def run_into_array(inplace: Any, target: Storage, b: Storage, kdb: torch.dtype) -> None:
    y: Any = b.tensor
    if y.dtype is not kdb:
        y = y.to(kdb)
    inplace(target.tensor, y)


def run_into_exact(inplace: Any, target: Storage, b: Storage) -> None:
    inplace(target.tensor, b.tensor)


def run_into_number(inplace: Any, target: Storage, number: Any) -> None:
    inplace(target.tensor, number)
