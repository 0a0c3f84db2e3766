"""Gradients: what the dispatcher records, and how backward runs through the engine.

Design note
-----------
autopar's backward is MXNet's, op by op on the engine: every recorded op's
gradient is an engine op of its own, reading the vars it needs and writing
(accumulating into) gradient vars. Nothing in it waits: ``backward()`` pushes
and returns, independent branches of the backward graph run side by side, and
a parameter's ``.grad`` is readable the moment its last contribution is
written -- so whatever reads it (a copy, a sum across devices) starts while
the rest of backward still runs. Derivatives are torch's: autopar writes
none by hand.

**Spellings and modes.** Both spellings set the same per-thread state (MXNet's
``is_recording`` and PyTorch's grad mode are per thread too):

=============  =======================================  ================================
mode           entered by                               an op is recorded when
=============  =======================================  ================================
``DEFAULT``    (outside any block)                      a PyTorch-style input requires grad (an
                                                        ``attach_grad`` input is a constant there)
``RECORD``     ``with autograd.record():``              an input requires grad, either style
``OFF``        ``autograd.pause()``, ``no_grad()``      never
=============  =======================================  ================================

An array requires grad when it carries a record (``NDArray._ag``): a
:class:`Leaf` for arrays the user marked -- ``x.attach_grad()`` (MXNet style:
recorded only inside ``record()``, ``grad_req="write"``: each backward
overwrites ``x.grad``, which starts as zeros) or ``requires_grad=True`` /
``x.requires_grad_()`` (PyTorch style: recorded unless in ``no_grad()``,
gradients accumulate, ``x.grad`` is ``None`` until the first backward) -- and
an :class:`Edge` (output *i* of a recorded :class:`Node`) for results of
recorded ops. An op's result is recorded if the op's entry is
``differentiable``, some input that requires grad is floating or complex
(integer and bool arrays never carry gradients, as in PyTorch) and some
result is. ``x.detach()`` is the same storage without a record. Until the
first array ever requires grad, the dispatcher checks one module global
(``used``) and nothing else.

**Forward: the graph is torch's, kept per op.** When ``bind`` records a call,
the op it pushes runs its kernel under ``torch.enable_grad()`` on the input
tensors detached and marked ``requires_grad`` (the casts to the computation
dtype and back happen inside, so gradients arrive in each input's own dtype),
stores the result detached, as always, and keeps the little autograd graph
from those leaves to the results in ``node.saved``. The gradient op runs
torch's C++ autograd engine over that graph. ``bench/autograd_alternatives.py``
measured the alternatives on one thread (torch 2.13, medians, a loaded 2-core
machine; microseconds per op)::

                              forward   gradient          kept per op
    mul, 16 elements   plain      2.0
      graph                       8.1   16.3 (grad: 69)   inputs + output
      torch.func.vjp             55.7  100.0              inputs + output
      recompute (func.vjp)        2.0  124.1              inputs + output
    matmul 64x64       plain      9.3
      graph                      16.7   37.8 (grad: 66)
      torch.func.vjp             87.8  126.5
      recompute                   9.3  190.6

Memory is the same for all three (LeNet's conv2d and relu at batch 128: 1.4
and 1.7 MB kept per op against 0.9 and 0.8 for no record: the inputs stay
alive with the graph in each), so per-op overhead decides: the kept graph
costs 4-7 us in the forward and 15-30 us in the gradient, ``torch.func.vjp``
40-80 us in each, and recomputing runs the forward twice. The gradient op
calls the engine under ``torch.autograd.grad`` directly
(``Variable._execution_engine.run_backward``, what ``grad`` calls after
45 us of Python argument handling per call); a test pins it to
``torch.autograd.grad``'s answers. ``OpDef.vjp`` overrides the derivative
where torch has none.

Views push nothing, so they have no forward op to keep a graph from: a view
made of an array that requires grad (``x.T``, ``x[1:]``, ``x.reshape``)
records a *view node* holding the view relative to its input (``rel``). Its
gradient op builds a fresh leaf of the input's shape, reads ``rel`` of it
(``_views.read``: torch's ``as_strided`` and ``flip``) and lets torch's
autograd scatter the gradient back -- torch's derivative again, and it never
needs the input's value.

**Backward: one engine op per node.** ``backward(heads)`` walks the recorded
graph from the heads (in Python, at the call: it only reads records), orders
the nodes it reaches by recording sequence, latest first (a node's inputs
were recorded before it, so this is a reverse topological order), and pushes
one gradient op per node::

    forward (recorded)              backward (pushed in this order)
    h = conv(x, w)    node 1         4: ce'   reads g_l            writes g_z
    a = relu(h)       node 2         3: relu' reads g_a, h, a      writes g_h
    z = linear(a, v)  node 3         ...
    l = ce(z, y)      node 4         1: conv' reads g_h, x, w, h   writes w.grad

Each gradient of a value is an *accumulator* array: the first contribution
pushed writes it (an overwrite: it reads nothing), later ones add to it (a
read-write), so a value used twice gets the sum, in push order, whatever runs
first. A leaf's accumulator is ``x.grad`` itself: with ``grad_req="add"`` (or
when ``.grad`` exists, PyTorch style) every contribution adds. A PyTorch-style
leaf without ``.grad`` gets one at its first contribution: zeros, pushed first,
made and assigned under a lock, so two ``backward`` calls at once (two
threads) add to the same array. ``backward`` returns the leaves it writes:
a leaf its heads do not reach keeps its ``.grad`` (PyTorch), and the
data-parallel step does not move it. ``backward`` is a group
(``engine/_group.py``): a Ctrl-C landing while it pushes is raised after its
last push, so no ``.grad`` is left half computed. A gradient op
reads its results' gradients, its results' vars and its inputs' vars (their
values are what torch saved: reading them orders it against later writes),
and writes its inputs' gradients; it runs on the forward op's device and lane
(the gradient of a copy runs on the copy lane). Because each ``.grad``'s var
is last written by its last contribution, reading it -- or pushing a copy or
a sum of it -- waits for exactly that, not for the rest of backward. Each
gradient op drops its node's saved graph when it has run (``retain_graph``
keeps it); a second backward through a graph that was not retained raises at
the call, as in PyTorch.

**Failures (the contract's failure rules).** A failed forward op fails its results; the gradient
op reading them does not run and its gradients carry the failure, and so on
down to the parameters' ``.grad``, to the update that reads them and to the
parameters it writes. Nothing waits for anything that will not come. An error
in a gradient op (torch's) is stored the same way.

**In place.** Recording an in-place op is not supported: while an op would be
recorded, ``x += 1``, ``x[k] = v`` or ``copyto(x)`` with ``x`` or ``v``
requiring grad raises at the call (PyTorch raises for leaves; MXNet for any
recorded array), naming the op and the fix (write it out of place, or in
``no_grad()``). Outside recording (``no_grad()``, ``pause()``, or MXNet-style
arrays outside ``record()``) in-place writes are allowed -- that is how
parameters are updated. Modifying a value that a recorded op saved for its
gradient, before that gradient has run, is detected by torch's version
counters exactly where PyTorch detects it: the recorded inputs are detached
views of the storage tensors, which share their version counter, and every
in-place write of a storage goes through torch's ``copy_``. The check happens
when the gradient op runs (the forward, and so what it saved, is known only
then), so the error is stored on the gradients it writes (contract, failures rule 2) and
raised by the first read of one of them -- or by the update that reads it,
or ``waitall`` -- with the op named and the fix said; in a program that reads
nothing, ``waitall`` raises it. Because gradient ops read their inputs' vars,
whether the modification counts does not depend on timing: a write pushed
before ``backward()`` is seen, one pushed after it waits for the gradient.

Not supported: higher-order gradients (``create_graph=True`` raises), hooks
on gradients, sparse gradients.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch

from autopar.arrays._table import OpDef

if TYPE_CHECKING:
    from autopar.arrays._array import NDArray
    from autopar.arrays._views import Storage, View
    from autopar.devices import Device

OFF, DEFAULT, RECORD = 0, 1, 2
GRAD_REQS = ("write", "add", "null")

# Becomes True when the first array requires grad; until then the dispatcher checks nothing else.
used = False


class _State(threading.local):
    mode = DEFAULT
    training = False  # MXNet's train mode: record() enters it, pause() leaves it


_state = _State()
_seq = itertools.count()


class Leaf:
    """An array the user marked: where its gradient goes, and how."""

    __slots__ = ("grad", "req", "always", "shape", "dtype", "device", "fresh")

    def __init__(self, array: NDArray, req: str, always: bool) -> None:
        self.grad: NDArray | None = None
        self.fresh = False  # a backward wrote .grad since the last Trainer step used it (MXNet's _fresh_grad)
        self.req = req  # "write": each backward overwrites; "add": accumulate; "null": no gradient
        self.always = always  # PyTorch style: recorded outside record() too
        self.shape = array.shape
        self.dtype = array._dtype
        self.device = array.device

    def __repr__(self) -> str:
        return f"<Leaf grad_req={self.req!r}>"


class Node:
    """One recorded op: what its gradient op needs.

    ``inputs`` are the records (``Leaf`` or ``Edge``) of the inputs that
    require grad, ``positions`` where they are among the op's arguments,
    ``reads`` the vars the gradient op reads (its inputs' and results'),
    ``outputs`` the results' storages (``None`` for a result that carries no
    gradient). ``saved`` is set by the forward op: the results as torch
    computed them (with their graph) and the leaves it ran on. A view node
    (``rel`` set) saves nothing. For an op on a cluster node's device,
    ``remote`` names the node's own record of it, which holds ``saved``.
    """

    __slots__ = ("entry", "static", "name", "device", "lane", "inputs", "positions", "in_meta", "reads", "outputs",
                 "saved", "rel", "seq", "always", "consumed", "remote")  # fmt: skip

    def __init__(self, entry: OpDef | None, name: str, device: Device, lane: str, always: bool) -> None:
        self.entry = entry
        self.static: dict[str, Any] = {}
        self.name = name
        self.device = device
        self.lane = lane
        self.inputs: tuple[Leaf | Edge, ...] = ()
        self.positions: tuple[int, ...] = ()
        self.in_meta: tuple[tuple[tuple[int, ...], Any, Device], ...] = ()  # (shape, dtype, device) per input
        self.reads: tuple[Any, ...] = ()
        self.outputs: tuple[Storage | None, ...] = ()
        self.saved: tuple[tuple[torch.Tensor | None, ...], list[torch.Tensor]] | None = None
        self.rel: View | None = None
        self.seq = next(_seq)
        self.always = always
        self.consumed = False
        self.remote: Any = None  # on a cluster node's device: the node's record of the op (_remote_grad.py)

    def __repr__(self) -> str:
        return f"<Node {self.name} #{self.seq} on {self.device}>"


class Edge:
    """Result ``index`` of a recorded ``node``: the record an op's result carries."""

    __slots__ = ("node", "index", "always")

    def __init__(self, node: Node, index: int) -> None:
        self.node = node
        self.index = index
        self.always = node.always

    def __repr__(self) -> str:
        return f"<Edge {self.node.name}[{self.index}]>"


