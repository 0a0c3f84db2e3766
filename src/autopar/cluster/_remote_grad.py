"""Gradients of ops on a cluster node's device (the contract on many machines; docs/design/cluster.md §7).

Design note
-----------
The graph of a recorded op is torch's, kept by the forward op (``_autograd.py``),
so for an op on ``node1/cpu:0`` it lives where the kernel ran: on the node.
The node records, the driver names the node's record, and backward sends one
call per gradient op -- the same three pieces as forward ops, and the same code:

- **Forward.** The driver's dispatcher decides whether a call is recorded
  (``_autograd.recording``, as for a local op) and, if so, records a
  :class:`~autopar.arrays._autograd.Node` as usual (its inputs' records, the
  vars its gradient reads) with ``node.remote`` a :class:`Record`: the node's
  runtime and a key. The ``bind`` call carries ``record = (key, positions)``;
  the node runs it through its own dispatcher on its arguments marked as
  leaves at ``positions`` (:func:`leaves`), so the node's dispatcher records
  and its forward op keeps torch's graph -- the one recording path -- and the
  node keeps that ``Node`` under ``key`` among its arrays (:func:`keep`). The
  node's results carry no record: what is recorded is decided on the driver
  only, so an op under ``no_grad()`` here records nothing there.
- **Backward.** ``_backward`` walks and orders the driver's records as for
  local ops and gives each node's inputs' accumulators (``.grad`` of a leaf on
  a node is an array on that node, a remote array here). For a remote node
  :func:`push` pushes one ``push_async`` op reading and writing the same vars
  a local gradient op would (``_backward.gradient_vars``), which sends
  ``("grad", key, grads, targets, retain, device, lane, label)``; the node
  (:func:`start`) pushes ``_backward.push_gradient`` on its record -- the
  gradient op itself -- and answers when it has run. A view node sends its
  view as data instead of a key (a view saves nothing).
- **Failures (the contract's failure rules).** A gradient op's error comes back with its own type
  and fails the accumulators it writes here, hence the ``.grad`` and the
  updates that read them; a node lost fails them with ``NodeLostError``
  (the remote storages are tracked like any other); nothing waits on an
  answer that will not come (the watcher's bounded waits).
- **Freeing.** The record's key is freed on the node (the runtime's bin, like
  an array's key) when the driver's :class:`Record` is collected: when the
  arrays computed from it are gone and no pushed op (its forward, its
  gradient op) still holds it -- a backward may drop the graph at once. A backward without
  ``retain_graph`` drops the saved graph on the node when its op has run.

Not supported: recording a copy between a node's device and another device
(autopar does not record copies), and a backward whose head is a leaf on a
node or two heads from one op there (``_backward`` raises at the call).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from autopar import engine
from autopar.arrays import _autograd, _backward, _views
from autopar.arrays._autograd import Leaf, Node
from autopar.cluster import _remote


class Record:
    """The driver's name for a node's record of one op; its key is freed on the node with this object."""

    __slots__ = ("runtime", "key")

    def __init__(self, runtime: Any, key: int) -> None:
        self.runtime = runtime
        self.key = key

    def __del__(self) -> None:
        _remote.release(self.runtime, self.key)


# -- the driver's side ----------------------------------------------------------------------------


def push(node: Node, outs: Sequence[Any], targets: Sequence[tuple[Any, int]], retain: bool) -> None:
    """Push the gradient op of remote ``node`` (arguments as ``_backward.push_gradient``'s)."""
    ONES = _backward.ONES
    if node.rel is not None:
        (shape, dtype, _), rel = node.in_meta[0], node.rel
        record: Any = (rel.offset, rel.shape, rel.strides, shape, dtype)
        runtime = targets[0][0]._storage.runtime
    else:
        record, runtime = node.remote.key, node.remote.runtime
    grads = tuple([None if o is None else 1 if o is ONES else _remote.operand(o) for o in outs])
    dests = tuple([(*_remote.operand(d), d._storage.shape, d._storage.dtype, how) for d, how in targets])
    label = f"backward {node.name}"
    call = ("grad", record, grads, dests, retain, node.device.local_name, node.lane, label)
    storages = [o._storage for o in outs if o is not None and o is not ONES]
    storages.extend(d._storage for d, _ in targets)
    reads, writes = _backward.gradient_vars(node, outs, targets)
    held = () if node.rel is not None else (node.remote,)  # the node's record is not freed under its gradient op
    _remote._push(runtime, call, storages, held, reads, writes, node.device, node.lane, label)


# -- the node's side ------------------------------------------------------------------------------


def leaves(args: Sequence[Any], positions: Sequence[int]) -> list[Any]:
    """``args`` with those at ``positions`` marked as leaves (same storage), so the dispatcher records the op."""
    out = list(args)
    for p in positions:
        a = out[p].detach()
        a._ag = Leaf(a, "write", True)
        out[p] = a
    _autograd.used = True
    return out


def keep(outs: Sequence[Any], key: int, slots: dict[int, Any]) -> None:
    """Keep the record the dispatcher made for ``outs`` under ``key``; the results themselves carry none."""
    node = None
    for o in outs:
        if type(o._ag) is _autograd.Edge:
            node = o._ag.node
        o._ag = None
    if node is None:
        raise RuntimeError("a recorded remote op recorded nothing on the node (internal error)")
    slots[key] = node


def start(call: tuple[Any, ...], slots: dict[int, Any]) -> Callable[[], None]:
    """Push the gradient op a ``grad`` call asks for; return the wait for it (see ``_remote.start``)."""
    _, record, grads, dests, retain, device, lane, label = call
    dev = _remote._device(device)
    if type(record) is tuple:  # a view node: the view travels as data
        offset, shape, strides, in_shape, in_dtype = record
        node = Node(None, "view", dev, lane, True)
        node.rel = _views.View(offset, shape, strides)
        node.in_meta = ((in_shape, in_dtype, dev),)
    else:
        found = slots.get(record)
        if type(found) is not Node:
            raise KeyError(f"{label}: this node holds no record under key {record} (freed, or never recorded here)")
        node = found
    ONES = _backward.ONES
    outs = [None if g is None else ONES if g == 1 else _remote._local(g, slots) for g in grads]
    targets = []
    for key, view, shape, dtype, how in dests:
        if key not in slots:  # its first contribution: made here
            slots[key] = _remote._array.make(shape, dtype, dev)
        targets.append((_remote._local((key, view), slots), how))
    writes = _backward.push_gradient(node, outs, targets, retain)

    def wait() -> None:
        for var in writes:
            engine.wait_for_var(var)

    return wait
