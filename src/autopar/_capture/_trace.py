"""Tracing a captured function: the interpreter that records what it does.

Design note
-----------
The first call of a captured function with a new signature runs it *eagerly*
-- every op is pushed as it would be without ``capture``, so that call's
results are step-by-step's by construction -- with a :class:`Tracer` active
on the calling thread (``arrays/_interpreters.py``). The dispatcher hands the
tracer every ``bind``/``bind_into`` after planning; the tracer runs it below
itself (``eager_bind``, inside ``_interpreters.passing()``) and records a
:class:`KernelStep`: the entry's kernel, the dtypes its inputs are cast to,
its static parameters, and its operands as :class:`Operand` -- a *slot* and a
view. A slot stands for one storage (the unit the engine orders: a view is
a window on its storage, so ``x[1:]`` and ``x.T`` are slot ``x`` seen
through a view, and push nothing, as in eager execution):

- ``ARG``: the storage of an array argument (found again in each call's
  arguments, by position);
- ``CONST``: a storage the function reached without being given it -- a
  closed-over array, a module's parameter, an optimizer's state, a random
  generator's var -- or made from host data inside it (``asarray([...])``:
  its value is kept, and a call that writes or returns it gets a new one). The *same object* is read and written by every replay
  (as JAX bakes closed-over values in, autopar bakes in the array: its
  current value is read each call, and rebinding the Python name is not
  seen: capture again after that);
- ``GRAD``: the storage of a leaf's ``.grad``, looked up again at each call
  (``zero_grad`` may have dropped it);
- ``INTERNAL``: made by a step of the trace (a result).

Beyond ``bind``: ``backward()`` is recorded as one :class:`BackwardStep` per
device (the real backward runs below the tracer); an engine op the array
layer pushes directly (an optimizer's fused update) becomes an
:class:`OpaqueStep`, allowed when everything it touches is ``CONST`` (then
the same function is right for every call); reading a value (``float(x)``,
``bool(x)``, ``x.numpy()``) and ops whose result shape depends on data raise
:class:`~autopar.errors.CaptureError` naming the user's line and the fix.
Python control flow on non-array values simply unrolls -- and runs only at
the trace: Python state the function changes (an optimizer's step count,
state it makes at its first step) is changed once, by the trace.
"""

from __future__ import annotations

import linecache
import os
import sys
import weakref
from dataclasses import dataclass, field
from typing import Any

from autopar.arrays import _dispatch, _interpreters
from autopar.arrays._array import NDArray
from autopar.arrays._autograd import Leaf
from autopar.arrays._views import Storage, View
from autopar.devices import Device, cpu
from autopar.errors import CaptureError

ARG, CONST, GRAD, INTERNAL = "arg", "const", "grad", "internal"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(slots=True)
class Slot:
    """One storage the trace touches (module note); ``source``: the argument's position (ARG), the
    storage or var itself (CONST), the leaf's slot (GRAD); ``leaf``: an array on it that is a leaf."""

    index: int
    kind: str
    shape: tuple[int, ...]
    dtype: Any
    device: Device
    source: Any = None
    leaf: Leaf | None = None  # the gradient record of a leaf on this storage (its .grad: a GRAD slot)
    var: Any = None  # the storage (or var) the trace saw
    literal: Any = None  # CONST made inside the function from host data (asarray): its value then
    npmode: bool = False  # INTERNAL made in NumPy mode (``Storage.npmode``): a replay's new storage is too

@dataclass(slots=True, frozen=True)
class Operand:
    slot: int
    view: View | None


@dataclass(slots=True)
class KernelStep:
    """One ``bind`` (``outs``: its results' slots) or ``bind_into`` (``target``; ``overwrite``: it
    covers the target's storage and reads none of it)."""

    name: str
    entry: Any
    kernel_dtypes: tuple[Any, ...]
    static: dict[str, Any]
    args: tuple[Any, ...]  # Operand or a Python number
    device: Device
    lane: str
    outs: tuple[int, ...] = ()
    target: Operand | None = None
    overwrite: bool = False
    grad: bool = False  # recorded for gradients: run with torch's graph
    positions: frozenset[int] = frozenset()  # operands that require grad (leaves or recorded results)
    state: tuple[int, ...] = ()  # slots of extra vars read and written (a random generator's)
    exact: bool = False  # the plan's lean kernel needs no cast and answers a fresh tensor of the result's dtype
    inplace: Any = None  # torch's in-place method for ``x += y`` (``Plan.inplace``)
    reads: set[int] = field(default_factory=set)
    writes: set[int] = field(default_factory=set)