# -- the per-thread state and its blocks ---------------------------------------------------------


def is_recording() -> bool:
    """True inside ``autograd.record()`` (MXNet)."""
    return _state.mode == RECORD


def is_grad_enabled() -> bool:
    """False inside ``no_grad()`` / ``autograd.pause()`` (PyTorch's grad mode)."""
    return _state.mode != OFF


def is_training() -> bool:
    """MXNet's train mode: True inside ``record()`` (``train_mode=True``) and ``train_mode()``."""
    return _state.training


@contextmanager
def _enter(mode: int | None, training: bool | None) -> Iterator[None]:
    state = _state
    old_mode, old_training = state.mode, state.training
    if mode is not None:
        state.mode = mode
    if training is not None:
        state.training = training
    try:
        yield
    finally:
        state.mode, state.training = old_mode, old_training


def record(train_mode: bool = True) -> Any:
    """``with autograd.record():`` ops on arrays that require grad are recorded (MXNet)."""
    return _enter(RECORD, train_mode)


def pause(train_mode: bool = False) -> Any:
    """``with autograd.pause():`` nothing is recorded (MXNet)."""
    return _enter(OFF, train_mode)


def no_grad() -> Any:
    """``with autopar.no_grad():`` nothing is recorded (PyTorch); train mode is left as it is."""
    return _enter(OFF, None)


