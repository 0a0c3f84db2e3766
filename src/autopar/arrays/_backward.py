"""The backward pass: one engine op per recorded node (the design note is in ``_autograd.py``).

:func:`backward` runs at the call and only pushes: it walks the records from
the heads, orders the nodes latest first, and for each pushes the op that
turns its results' gradients into its inputs' -- torch's autograd engine over
the graph the forward op kept (``run_backward``, the call under
``torch.autograd.grad``), or, for a view node, over a fresh leaf seen through
the view. Each input's gradient goes into an accumulator: overwritten by the
first contribution pushed, added to by the others; a leaf's accumulator is its
``.grad``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from autopar import engine
from autopar.engine._group import atomic
from autopar.arrays import _autograd, _views
from autopar.arrays._autograd import Edge, Leaf, Node
from autopar.arrays._dispatch import push
from autopar.errors import DeviceError

# torch.autograd.grad's engine call, without its per-call Python argument handling (see the design note).
# (outputs, grad_outputs, keep_graph, create_graph, inputs, allow_unused, accumulate_grad) -> grads
_run_backward = torch.autograd.Variable._execution_engine.run_backward

OVERWRITE, ADD = 0, 1


class _Ones:
    """The gradient of a head given without ``head_grad``: ones, made inside the gradient op."""

    __slots__ = ()


ONES = _Ones()


@atomic("backward()")
def backward(heads: Sequence[Any], head_grads: Sequence[Any] | None = None, retain_graph: bool = False,
             create_graph: bool = False, what: str = "backward",
             before: Callable[[set[int]], None] | None = None,
             cuts: Sequence[Sequence[Leaf]] | None = None) -> list[Leaf]:  # fmt: skip
    """Push the gradient ops of everything ``heads`` were computed from; return at once, with the
    leaves whose ``.grad`` they write (a leaf the heads do not reach is not among them).

    ``before(reached)``, if given, is called with the ids of the leaves the heads reach, before any
    gradient op is pushed (the data-parallel step prepares its gradient buckets there). ``cuts``:
    groups of leaves, the first computed first (gradient buckets); eager execution already makes each
    gradient as soon as it can, and a capture cuts its backward there (``autopar/_capture``).

    All-or-nothing under Ctrl-C (``engine/_group.py``): an interrupt landing while it
    pushes is raised once every gradient op is pushed."""
    from autopar.arrays import _interpreters
    from autopar.arrays._array import NDArray

    if _interpreters.active:
        hook = getattr(_interpreters.current(), "backward", None)
        if hook is not None:  # a capture: it records the backward and runs it below (passing)
            leaves: list[Leaf] = hook(heads, head_grads, retain_graph, what, before, cuts)
            return leaves
    if create_graph:
        raise NotImplementedError(f"{what}: create_graph=True (higher-order gradients) is not supported")
    grads = [None] * len(heads) if head_grads is None else list(head_grads)
    if len(grads) != len(heads):
        raise ValueError(f"{what}: {len(heads)} heads but {len(grads)} head gradients; pass one per head (or None)")
    seeds: list[tuple[Any, Any]] = []
    for i, (head, g) in enumerate(zip(heads, grads)):
        if type(head) is not NDArray:
            raise TypeError(f"{what}: head {i} is {type(head).__name__}; expected an autopar array")
        if head._ag is None:
            raise RuntimeError(
                f"{what}: the array (shape {head.shape}) does not require grad and was not computed from one that "
                f"does; mark the inputs first (x.attach_grad() and compute inside autograd.record(), or "
                f"requires_grad=True)"
            )
        seeds.append((head, ONES if g is None else _head_grad(what, head, g)))
    nodes = _reachable([h._ag for h, _ in seeds], what)
    if before is not None:
        reached = {id(h._ag) for h, _ in seeds if type(h._ag) is Leaf}
        reached.update(id(ag) for node in nodes for ag in node.inputs if type(ag) is Leaf)
        before(reached)
    if not retain_graph:
        for node in nodes:
            node.consumed = True
    pass_ = _Pass(_alloc, retain_graph)
    for head, g in seeds:
        pass_.contribute(head._ag, g)
    for node in sorted(nodes, key=lambda n: n.seq, reverse=True):
        pass_.push_node(node)
    written = list(pass_.written.values())
    for leaf in written:
        leaf.fresh = True  # gluon's Trainer updates only what a backward wrote since its last step
    return written


_grad_lock = threading.Lock()


def _new_grad_lock() -> None:  # a forked child: another thread may have held it at the fork
    global _grad_lock
    _grad_lock = threading.Lock()


os.register_at_fork(after_in_child=_new_grad_lock)


def _leaf_grad(leaf: Leaf) -> Any:
    """``leaf.grad``, made now -- zeros, pushed before any contribution -- if it has none (PyTorch style).

    Under a lock and assigned at once: two backward calls at the same time (two threads) find the
    same accumulator, and both add to it. (Each made its own and the last assignment won: a
    contribution was lost.)"""
    with _grad_lock:
        grad = leaf.grad
        if grad is None:
            from autopar.arrays._creation import zeros

            grad = leaf.grad = zeros(leaf.shape, dtype=leaf.dtype, device=leaf.device)
        return grad


def _alloc(shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
    """An accumulator, written by its first contribution: here, or held by a cluster node's runtime."""
    from autopar.arrays import _array, _interpreters

    return _array.make(shape, dtype, device) if device.node is None else _interpreters.remote.alloc(shape, dtype, device)


