"""Arrays on a cluster node's device: the dispatcher's other push target.

Design note
-----------
A remote array (on ``node1/cpu:0``) has a :class:`RemoteStorage`: an engine
var here, like any storage, but no tensor -- it names the node runtime that
holds the data (``handle``: the cluster's object for that runtime, not the node
name, so that after a reconnect a fresh runtime is never asked for data it
never had) and a key there, an int unique in this process. Shapes and dtypes
are planned here at the call, as for local arrays, so bad input raises at the
call and ``.shape`` never waits.

The one dispatcher (``_dispatch.bind``/``bind_into``) checks and plans every
op as usual; for a remote device its step 4 comes here. Instead of a closure
over tensors it builds a *call* -- a tuple naming the op table entry, with its
static parameters, its operands as keys and views (views are data: offset,
shape, strides) or Python numbers, and the keys of its results -- and pushes
it with ``engine.push_async``, reading and writing the same vars a local op
would. Once the driver's engine makes the op ready, the remote lane's worker
hands the call to the runtime (``handle.submit``: one Ray call) and returns;
the cluster's watcher completes the op when the node answers. So the driver's
engine orders remote ops by the rules of the contract on the engine, a node never sees a call
whose inputs are not final, and independent calls are in flight at once.

The node runs a call through its own copy of this dispatcher on its own
arrays (:func:`execute`): the table entry, its planning, the views, the
in-place writes and their failure rules are the same code on both sides; only
the transport differs. Calls, as sent (tuples, for compact pickles):

| call                                                       | on the node                                  |
|------------------------------------------------------------|----------------------------------------------|
| ``("bind", name, operands, static, out_keys, device, lane, label, record)`` | ``bind`` a table entry; the results under ``out_keys``; ``record``: see ``_remote_grad.py`` |
| ``("into", name, target, operands, static, what, casting, device, lane)`` | ``bind_into``: write through the target's view |
| ``("copy", operand, key, device)``                         | to another device of the same node           |
| ``("write", key, device)`` with ``data``                   | host data (NumPy, or a CPU tensor) onto ``device`` |
| ``("read", operand)``                                      | the value, as NumPy (a tensor for bfloat16)  |
| ``("seed", device, n)``                                    | seed the device's random generator           |
| ``("grad", record, grads, targets, retain, device, lane, label)`` | one gradient op (``_remote_grad.py``)   |

An operand is ``(key, view)`` -- ``view`` ``None`` for the whole storage, else
``(offset, shape, strides)`` -- or a Python number. A target is ``(key, view,
shape, dtype)``: an overwrite of a storage whose producer never ran (it was
skipped for a failed input) makes it on the node. ``device`` is the node's own
name for it (``cpu:0``). A ``bind`` of a data-dependent op answers its results'
shapes; every other call answers ``None`` (``read``: the data).

Copies, on copy lanes as locally (``_copy.py`` routes here when either side is
remote):

| from -> to            | driver lane                      | how                                                |
|-----------------------|----------------------------------|----------------------------------------------------|
| here -> ``nodeX/d``   | ``nodeX/d``'s copy lane (submits) | ``write``: the host value travels with the call    |
| ``nodeX/d`` -> here   | the local device's copy lane     | ``read``, waited for there (a copy worker blocks)  |
| ``nodeX/d`` -> ``nodeY/e`` | ``nodeY/e``'s copy lane (submits) | ``Y.write(X.read())``: node to node, never through here |
| ``nodeX/d`` -> ``nodeX/e`` | ``nodeX/e``'s copy lane (submits) | ``copy`` on the node                            |

Reading a value (``numpy()``, ``item()``) waits for the var, then asks the
runtime for the data (:func:`fetch`). Freeing: when a remote storage is
collected here, its key goes to the runtime's bin (``handle.discard``), sent
with the next call to that node; every op that uses a storage holds it until
the op has finished, so a key is never freed under a pending op.

This module is the array layer's *remote interpreter* (``arrays/_interpreters.py``):
it registers itself there when imported (:data:`INTERPRETER`), and the session
registers the cluster's side at connect (:func:`set_backend`). The array layer
never imports the cluster (imports go downward).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from autopar import engine
from autopar.arrays import _autograd, _views
from autopar.arrays._dtypes import DType
from autopar.arrays._table import TABLE, OpDef
from autopar.devices import COPY, COPY_H2D, Device, cpu
from autopar.errors import DeviceError

Key = int
Done = Callable[[BaseException | None], None]  # an op's complete()
OnValue = Callable[[Any], None]


class Runtime(Protocol):
    """A node runtime, as the cluster hands it out (``cluster._node.RemoteNode``)."""

    name: str

    def submit(self, call: tuple[Any, ...], complete: Done, on_value: OnValue | None = None, data: Any = None) -> None:
        """Send ``call``; on the answer call ``on_value(answer)`` then ``complete()``, or ``complete(error)``."""

    def submit_move(self, source: Any, operand: tuple[Any, ...], key: Key, device: str, complete: Done) -> None:
        """This runtime's ``key`` on ``device`` := ``source``'s operand, node to node."""

    def request(self, call: tuple[Any, ...]) -> Any:
        """Send ``call`` and wait for its answer (bounded slices; a lost node raises NodeLostError)."""

    def check(self) -> None:
        """Raise NodeLostError if the runtime is lost."""

    def discard(self, key: Key) -> None:
        """Free ``key`` on the node (sent with the next call)."""


class Backend(Protocol):
    def runtime(self, device: Device) -> Any:
        """The :class:`Runtime` that holds ``device`` now (its arrays are made there)."""

    def new_key(self) -> Key: ...

    def track(self, runtime: Any, storage: Any) -> None:
        """Remember that ``runtime`` holds ``storage`` (to fail it if the node is lost)."""


backend: Backend | None = None


def set_backend(b: Backend | None) -> None:
    """The cluster session registers itself at connect (``None`` at disconnect)."""
    global backend
    backend = b


def _backend(device: Device) -> Backend:
    b = backend
    if b is None:
        raise DeviceError(f"device {device}: no cluster is connected; call autopar.cluster.connect(address) first")
    return b


class RemoteStorage(_views.Storage):
    """A storage whose data a node runtime holds under ``key``."""

    __slots__ = ("runtime", "key")
    remote = True

    def __init__(self, shape: tuple[int, ...], dtype: DType, device: Device, runtime: Runtime, key: Key) -> None:
        super().__init__(shape, dtype, device)
        self.runtime = runtime
        self.key = key

    def __del__(self) -> None:
        release(self.runtime, self.key)


def release(runtime: Runtime, key: Key) -> None:
    """Free ``key`` on its node (from a ``__del__``: quietly, since at interpreter exit the runtime may be
    half gone)."""
    try:
        runtime.discard(key)
    except Exception:  # noqa: BLE001
        pass


def _make(shape: tuple[int, ...], dtype: DType, device: Device, b: Backend, runtime: Runtime) -> Any:
    storage = RemoteStorage(shape, dtype, device, runtime, b.new_key())
    b.track(runtime, storage)
    return _array.make(shape, dtype, device, storage)


def alloc(shape: tuple[int, ...], dtype: DType, device: Device) -> Any:
    """An array on cluster device ``device`` that nothing has written yet (its first writer makes it there)."""
    b = _backend(device)
    return _make(shape, dtype, device, b, b.runtime(device))


def operand(a: Any) -> tuple[Key, Any]:
    """How a call names array ``a``: its key, and its view as data (None: the whole storage)."""
    v = a._view
    return (a._storage.key, None if v is None else (v.offset, v.shape, v.strides))


def _push(
    runtime: Runtime,
    call: tuple[Any, ...],
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    reads: tuple[engine.Var, ...],
    writes: tuple[engine.Var, ...],
    device: Device,
    lane: str,
    label: str,
    on_value: OnValue | None = None,
) -> None:
    """Push ``call`` as an engine op that completes when ``runtime`` answers.

    The op holds its storages until it finishes (so none is freed under it);
    an input held by another runtime -- the node's runtime was lost and
    started again since -- fails it with the lost runtime's NodeLostError
    (whichever of the two was lost).
    """
    keep = (inputs, outputs)

    def submit(complete: Done) -> None:
        for s in keep[0]:
            if s.runtime is not runtime:
                s.runtime.check()
                runtime.check()  # a gradient op of a record the lost runtime held, into a fresh runtime's .grad
                raise DeviceError(f"{label}: an operand is held by {s.runtime.name}, not {runtime.name}")
        runtime.submit(call, complete, on_value)

    engine.push_async(submit, reads, writes, device, 0, label, lane)


def bind(entry: OpDef, plan: Any, args: Sequence[Any], static: dict[str, Any], device: Device, lane: str,
         state: tuple[engine.Var, ...], label: str) -> Any:  # fmt: skip
    """Step 4 of ``_dispatch.bind`` for a remote device: allocate the results there, push the call."""
    node = _autograd.recording(entry, args, static, plan.out_dtypes, device, lane, label) if _autograd.used else None
    b = _backend(device)
    runtime = b.runtime(device)
    outs = [_make(s, d, device, b, runtime) for s, d in zip(plan.out_shapes, plan.out_dtypes)]
    NDArray = _array.NDArray
    inputs = [a._storage for a in args if type(a) is NDArray]
    storages = [o._storage for o in outs]
    operands = tuple([operand(a) if type(a) is NDArray else a for a in args])
    record = None
    if node is not None:  # the node records the op under a key of its own; this record names it
        record = (b.new_key(), node.positions)
        _autograd.attach(node, outs, args)
        node.remote = _remote_grad.Record(runtime, record[0])
    call = ("bind", entry.name, operands, static, tuple([s.key for s in storages]), device.local_name, lane, label,
            record)  # fmt: skip
    reads = (*[s.var for s in inputs], *state)
    writes = (*[s.var for s in storages], *state)
    on_value = None
    if entry.data_dependent:

        def on_value(shapes: Any) -> None:
            for s, shape in zip(storages, shapes):
                s.shape = tuple(shape)
                s._strides = None

    held = storages if node is None else [*storages, node.remote]  # the record's key is not freed before it is made
    _push(runtime, call, inputs, held, reads, writes, device, lane, label, on_value)
    if entry.data_dependent:
        engine.wait_for_var(storages[0].var)
        for o in outs:
            o._shape = o._storage.shape
    return outs[0] if entry.nout == 1 else tuple(outs)


def bind_into(entry: OpDef, target: Any, args: Sequence[Any], static: dict[str, Any], what: str, casting: str,
              device: Device, lane: str, reads: tuple[engine.Var, ...]) -> Any:  # fmt: skip
    """Step 4 of ``_dispatch.bind_into`` for a remote device: the write runs on the node."""
    runtime = target._storage.runtime
    NDArray = _array.NDArray
    storage = target._storage
    inputs = [a._storage for a in args if type(a) is NDArray]
    operands = tuple([operand(a) if type(a) is NDArray else a for a in args])
    key, view = operand(target)
    call = ("into", entry.name, (key, view, storage.shape, storage.dtype), operands, static, what, casting,
            device.local_name, lane)  # fmt: skip
    _push(runtime, call, [storage, *inputs], (), reads, (storage.var,), device, lane, what)
    return target


# -- copies and reads ------------------------------------------------------------------------


def _wire(t: torch.Tensor) -> Any:
    """A CPU tensor as it travels: NumPy where NumPy has the dtype (Ray moves it without pickling)."""
    try:
        return t.numpy()
    except TypeError:  # bfloat16
        return t


def _own(value: Any) -> torch.Tensor:
    """A tensor this process owns, from what a read answered (the object store's buffers are read-only)."""
    if isinstance(value, np.ndarray):
        if not value.flags.writeable or not value.flags.c_contiguous:
            value = np.array(value, order="C", copy=True)
        return torch.from_numpy(value)
    return value.contiguous() if isinstance(value, torch.Tensor) else torch.as_tensor(value)


def fetch(a: Any) -> torch.Tensor:
    """The value of remote array ``a`` (whose var is ready), as a CPU tensor here. Blocks."""
    return _own(a._storage.runtime.request(("read", operand(a))))


def copy_to_device(src: Any, dst: Device, name: str = "copyto") -> Any:
    """``src`` on ``dst``, where one of them is a cluster node's device (routes in the module note); ``name``: the op's."""
    s = src._storage
    if dst.node is None:  # node -> here: a copy worker here waits for the data
        here = dst if dst.kind == "cpu" else cpu(0)
        out = _array.make(src.shape, src.dtype, here)
        storage = out._storage
        wanted = operand(src)

        def download() -> None:  # holds the source storage (s) until read: its key is not freed before
            storage.tensor = _own(s.runtime.request(("read", wanted)))

        _dispatch.push(download, (s.var,), (storage.var,), here, name, COPY)
        return out if here is dst else _copy.copy_to_device(out, dst)
    b = _backend(dst)
    runtime = b.runtime(dst)
    out = _make(src.shape, src.dtype, dst, b, runtime)
    d = out._storage
    lane = COPY if dst.kind == "cpu" else COPY_H2D
    if src.device.node is None:  # here -> node: the value travels with the call

        def upload(complete: Done) -> None:
            t = _array.value_of(src).detach()
            runtime.submit(("write", d.key, dst.local_name), complete, None, _wire(t.cpu() if t.is_cuda else t))

        engine.push_async(upload, (s.var,), (d.var,), dst, 0, name, lane)
    elif src.device.node == dst.node:
        _push(runtime, ("copy", operand(src), d.key, dst.local_name), [s], [d], (s.var,), (d.var,), dst, lane,
              name)  # fmt: skip
    else:
        wanted = operand(src)
        keep = (s, d)

        def move(complete: Done) -> None:
            keep[0].runtime.check()
            runtime.submit_move(keep[0].runtime, wanted, d.key, dst.local_name, complete)

        engine.push_async(move, (s.var,), (d.var,), dst, 0, name, lane)
    return out


def seed(device: Device, var: engine.Var, n: int) -> None:
    """Seed ``device``'s generator on its node with ``n`` (an op writing the generator's var here)."""
    runtime = _backend(device).runtime(device)
    _push(runtime, ("seed", device.local_name, n), (), (), (), (var,), device, "compute", "random.seed")


# -- the node's side ----------------------------------------------------------------------------


def execute(call: tuple[Any, ...], slots: dict[Key, Any], data: Any = None) -> Any:
    """Run ``call`` on this node's arrays (``slots``: key -> array) and wait for it; return its answer.

    The node runtime (``cluster._runtime``) calls this after checking the
    call names only autopar's ops. Errors raised by the op come back with
    their own type (``engine.wait_for_var``), naming the failed op.
    """
    return start(call, slots, data)()


def start(call: tuple[Any, ...], slots: dict[Key, Any], data: Any = None) -> Callable[[], Any]:
    """Push ``call``'s op on this node's engine; return the wait for its answer (see :func:`execute`).

    Several calls sent together are all started, then waited for: calls the
    driver sent at once were all ready there, so none depends on another.
    """
    kind = call[0]
    if kind == "bind":
        _, name, operands, static, out_keys, device, lane, label = call[:8]
        record = call[8] if len(call) > 8 else None  # (key, positions): record the op under key (_remote_grad.py)
        entry = TABLE[name]
        args = [_local(o, slots) if type(o) is tuple else o for o in operands]
        if record is not None:
            args = _remote_grad.leaves(args, record[1])
        out = _dispatch.bind(entry, args, static, device=_device(device), lane=lane, name=label)
        outs = out if type(out) is tuple else (out,)
        if record is not None:
            _remote_grad.keep(outs, record[0], slots)
        for key, arr in zip(out_keys, outs):
            slots[key] = arr
        var = outs[0]._storage.var
        if entry.data_dependent:
            return lambda: tuple(o.shape for o in outs)  # bind waited for it already
        return lambda: engine.wait_for_var(var)
    if kind == "into":
        _, name, target, operands, static, what, casting, device, lane = call
        key, view, shape, dtype = target
        if key not in slots:  # its producer never ran here (skipped for a failed input): an overwrite makes it
            slots[key] = _array.make(shape, dtype, _device(device))
        t = _local((key, view), slots)
        args = [_local(o, slots) if type(o) is tuple else o for o in operands]
        _dispatch.bind_into(TABLE[name], t, args, static, what=what, casting=casting, device=_device(device),
                            lane=lane)  # fmt: skip
        var = t._storage.var
        return lambda: engine.wait_for_var(var)
    if kind == "read":
        a = _local(call[1], slots)

        def read() -> Any:
            t = a._ready_tensor().detach()
            return _wire(t.cpu() if t.is_cuda else t)

        return read
    if kind in ("write", "copy"):
        if kind == "write":
            _, key, device = call
            arr = _creation.asarray(data, device=_device(device))
        else:
            _, src, key, device = call
            arr = _copy.copy_to_device(_local(src, slots), _device(device))
        slots[key] = arr
        var = arr._storage.var
        return lambda: engine.wait_for_var(var)
    if kind == "grad":
        return _remote_grad.start(call, slots)
    if kind == "seed":
        _, device, n = call
        _random.seed_device(_device(device), n)
        return _nothing
    raise ValueError(f"unknown remote call {kind!r}; expected bind, into, read, write, copy, grad or seed")


def _nothing() -> None:
    return None


def _device(name: str) -> Device:
    found = _devices_here.get(name)
    if found is None:
        found = _devices_here[name] = Device(name)
    return found


_devices_here: dict[str, Device] = {}  # parsed once: a node reads the same few names on every call


def _local(o: tuple[Key, Any], slots: dict[Key, Any]) -> Any:
    key, view = o
    base = slots.get(key)
    if base is None:
        raise KeyError(f"this node holds no data under key {key} (freed, or never made here)")
    if view is None:
        return base
    return _array.view_of(base, _views.View(*view))


class _Interpreter:
    """This module as the array layer's :class:`~autopar.arrays._interpreters.Remote`."""

    bind = staticmethod(bind)
    bind_into = staticmethod(bind_into)
    fetch = staticmethod(fetch)
    copy_to_device = staticmethod(copy_to_device)
    alloc = staticmethod(alloc)
    seed = staticmethod(seed)

    @staticmethod
    def push_grad(node: Any, outs: Sequence[Any], targets: Sequence[Any], retain: bool) -> None:
        _remote_grad.push(node, outs, targets, retain)


from autopar.arrays import _array, _copy, _creation, _dispatch, _interpreters, _random  # noqa: E402
from autopar.cluster import _remote_grad  # noqa: E402

INTERPRETER = _Interpreter()
_interpreters.set_remote(INTERPRETER)
