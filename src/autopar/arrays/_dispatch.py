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
   op is small. The answers form a :class:`~autopar.arrays._plan.Plan`,
   cached per (op, input dtypes and shapes, kinds of Python numbers, static
   parameters): a repeated call costs one dict lookup here (the *plan
   cache*, ``_plan.py``). Every error a shape or dtype can reveal is raised
   in this step, naming the op.
3. **allocate**: result arrays with new storages (no tensor yet), whose
   shape and dtype are known at once.
4. **push**: one function that reads the inputs' tensors, casts them to the
   computation dtypes, calls the kernel and stores the result, pushed by
   ``push`` -- the only place the array layer calls the engine -- reading
   the inputs' vars and writing the results' (and any extra var, like a
   random generator's). A *small* op (work at most ``TINY_WORK``, not on
   CUDA) goes to the engine's ``push_small``: it runs at once on the calling
   thread when it can, else it is bulked with the small ops pushed right
   after it (``engine/_bulk.py``).

Interpreters
~~~~~~~~~~~~
Steps 1 and 2 are everyone's; steps 3 and 4 belong to an *interpreter*
(JAX's ``bind`` and its stack of traces). After planning, ``bind`` hands
the call to the first of:

- **an interpreter active on this thread** (``_interpreters.current()``;
  none by default): the slot of a tracing interpreter such as a capture.
  It receives the entry, the plan, the operands and the static parameters
  (and ``bind``'s placement options; for ``bind_into`` the target, the op's
  name and casting rule) *before* anything is allocated or pushed, and
  returns the results. It may record the call and run it below itself with
  :func:`eager_bind` / :func:`eager_bind_into`, which take the plan and
  skip the interpreter lookup. What the op reads and writes is its operands'
  and results' storage vars (``a._storage.var``), plus ``state``.
- **the remote interpreter**, for a device of a cluster node (chosen by the
  device, ``_interpreters.remote``, registered by the cluster layer): the
  same plan, the op sent to the node.
- **the eager interpreter**: this process's engine. Its *lean paths* (below)
  first, else ``_eager.bind`` / ``_eager.bind_into``, which handle every
  case. Gradient recording is part of eager execution: a recorded call
  (``_autograd.recording``) runs its kernel on leaves and keeps torch's graph
  (``_eager._runner``); the lean paths never see a call that might record.

Lean paths
~~~~~~~~~~
The operators' hot cases -- ``x + y``, ``x + 1``, ``1 - x``, ``x += y``,
``x += 1`` with elementwise kernels that take a Python number (``scalars``)
-- on whole, contiguous arrays of one host device, with no array that
requires grad, take :func:`binary` / :func:`binary_into`: the plan cache's
lookup inlined, then what the plan already decided -- which case it is
(``Plan.lean``), whether the kernel needs casts (``Plan.exact``, asked of
torch's meta kernel once), torch's in-place method (``Plan.inplace``) --
and an engine op that is a module function of ``_eager`` pushed with its
arguments, no closure. A small one goes to ``push_small`` with its result's
var as *fresh* (no one else has it yet, so it is neither checked nor held),
and as *pure* when its work is at most ``THREADED_WORK`` (a few microseconds of
kernel) and no torch mode is active: run now, it runs under the engine lock
(``engine/_bulk.py``), unless a tensor subclass has entered autopar
(``_views.note_tensor``). A mode may answer a subclass: while one is active,
the runner is wrapped in ``_eager.run_noting``, which notes the stored result.
A number given again (the same object) reaches a torch kernel as the plan's
0-d tensor of it, made in the kernel's dtype (``_plan``'s note); one given
first (``1 - x``) always does. An in-place operator whose result has the
target's dtype and shape runs torch's in-place kernel on the target instead
of a result and a copy: the target and the other operand are both whole
storages, so they share memory only when they are the same storage, which
torch's elementwise kernels allow -- except two storages that wrap outside
memory (``from_torch``, ``asarray(copy=False)``), which take the general
path. The path of ``x + 1`` visits each file once: ``_operators`` (the
operator), here, ``_array`` and ``_views`` (the result), ``engine/_bulk``
(run now), ``_eager`` (the kernel).

Writes into an existing array (in-place operators, ``x[k] = v``,
``copyto(x)``) otherwise compute the out-of-place result first and copy it
through the target's view (``_views.write``), so overlapping operands (``m +=
m.T``, ``y[1:] = y[:-1]``) give NumPy's answer. A write that covers its whole
storage is an *overwrite*: its var is written but not read, so the op runs
even if the target had failed (contract, failures rule 2); a partial write reads the target.