@dataclass(slots=True)
class BackwardStep:
    """``backward(heads)`` on one device: torch's gradients of ``heads`` with respect to ``leaves``
    -- (leaf slot, the leaf's ``.grad`` operand, overwrite?) -- written or added into each ``.grad``."""

    name: str
    heads: tuple[Operand, ...]
    head_grads: tuple[Operand | None, ...]
    leaves: tuple[tuple[int, Operand, bool], ...]
    retain: bool
    device: Device
    lane: str = "compute"
    reads: set[int] = field(default_factory=set)
    writes: set[int] = field(default_factory=set)
    # a piece of a backward cut at gradient buckets (``_cuts.py``): the slots whose gradients the piece
    # before it computed (its heads), those whose gradients it computes for the piece after it
    above: tuple[int, ...] = ()
    below: tuple[int, ...] = ()
    cut: bool = False  # not the first piece: an engine op of its own, in the first piece's graph
    point: int = -1  # the trace step before which ``below`` was made (a compiled forward is cut there)


@dataclass(slots=True)
class OpaqueStep:
    """An engine op pushed directly by the array layer, replayed as it is (it touches CONST slots only)."""

    name: str
    fn: Any
    device: Device
    lane: str
    reads: set[int] = field(default_factory=set)  # (what it writes too: its segment reads it)
    writes: set[int] = field(default_factory=set)
    overwrites: frozenset[int] = frozenset()  # pushed as writes only: a failure there does not stop it


Step = KernelStep | BackwardStep | OpaqueStep