def enable_grad() -> Any:
    """``with autopar.enable_grad():`` PyTorch's grad mode back on inside ``no_grad()``."""
    return _enter(DEFAULT if _state.mode == OFF else None, None)


def train_mode() -> Any:
    """MXNet's ``autograd.train_mode()``: train mode without recording."""
    return _enter(None, True)


def predict_mode() -> Any:
    """MXNet's ``autograd.predict_mode()``."""
    return _enter(None, False)


# -- marking leaves ----------------------------------------------------------------------------------


def mark(array: NDArray, req: str, always: bool, zeros: Callable[[], Any] | None) -> None:
    """Make ``array`` a leaf that requires grad (``attach_grad`` / ``requires_grad_``); ``zeros``
    makes its first ``.grad`` (given by the caller: creation ops live above this module)."""
    global used
    if req not in GRAD_REQS:
        raise ValueError(f"attach_grad: grad_req={req!r}; expected one of {', '.join(GRAD_REQS)}")
    if array._dtype.kind not in "fc":
        raise TypeError(
            f"{'requires_grad' if always else 'attach_grad'}: only floating and complex arrays can require "
            f"gradients; this one is {array._dtype.name} (cast it first: x.astype('float32'))"
        )
    if req == "null":
        array._ag = None
        return
    leaf = Leaf(array, req, always)
    if zeros is not None:
        leaf.grad = zeros()
    array._ag = leaf
    used = True