def _head_grad(what: str, head: Any, g: Any) -> Any:
    from autopar.arrays._creation import asarray, astype

    g = asarray(g, device=head.device) if not hasattr(g, "_storage") else g
    if g.device != head.device:
        raise DeviceError(f"{what}: head_grad is on {g.device}, the head on {head.device}; move it with .to({head.device})")
    if g.shape != head.shape:
        raise ValueError(f"{what}: head_grad has shape {g.shape}; the head has shape {head.shape}")
    if g.dtype != head.dtype:
        g = astype(g, head.dtype)
    return g.detach()


def _reachable(starts: Sequence[Any], what: str) -> list[Node]:
    seen: dict[int, Node] = {}
    stack = [ag.node for ag in starts if type(ag) is Edge]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        if node.consumed:
            raise RuntimeError(
                f"{what}: the graph through {node.name} was already used by a backward and its saved values "
                f"freed; pass retain_graph=True to the first backward to run backward through it again"
            )
        seen[id(node)] = node
        for ag in node.inputs:
            if type(ag) is Edge and id(ag.node) not in seen:
                stack.append(ag.node)
    return list(seen.values())


class _Pass:
    """One backward call's accumulators, and the pushes that fill them."""

    def __init__(self, make: Any, retain: bool) -> None:
        self.make = make
        self.retain = retain
        self.acc: dict[tuple[int, int], Any] = {}  # (id(node), index) -> array or ONES
        self.written: dict[int, Leaf] = {}  # leaves written by this pass

    def target(self, ag: Any, shape: tuple[int, ...], dtype: Any, device: Any) -> tuple[Any, int]:
        """The accumulator a contribution to ``ag`` goes into, and whether it overwrites or adds."""
        if type(ag) is Leaf:
            first = id(ag) not in self.written
            self.written[id(ag)] = ag
            if ag.grad is None:  # made now, as zeros: every contribution adds
                return _leaf_grad(ag), ADD
            return ag.grad, OVERWRITE if first and ag.req == "write" else ADD
        key = (id(ag.node), ag.index)
        found = self.acc.get(key)
        if found is None:
            found = self.acc[key] = self.make(shape, dtype, device)
            return found, OVERWRITE
        if found is ONES:
            from autopar.arrays._creation import ones

            found = self.acc[key] = ones(shape, dtype=dtype, device=device)
        return found, ADD

    def contribute(self, ag: Any, g: Any) -> None:
        """A head's gradient: seed its node's accumulator, or write a leaf's ``.grad``."""
        if type(ag) is Edge:
            key = (id(ag.node), ag.index)
            if key not in self.acc:
                self.acc[key] = g
                return
            storage = ag.node.outputs[ag.index]
            assert storage is not None
            dest, how = self.target(ag, storage.shape, storage.dtype, storage.device)
        else:
            dest, how = self.target(ag, ag.shape, ag.dtype, ag.device)
        if dest.device.node is not None:
            raise NotImplementedError(
                f"backward: a head that is a leaf, or two heads computed by one op, on {dest.device} (a cluster "
                f"node's device) is not supported; sum the heads into one array first"
            )
        source = None if g is ONES else g._storage
        meta = (dest.shape, dest.dtype.torch, dest.device.torch_device)
        view = dest._view

        def seed() -> None:
            value = torch.ones(meta[0], dtype=meta[1], device=meta[2]) if source is None else source.tensor
            _write(dest._storage, view, how, value, meta, () if source is None else (value,))

        reads = () if source is None else (source.var,)
        partial = how == ADD or view is not None
        push(seed, reads + ((dest._storage.var,) if partial else ()), (dest._storage.var,), dest.device,
             "backward seed", "compute")  # fmt: skip

    def push_node(self, node: Node) -> None:
        outs = [self.acc.pop((id(node), i), None) for i in range(len(node.outputs))]
        if all(o is None for o in outs):
            return
        targets = [self.target(ag, *meta) for ag, meta in zip(node.inputs, node.in_meta)]
        if node.device.node is not None:  # a cluster node's device: one call to the node (cluster/_remote_grad.py)
            from autopar.arrays import _interpreters

            _interpreters.remote.push_grad(node, outs, targets, self.retain)
            return
        push_gradient(node, outs, targets, self.retain)


Vars = tuple[engine.Var, ...]