Ops whose result shape depends on data (``OpDef.data_dependent``) are
pushed like any other, then waited for, and the shape is read from the
result (the contract on arrays): such calls block.

For a capture interpreter
~~~~~~~~~~~~~~~~~~~~~~~~~
What a tracing interpreter (``autopar.capture``) builds on:

- **Where a call is intercepted**: ``Interpreter.bind(entry, plan, args,
  static, device=, lane=, out_device=, state=, inline=, name=)`` and
  ``Interpreter.bind_into(entry, plan, target, args, static, what=, casting=,
  device=, lane=)``, entered inside ``_interpreters.interpreting(it)``. The
  operators reach it too (``binary``/``binary_into`` look for an active
  interpreter first). ``entry.kernel(*tensors, **static)`` is the pure
  function to record; ``plan.kernel_dtypes`` the dtypes its inputs must be
  cast to, ``plan.out_dtypes``/``plan.out_shapes`` its results'. The
  results are the arrays ``eager_bind`` returns (or new ones made with
  ``_array.make``); an op *reads* the storage vars of its array operands
  (``a._storage.var``) plus ``state``, and *writes* its results' vars plus
  ``state``; ``bind_into`` reads the target too unless the write covers its
  whole storage (``_views.covers``), and writes the target's var. Reading a
  value (``_array.NDArray._ready_tensor``, ``item``, ``float(x)``) goes
  through ``engine.wait_for_var``, not ``bind``: the place to raise a
  trace-time error is there.
- **One engine op standing for many kernels**: push one function with the
  union of what the kernels read (minus what they produce first) and write,
  through ``_eager.push(fn, reads, writes, device, name, lane)``; a failure
  inside it fails every var it writes (the contract's failure rules), which is what a captured op
  promises. ``engine/_bulk.py``'s segments do this for small eager ops but
  keep each member's own outcome (their callers were promised step-by-step
  failures); a capture has no such promise and needs none of that.
- **The plan cache**: ``_plan.plan(entry, args, static, like)`` -- a dict
  keyed by (entry, the arrays' dtypes and shapes, the kinds of the numbers,
  static), bounded by ``MAX_PLANS`` -- holds everything a signature decides;
  a trace may keep the plans it met instead of looking them up again.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import torch

from autopar import engine
from autopar.arrays import _autograd, _dtypes, _eager, _interpreters, _views
from autopar.arrays._array import NDArray, make
from autopar.arrays._eager import push  # noqa: F401  (re-exported: the one call into the engine)
from autopar.arrays._plan import ARRAY_NUMBER, ARRAYS, NUMBER_ARRAY, TINY_WORK, UNARY, Plan, _plans, plan
from autopar.arrays._table import OpDef
from autopar.devices import Device, cpu
from autopar.errors import DeviceError

__all__ = ["TINY_WORK", "binary", "binary_into", "bind", "bind_into", "eager_bind", "eager_bind_into", "push",
           "same_device", "shape_of"]