def user_line() -> str:
    """``file:line: source`` of the innermost frame outside autopar (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return "an unknown line"
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    return f"{where} ({text})" if text else where


class Tracer:
    """The tracing interpreter of one call (module note)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.slots: list[Slot] = []
        self.by_var: dict[int, int] = {}  # id(storage or var) -> slot
        self.leaves: dict[int, int] = {}  # id(Leaf) -> slot
        self.steps: list[Step] = []
        self.keep: list[Any] = []  # the vars and storages the trace saw, alive while it is used
        self.dropped: set[int] = set()  # leaves whose .grad the function set to None (zero_grad) since their last backward
        # closed-over arrays the function used, with their gradient record then: a call after one of them
        # starts or stops requiring grad (a layer frozen or unfrozen) traces again (``Program.resolve``)
        self.watch: dict[int, tuple[Any, Any, Any]] = {}

    # -- slots --------------------------------------------------------------------------------------

    def _new(self, kind: str, var: Any, shape: tuple[int, ...], dtype: Any, device: Device, source: Any) -> int:
        index = len(self.slots)
        self.slots.append(Slot(index, kind, shape, dtype, device, source, None, var))
        self.by_var[id(var)] = index
        self.keep.append(var)
        return index

    def add_arg(self, array: NDArray, position: int) -> None:
        s = array._storage
        if id(s) not in self.by_var:
            self._new(ARG, s, s.shape, s.dtype, s.device, position)
        self._note_leaf(array)

    def _note_leaf(self, array: NDArray) -> None:
        leaf = _leaf_of(array._ag)
        if leaf is not None:
            slot = self.by_var[id(array._storage)]
            self.leaves.setdefault(id(leaf), slot)
            if self.slots[slot].leaf is None:
                self.slots[slot].leaf = leaf

    def operand(self, array: NDArray) -> Operand:
        s = array._storage
        found = self.by_var.get(id(s))
        if found is None:
            if s.remote:
                raise CaptureError(f"capture({self.name}): arrays on a cluster node's device ({array.device}) are not "
                                   f"captured; call the function without autopar.capture")  # fmt: skip
            found = self._new(CONST, s, s.shape, s.dtype, s.device, s)
        ag = array._ag
        if ag is not None and _leaf_of(ag) is None and self.slots[found].kind != INTERNAL:
            raise CaptureError(
                f"capture({self.name}): an array (shape {array.shape}) made by a recorded operation outside the "
                f"function is used inside it, at {user_line()}; gradients do not flow across a captured function's "
                f"edge: pass it detached (x.detach()), or compute it inside the function"
            )
        self._note_leaf(array)
        if self.slots[found].kind == CONST and id(array) not in self.watch:
            self.watch[id(array)] = (weakref.ref(array), ag, requirement(ag))
        return Operand(found, array._view)

    def made(self, array: NDArray) -> None:
        """``asarray(data)`` inside the function: a CONST slot that remembers its value, made anew by each
        call that writes or returns it (``Program.resolve``), as each eager call makes a new array."""
        s = array._storage
        if id(s) in self.by_var or s.tensor is None or s.remote:
            return
        index = self._new(CONST, s, s.shape, s.dtype, s.device, s)
        self.slots[index].literal = s.tensor.clone()

    def var_slot(self, var: Any, what: str) -> int:
        found = self.by_var.get(id(var))
        if found is None:
            if isinstance(var, Storage):
                return self._new(CONST, var, var.shape, var.dtype, var.device, var)
            return self._new(CONST, var, (), None, cpu(0), var)
        return found

    # -- the interpreter ------------------------------------------------------------------------------

    def bind(self, entry: Any, plan: Any, args: Any, static: dict[str, Any], **options: Any) -> Any:
        if entry.data_dependent:
            raise CaptureError(
                f"capture({self.name}): {entry.name}'s result shape depends on the values, at {user_line()}; a "
                f"captured function needs every shape at trace time. Use a mask (autopar.where(cond, x, 0)) or "
                f"call {entry.name} outside the captured function"
            )
        operands = tuple(self.operand(a) if type(a) is NDArray else a for a in args)
        with _interpreters.passing():
            results = _dispatch.eager_bind(entry, plan, args, static, **options)
        outs = results if type(results) is tuple else (results,)
        device = options.get("device")
        if device is None:
            device = next((a.device for a in args if type(a) is NDArray), cpu(0))
        grad = any(r._ag is not None for r in outs)
        positions: frozenset[int] = frozenset()
        if grad:
            node = next(r._ag.node for r in outs if r._ag is not None)
            positions = frozenset(node.positions)
            if entry.vjp is not None:
                raise CaptureError(f"capture({self.name}): the gradient of {entry.name} is autopar's own, which a "
                                   f"capture does not replay, at {user_line()}; compute it outside the recorded "
                                   f"block, or call the function without autopar.capture")  # fmt: skip
        out_slots = tuple(self._new(INTERNAL, r._storage, r._storage.shape, r._storage.dtype, r._storage.device, None)
                          for r in outs)  # fmt: skip
        for r, o in zip(outs, out_slots):
            self.slots[o].npmode = r._storage.npmode
        state = tuple(self.var_slot(v, entry.name) for v in options.get("state", ()))
        step = KernelStep(options.get("name") or entry.name, entry, plan.kernel_dtypes, static, operands, device,
                          options.get("lane", "compute"), outs=out_slots, grad=grad, positions=positions,
                          state=state, exact=bool(plan.exact))  # fmt: skip
        step.reads = {o.slot for o in operands if type(o) is Operand} | set(state)
        step.writes = set(out_slots) | set(state)
        self.steps.append(step)
        return results

    def bind_into(self, entry: Any, plan: Any, target: NDArray, args: Any, static: dict[str, Any],
                  **options: Any) -> Any:  # fmt: skip
        operands = tuple(self.operand(a) if type(a) is NDArray else a for a in args)
        aim = self.operand(target)
        what = options.get("what") or entry.name
        with _interpreters.passing():
            _dispatch.eager_bind_into(entry, plan, target, args, static, what, options.get("casting", "same_kind"),
                                      options.get("device"), options.get("lane", "compute"))  # fmt: skip
        from autopar.arrays import _views

        storage = target._storage
        reads_target = any(type(o) is Operand and o.slot == aim.slot for o in operands)
        overwrite = not reads_target and _views.covers(storage, target._view)
        device = options.get("device") or target.device
        inplace = plan.inplace if args and args[0] is target and options.get("casting", "same_kind") == "same_kind" \
            else None  # fmt: skip
        if inplace is not None and len(args) == 2 and type(args[1]) is NDArray and args[1]._storage is not storage \
                and storage.lane is None and args[1]._storage.lane is None:
            inplace = None  # two storages of outside memory may overlap: computed, then copied (as eagerly)
        step = KernelStep(what, entry, plan.kernel_dtypes, static, operands, device, options.get("lane", "compute"),
                          target=aim, overwrite=overwrite, inplace=inplace)  # fmt: skip
        step.reads = {o.slot for o in operands if type(o) is Operand} | (set() if overwrite else {aim.slot})
        step.writes = {aim.slot}
        self.steps.append(step)
        return target

    def read(self, array: Any, what: str) -> None:
        if what.startswith("waits"):  # a wait observes no value (x.to(device), wait_to_read): as eagerly
            return
        raise CaptureError(
            f"capture({self.name}): the function {what} of an array (shape {array.shape}, {array.dtype}) while tracing, at "
            f"{user_line()}. A captured function is replayed later on values not known now, so it cannot convert "
            f"or branch on an array's value (float(x), bool(x), if x > 0, x.numpy()). Pass the value as a static "
            f"(non-array) argument, compute both branches with autopar.where(cond, a, b), or read it after the call"
        )

    def pushed(self, fn: Any, reads: tuple[Any, ...], writes: tuple[Any, ...], device: Device, name: str,
               lane: str) -> None:  # fmt: skip
        slots_r = {self.var_slot(v, name) for v in reads}
        slots_w = {self.var_slot(v, name) for v in writes}
        for s in slots_r | slots_w:
            kind = self.slots[s].kind
            if kind not in (CONST, GRAD):
                raise CaptureError(
                    f"capture({self.name}): {name} is an engine op bound to this call's arrays (it touches "
                    f"{'an argument' if kind == ARG else 'a result made inside the function'}), at {user_line()}; "
                    f"a captured function may push such ops only on arrays it closes over (parameters, state)"
                )
        step = OpaqueStep(name, fn, device, lane, overwrites=frozenset(slots_w - slots_r))
        step.reads = slots_r | slots_w
        step.writes = slots_w
        self.steps.append(step)

    def grad_set(self, leaf: Leaf, value: Any) -> None:
        """``p.grad = value`` inside the function: None (``zero_grad``) makes its next backward overwrite."""
        if value is not None:
            raise CaptureError(
                f"capture({self.name}): assigning an array to .grad inside the captured function, at "
                f"{user_line()}, is not captured; assign it before the call, or write into it (p.grad[...] = 0)"
            )
        self.dropped.add(id(leaf))

    def backward(self, heads: Any, head_grads: Any, retain_graph: bool, what: str, before: Any,
                 cuts: Any = None) -> Any:  # fmt: skip
        from autopar.arrays import _backward

        with _interpreters.passing():
            leaves = _backward.backward(heads, head_grads, retain_graph, False, what, before)
        grads = [None] * len(heads) if head_grads is None else list(head_grads)
        by_device: dict[Device, tuple[list[Operand], list[Operand | None], list[tuple[int, Operand, bool]]]] = {}
        for head, g in zip(heads, grads):
            part = by_device.setdefault(head.device, ([], [], []))
            part[0].append(self.operand(head))
            part[1].append(None if g is None else self.operand(g if type(g) is NDArray else _as_array(g, head)))
        for leaf in leaves:
            slot = self.leaves.get(id(leaf))
            if slot is None:
                raise CaptureError(f"capture({self.name}): {what} reaches an array that was marked as requiring grad "
                                   f"inside the captured function, at {user_line()}; mark it (attach_grad, "
                                   f"requires_grad_) before the function is called")  # fmt: skip
            grad = leaf.grad
            assert grad is not None
            s = grad._storage
            found = self.by_var.get(id(s))
            if found is None:
                found = self._new(GRAD, s, s.shape, s.dtype, s.device, slot)
            elif self.slots[found].kind == CONST:
                self.slots[found].kind, self.slots[found].source = GRAD, slot
            # every backward of a "write" leaf (as eagerly: each pass overwrites), or of one whose .grad
            # the function dropped (made afresh): written whole; otherwise added into
            overwrite = leaf.req == "write" or id(leaf) in self.dropped
            self.dropped.discard(id(leaf))
            found_part = by_device.get(leaf.device)
            if found_part is None:
                raise CaptureError(f"capture({self.name}): {what} sends gradients from one device to another (a "
                                   f"parameter on {leaf.device}, no head there), at {user_line()}; this is not "
                                   f"captured: compute each device's loss on its own device (parallel.DataParallel)")  # fmt: skip
            found_part[2].append((slot, Operand(found, grad._view), overwrite))
        from autopar._capture import _cuts

        for device, (hs, gs, ls) in by_device.items():
            whole = BackwardStep(what, tuple(hs), tuple(gs), tuple(ls), retain_graph, device)
            pieces = _cuts.cut(self, whole, cuts) if cuts else None
            for step in pieces or [whole]:
                step.reads |= {o.slot for o in step.heads} | {o.slot for o in step.head_grads if o is not None} | \
                    {s for s, _, _ in step.leaves} | {g.slot for _, g, o in step.leaves if not o or g.view is not None}
                step.writes |= {g.slot for _, g, _ in step.leaves}
                self.steps.append(step)
        return leaves


def requirement(ag: Any) -> Any:
    """What a gradient record asks for (``attach_grad``'s grad_req, torch's always-record), or None."""
    return None if ag is None else (getattr(ag, "req", None), getattr(ag, "always", None))


def _leaf_of(ag: Any) -> Leaf | None:
    """The leaf an array's record stands for: itself, or the leaf a chain of views starts from."""
    while ag is not None and type(ag) is not Leaf:
        node = ag.node
        if node.rel is None:
            return None
        ag = node.inputs[0]
    return ag


def _as_array(value: Any, like: NDArray) -> NDArray:
    from autopar.arrays._creation import asarray

    with _interpreters.passing():
        return asarray(value, device=like.device, dtype=like.dtype)