def gradient_vars(node: Node, outs: Sequence[Any], targets: Sequence[tuple[Any, int]]) -> tuple[Vars, Vars]:
    """What the gradient op of ``node`` reads and writes: ``outs`` its results' gradients (``None``,
    ``ONES`` or the accumulators), ``targets`` its inputs' accumulators and whether each adds."""
    reads: list[engine.Var] = [o._storage.var for o in outs if o is not None and o is not ONES]
    reads.extend(node.reads)
    writes = []
    for dest, how in targets:
        writes.append(dest._storage.var)
        if how == ADD or dest._view is not None:  # a gradient that is part of a storage (a bucket) keeps the rest
            reads.append(dest._storage.var)
    return tuple(reads), tuple(writes)


def push_gradient(node: Node, outs: Sequence[Any], targets: Sequence[tuple[Any, int]], retain: bool) -> Vars:
    """Push the gradient op of ``node`` on this process's engine; return the vars it writes.

    (A node runtime calls this too, for the driver's gradient calls: the same op on the node's record.)
    """
    reads, writes = gradient_vars(node, outs, targets)
    metas = [(shape, dtype.torch, device.torch_device) for shape, dtype, device in node.in_meta]
    tgts = [(dest._storage, dest._view, how, meta) for (dest, how), meta in zip(targets, metas)]
    grads = [None if o is None else ONES if o is ONES else o._storage for o in outs]
    fn = _view_gradient(node, grads[0], tgts) if node.rel is not None else _gradient(node, grads, tgts, retain)
    push(fn, reads, writes, node.device, f"backward {node.name}", node.lane)
    return writes


def _grad_tensor(source: Any, like: torch.Tensor) -> torch.Tensor:
    return torch.ones_like(like) if source is ONES else source.tensor


def _gradient(node: Node, grads: list[Any], targets: list[Any], retain: bool) -> Any:
    name = node.name
    own_vjp = node.entry.vjp if node.entry is not None else None
    static = node.static

    def run() -> None:
        saved = node.saved
        if saved is None:
            raise RuntimeError(f"backward of {name}: its forward kept no graph (internal error)")
        kept, leaves = saved
        outs, given = [], []
        results: tuple[torch.Tensor | None, ...]
        for source, out in zip(grads, kept):
            if source is not None and out is not None:
                outs.append(out)
                given.append(_grad_tensor(source, out))
        if own_vjp is not None:
            cotangents = [None if s is None or o is None else _grad_tensor(s, o) for s, o in zip(grads, kept)]
            given = [c for c in cotangents if c is not None]
            every = own_vjp(tuple(cotangents), tuple(leaves), tuple(kept), **static)
            results = tuple(every[p] for p in node.positions)
        elif outs:
            try:
                results = _run_backward(tuple(outs), tuple(given), retain, False, tuple(leaves), True, False)
            except RuntimeError as error:
                if "modified by an inplace operation" in str(error):
                    raise RuntimeError(
                        f"backward of {name}: a value {name} saved for its gradient was modified in place after "
                        f"{name} was recorded (torch: {str(error).splitlines()[0]}); modify a copy instead "
                        f"(y = x.copy()), or modify it after this backward has run"
                    ) from error
                raise
        else:
            results = (None,) * len(leaves)
        if not retain:
            node.saved = None
        for (storage, view, how, meta), g in zip(targets, results):
            if g is not None and g.dtype is not meta[1]:
                g = g.to(meta[1])
            _write(storage, view, how, g, meta, given)

    return run


def _view_gradient(node: Node, source: Any, targets: list[Any]) -> Any:
    rel = node.rel
    shape, dtype, device = node.in_meta[0]
    tdtype, tdevice = dtype.torch, device.torch_device
    ((storage, view, how, meta),) = targets

    def run() -> None:
        with torch.enable_grad():
            leaf = torch.empty(shape, dtype=tdtype, device=tdevice, requires_grad=True)
            out = _views.read(leaf, rel)
        g = _grad_tensor(source, out)
        (result,) = _run_backward((out,), (g,), False, False, (leaf,), True, False)
        _write(storage, view, how, result, meta, (g,))

    return run


def _write(storage: Any, view: Any, how: int, g: torch.Tensor | None, meta: tuple[Any, ...],
           given: Sequence[torch.Tensor]) -> None:  # fmt: skip
    """Put a gradient into an accumulator: overwrite it (first contribution) or add to it.

    ``view`` is set when the accumulator is part of a storage (a ``.grad`` in a
    gradient bucket): then the gradient is written through it.
    """
    if g is None:
        if how == ADD:
            return
        g = torch.zeros(meta[0], dtype=meta[1], device=meta[2])
    if view is not None:
        base = storage.base()
        _views.write(base, view, _views.read(base, view) + g if how == ADD else g)
        return
    if how == ADD:
        storage.tensor.add_(g)
        return
    t = storage.tensor
    if t is not None:
        t.copy_(g)
        return
    g = g.detach().resolve_conj().resolve_neg()
    for other in given:  # torch passes gradients through (add, reshape): never share a tensor with another array
        if _views.shares(g, other):
            g = g.clone()
            break
    storage.tensor = g if g.is_contiguous() else g.contiguous()