_EMPTY: dict[str, Any] = {}
_numpy_mode = _dtypes.numpy_mode
Shape = tuple[int, ...]
# A lean op is *pure* (engine/_bulk.py: run now, it may run under the engine lock) when its kernel takes a
# few microseconds (work at most THREADED_WORK, not one_thread) and no torch mode is active on this thread:
# a mode runs Python code inside every kernel.
_function_mode = torch._C._is_torch_function_mode_enabled
_dispatch_modes = torch._C._len_torch_dispatch_stack


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
    and updates besides its operands (a random generator's). ``inline=False``
    keeps a small op off the calling thread (user functions).
    """
    p = plan(entry, args, static)
    if _interpreters.active:
        tracer = _interpreters.current()
        if tracer is not None:
            return tracer.bind(entry, p, args, static, device=device, lane=lane, out_device=out_device, state=state,
                               inline=inline, name=name)  # fmt: skip
    if p.lean and device is None and out_device is None and not state and inline is None:
        return unary(entry, args[0], name, p) if p.lean == UNARY else binary(entry, args[0], args[1], name, p)
    return eager_bind(entry, p, args, static, device, lane, out_device, state, inline, name)


def eager_bind(entry: OpDef, p: Plan, args: Sequence[Any], static: dict[str, Any], device: Device | None = None,
               lane: str = "compute", out_device: Device | None = None, state: tuple[engine.Var, ...] = (),
               inline: bool | None = None, name: str | None = None) -> Any:  # fmt: skip
    """``bind`` below the interpreters of this thread: a node's device to the remote one, else ``_eager``."""
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
    if dev.node is not None:  # a cluster node's device: the same op, sent there
        return _interpreters.remote.bind(entry, p, args, static, dev, lane, state, name or entry.name)
    home = dev if out_device is None else out_device
    return _eager.bind(entry, p, args, static, dev, reads, lane, home, state, inline, name)


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
    # Python numbers take the target's dtype -- which they take anyway when the target is the first operand.
    first = args[0] if args else None
    p = plan(entry, args, static, None if first is target else target._dtype)
    if _interpreters.active:
        tracer = _interpreters.current()
        if tracer is not None:
            return tracer.bind_into(entry, p, target, args, static, what=op, casting=casting, device=device, lane=lane)
    if p.inplace and first is target and device is None and casting == "same_kind":
        return binary_into(entry, target, args[1], op, p)
    return eager_bind_into(entry, p, target, args, static, op, casting, device, lane)


def eager_bind_into(entry: OpDef, p: Plan, target: NDArray, args: Sequence[Any], static: dict[str, Any], op: str,
                    casting: str = "same_kind", device: Device | None = None, lane: str = "compute") -> NDArray:  # fmt: skip
    """``bind_into`` below the interpreters of this thread: validate against the target, then push."""
    arrays = [a for a in args if type(a) is NDArray]
    if _autograd.used:
        _autograd.check_inplace(op, target, arrays)
    dev = same_device(op, [target, *arrays]) if device is None else device
    if p.out_shapes[0] != target._shape and not _eager._broadcasts_to(p.out_shapes[0], target._shape):
        raise ValueError(f"{op}: a value of shape {p.out_shapes[0]} cannot be broadcast to the target's shape {target.shape}")
    if casting == "same_kind" and not _dtypes.can_cast_same_kind(p.out_dtypes[0], target._dtype):
        raise TypeError(
            f"{op}: cannot store a {p.out_dtypes[0].name} result in a {target._dtype.name} array "
            f"(NumPy's same_kind rule); assign to a new name instead (x = x + y), or cast with astype"
        )
    storage = target._storage
    reads_target = False
    for a in arrays:
        if a._storage is storage:
            reads_target = True
    overwrite = not reads_target and _views.covers(storage, target._view)
    reads = tuple(a._storage.var for a in arrays) + (() if overwrite or reads_target else (storage.var,))
    if dev.node is not None:
        return _interpreters.remote.bind_into(entry, target, args, static, op, casting, dev, lane, reads)
    return _eager.bind_into(entry, p, target, args, static, op, dev, lane, reads)


# -- the lean paths (module note) -------------------------------------------------------------


def binary(entry: OpDef, a: Any, b: Any, name: str | None = None, p: Plan | None = None) -> Any:
    """``bind(entry, (a, b))`` -- what the operators call, ``a`` or ``b`` an array and the other an array or a
    Python number -- with the lean paths (module note) and the plan cache's lookup inlined: the same steps,
    the same result. ``bind`` comes here with its plan ``p`` when the plan says a lean path may apply."""
    if p is None:
        if _interpreters.active:
            return bind(entry, (a, b))
        ta, tb = type(a), type(b)
        if ta is NDArray:
            if tb is NDArray:
                key: Any = (entry, a._dtype, a._shape, b._dtype, b._shape, True) \
                    if _numpy_mode.on or a._storage.npmode or b._storage.npmode else \
                    (entry, a._dtype, a._shape, b._dtype, b._shape)
            else:
                key = (entry, a._dtype, a._shape, tb, True) if _numpy_mode.on or a._storage.npmode else \
                    (entry, a._dtype, a._shape, tb)
        else:
            key = (entry, ta, b._dtype, b._shape, True) if _numpy_mode.on or b._storage.npmode else \
                (entry, ta, b._dtype, b._shape)
        p = _plans.get(key)
        if p is None or not p.lean or p.int_scalars:
            return bind(entry, (a, b))
    kind = p.lean
    arr = b if kind == NUMBER_ARRAY else a
    source = arr._storage
    device = arr.device
    if arr._view is not None or not source.contiguous or device.kind == "cuda" or device.node is not None or \
            _autograd.used and (a._ag if kind == ARRAYS else arr._ag) is not None:
        return eager_bind(entry, p, (a, b), _EMPTY, name=name)
    first: Any = source
    if kind == ARRAYS:  # x + y
        second: Any = b._storage
        if b._view is not None or not second.contiguous or b.device is not device or _autograd.used and b._ag is not None:
            return eager_bind(entry, p, (a, b), _EMPTY, name=name)
        reads: tuple[engine.Var, ...] = (source, second)
        runners: tuple[Any, Any] = _eager.RUN_ARRAYS
    elif kind == ARRAY_NUMBER:  # x + 1
        second = b
        if p.numbers_as_tensors:
            seen = p.number  # the plan's 0-d tensor of this very number, if it has one (_plan's note)
            second = seen[1] if seen is not None and seen[0] is b and seen[1] is not None else p.kernel_number(b)
        reads = (source,)
        runners = _eager.RUN_NUMBER
    else:  # 1 - x: torch's kernels take no number first, so it is a 0-d tensor
        seen = p.number  # (a number, its tensor): only ever a tensor in a NUMBER_ARRAY plan
        first = seen[1] if seen is not None and seen[0] is a else p.number_tensor(a)
        if first is None:
            return eager_bind(entry, p, (a, b), _EMPTY, name=name)
        second = source
        reads = (source,)
        runners = _eager.RUN_NUMBER_FIRST
    shape, dtype = p.out_shapes[0], p.out_dtypes[0]
    out = p.storage(shape, dtype, device)  # Storage, or NumpyStorage in NumPy mode
    result = make(shape, dtype, device, out)
    fn: Any
    args: tuple[Any, ...]
    if p.exact:
        fn, args = runners[0], (entry.kernel, first, second, out)
    else:
        kd = p.kernel_dtypes
        fn, args = runners[1], (entry.kernel, first, kd[0], second, kd[1], out, out.dtype.torch)
    moded = _function_mode() or _dispatch_modes()
    if moded:  # a mode may answer a tensor subclass: noted once stored (the module note)
        fn, args = _eager.run_noting, (fn, out, *args)
    if p.small:  # engine/_bulk.py: run now, or bulked with the small ops after it; the result's var is fresh
        pure = not p.one_thread and not moded  # the module note
        (engine._engine or engine.current_engine()).push_small(fn, args, reads, (), device, name or entry.name,
                                                               "compute", p.one_thread, (), (out,), pure)  # fmt: skip
    else:
        _push_op(fn, args, reads, (out,), device, name or entry.name)
    return result


def unary(entry: OpDef, a: NDArray, name: str | None, p: Plan) -> Any:
    """``bind(entry, (a,))`` for torch's own elementwise kernels of one array (``exp(x)``, ``-x``; ``bind``
    comes here when its plan says ``UNARY``): the lean path of :func:`binary` for one operand."""
    source = a._storage
    device = a.device
    if a._view is not None or not source.contiguous or device.kind == "cuda" or device.node is not None or \
            _autograd.used and a._ag is not None:
        return eager_bind(entry, p, (a,), _EMPTY, name=name)
    shape, dtype = p.out_shapes[0], p.out_dtypes[0]
    out = p.storage(shape, dtype, device)  # Storage, or NumpyStorage in NumPy mode
    result = make(shape, dtype, device, out)
    fn: Any
    args: tuple[Any, ...]
    if p.exact:
        fn, args = _eager.run_exact_unary, (entry.kernel, source, out)
    else:
        fn, args = _eager.run_unary, (entry.kernel, source, p.kernel_dtypes[0], out, out.dtype.torch)
    moded = _function_mode() or _dispatch_modes()
    if moded:  # a mode may answer a tensor subclass: noted once stored (binary's)
        fn, args = _eager.run_noting, (fn, out, *args)
    if p.small:
        pure = not p.one_thread and not moded
        (engine._engine or engine.current_engine()).push_small(fn, args, (source,), (), device, name or entry.name,
                                                               "compute", p.one_thread, (), (out,), pure)  # fmt: skip
    else:
        _push_op(fn, args, (source,), (out,), device, name or entry.name)
    return result


def binary_into(entry: OpDef, target: NDArray, other: Any, what: str, p: Plan | None = None) -> NDArray:
    """``bind_into(entry, target, (target, other), what=what)`` -- the in-place operators -- with the plan
    cache's lookup inlined as in :func:`binary`, and the lean path's ``x += y`` / ``x += 1``: torch's
    in-place kernel on the target (``Plan.inplace``). ``bind_into`` comes here with its plan ``p``."""
    if p is None:
        if _interpreters.active:
            return bind_into(entry, target, (target, other), what=what)
        if type(other) is NDArray:
            key: Any = (entry, target._dtype, target.shape, other._dtype, other.shape, True) \
                if _numpy_mode.on or target._storage.npmode or other._storage.npmode else \
                (entry, target._dtype, target.shape, other._dtype, other.shape)
        else:
            key = (entry, target._dtype, target.shape, type(other), True) \
                if _numpy_mode.on or target._storage.npmode else (entry, target._dtype, target.shape, type(other))
        p = _plans.get(key)
        if p is None or not p.inplace or p.int_scalars:
            return bind_into(entry, target, (target, other), what=what)
    ts = target._storage
    device = target.device
    if target._view is not None or not ts.contiguous or device.kind == "cuda" or device.node is not None or \
            _autograd.used and (target._ag is not None or getattr(other, "_ag", None) is not None):
        return eager_bind_into(entry, p, target, (target, other), _EMPTY, what)
    if p.lean == ARRAYS:
        source = other._storage
        # two storages of outside memory (lane None) may overlap: the general path computes, then copies
        if other._view is not None or not source.contiguous or other.device is not device or \
                source is not ts and ts.lane is None and source.lane is None:
            return eager_bind_into(entry, p, target, (target, other), _EMPTY, what)
        fn, args = (_eager.run_into_exact, (p.inplace, ts, source)) if p.exact else \
            (_eager.run_into_array, (p.inplace, ts, source, p.kernel_dtypes[1]))
        reads = () if source is ts else (source,)  # x += x reads only what it writes
        rw = (ts,)
        if p.small:
            pure = not p.one_thread and not _function_mode() and not _dispatch_modes()
            (engine._engine or engine.current_engine()).push_small(fn, args, reads, rw, device, what, "compute",
                                                                   p.one_thread, rw, (), pure)
        else:
            _push_op(fn, args, (*reads, *rw), rw, device, what)
    else:
        number = p.kernel_number(other) if p.numbers_as_tensors else other
        rw = (ts,)
        if p.small:
            pure = not p.one_thread and not _function_mode() and not _dispatch_modes()
            (engine._engine or engine.current_engine()).push_small(_eager.run_into_number, (p.inplace, ts, number), (), rw,
                                                                   device, what, "compute", p.one_thread, rw, (), pure)  # fmt: skip
        else:
            _push_op(_eager.run_into_number, (p.inplace, ts, number), rw, rw, device, what)
    return target


def _push_op(fn: Any, args: tuple[Any, ...], reads: tuple[engine.Var, ...], writes: tuple[engine.Var, ...],
             device: Device, name: str) -> None:
    """A lean path's op too big to be small: an engine op of its own (``_eager.push``'s other way)."""
    (engine._engine or engine.current_engine()).push_checked(partial(fn, *args), reads, writes, device, 0, name,
                                                             "compute", False)  # fmt: skip