# -- what the dispatcher calls ---------------------------------------------------------------------


def recording(entry: OpDef, args: Sequence[Any], static: dict[str, Any], out_dtypes: Sequence[Any], device: Device,
              lane: str, name: str) -> Node | None:  # fmt: skip
    """The node ``bind`` records for this call, or None (``used`` is True)."""
    mode = _state.mode
    if mode == OFF or not entry.differentiable:
        return None
    positions: list[int] = []
    inputs: list[Leaf | Edge] = []
    always = False
    for i, a in enumerate(args):
        ag = getattr(a, "_ag", None)
        if ag is not None and a._dtype.kind in "fc" and (mode == RECORD or ag.always):
            # (outside record(), an MXNet-style input -- attach_grad -- is a constant: MXNet records
            # nothing there, and its .grad must not be written by a PyTorch-style neighbour's backward)
            positions.append(i)
            inputs.append(ag)
            always = always or ag.always
    if not positions:
        return None
    if not any(d.kind in "fc" for d in out_dtypes):
        return None
    node = Node(entry, name, device, lane, always)
    node.static = static
    node.inputs = tuple(inputs)
    node.positions = tuple(positions)
    node.in_meta = tuple((args[i].shape, args[i]._dtype, args[i].device) for i in positions)
    return node


def attach(node: Node, results: Sequence[NDArray], args: Sequence[Any]) -> None:
    """Give the results of a recorded op their records; note the vars its gradient reads."""
    outputs: list[Storage | None] = []
    for i, r in enumerate(results):
        if r._dtype.kind in "fc":
            r._ag = Edge(node, i)
            outputs.append(r._storage)
        else:
            outputs.append(None)
    node.outputs = tuple(outputs)
    reads = {id(s.var): s.var for s in outputs if s is not None}
    for a in args:
        storage = getattr(a, "_storage", None)
        if storage is not None:
            reads[id(storage.var)] = storage.var
    node.reads = tuple(reads.values())


def capture(node: Node, leaves: list[torch.Tensor]) -> None:
    """Inside the forward op, after its results were stored with their graph: keep the graph, detach them.

    (For an entry with its own ``vjp``, ``leaves`` are all the kernel's inputs and the results are kept as they are.)
    """
    kept: list[torch.Tensor | None] = []
    own = node.entry is not None and node.entry.vjp is not None
    for storage in node.outputs:
        if storage is None:
            kept.append(None)
            continue
        t = storage.tensor
        kept.append(t if t is not None and (own or t.requires_grad) else None)
        if t is not None:
            storage.tensor = t.detach()
    node.saved = (tuple(kept), leaves)


def record_view(source: NDArray, result: NDArray, rel: View) -> None:
    """``result`` is a view of ``source`` (which requires grad) seen through ``rel`` of a contiguous ``source``."""
    mode = _state.mode
    ag = source._ag
    if mode == OFF or ag is None or (mode == DEFAULT and not ag.always):
        return
    node = Node(None, "view", source.device, "compute", ag.always)
    node.inputs = (ag,)
    node.positions = (0,)
    node.in_meta = ((source.shape, source._dtype, source.device),)
    node.rel = rel
    node.outputs = (result._storage,)
    result._ag = Edge(node, 0)


def wants_view(source: NDArray) -> bool:
    """Whether a view of ``source`` made now is recorded (then its caller computes ``rel``)."""
    ag = source._ag
    if ag is None:
        return False
    mode = _state.mode
    return mode == RECORD or (mode == DEFAULT and ag.always)


def check_inplace(op: str, target: NDArray, args: Sequence[Any]) -> None:
    """An in-place write while an op would be recorded is not supported: raise at the call."""
    mode = _state.mode
    if mode == OFF:
        return
    for a in (target, *args):
        ag = getattr(a, "_ag", None)
        if ag is None or (mode == DEFAULT and not ag.always):
            continue
        who = "its target" if a is target else "a value it writes"
        if type(ag) is Leaf:
            kind = "a leaf that requires grad"
        else:
            kind = "a view of an array that requires grad" if ag.node.rel is not None else "the result of a recorded operation"
        raise RuntimeError(
            f"{op}: {who} is {kind}, and in-place operations are not recorded for gradients; "
            f"write it out of place (y = y + 1, autopar.where, autopar.concat), or inside "
            f"autopar.no_grad() / autograd.pause() when no gradient should flow through it"
        )
