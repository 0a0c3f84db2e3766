"""Interpreters other than eager execution here: a tracing one per thread, and the cluster's.

The dispatcher (``_dispatch.py``, whose note describes the order) plans
every call, then hands it to an interpreter. Two kinds live outside the
eager one, registered from above (the array layer never imports the layers
that provide them):

- **A tracing interpreter** (:class:`Interpreter`), active on one thread
  inside :func:`interpreting`: every ``bind``/``bind_into`` made on that
  thread goes to it, with the plan, before anything is allocated or pushed.
  This is where ``autopar.capture`` records what a function does. Nested
  ones stack; the innermost gets the call. While none is active anywhere
  (:data:`active` is 0) the dispatcher pays one truth test for this.
- **The remote interpreter** (:class:`Remote`), for devices of a cluster node
  (``node1/cpu:0``), which the cluster layer registers when it is imported
  (``autopar.cluster._remote``). Until then a remote device cannot exist, and
  :data:`remote` raises the error a user would see for it. ``_dispatch``
  (bind, bind_into), ``_array`` (reading a value), ``_copy`` (copies to and
  from a node), ``_random`` (seeding a node's generator) and ``_backward``
  (gradient buffers and gradient ops on a node) call it through
  :data:`remote`, never by module name.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from autopar.errors import DeviceError

if TYPE_CHECKING:
    import torch

    from autopar import engine
    from autopar.arrays._table import OpDef
    from autopar.devices import Device


class Interpreter(Protocol):
    """A tracing interpreter: it takes a thread's calls after planning (``_dispatch``'s note).

    ``read``, ``pushed``, ``made`` and ``backward`` are optional (an interpreter that only watches the
    calls leaves them out, and then reads, direct pushes and backward run as eagerly).

    ``plan`` is the call's :class:`~autopar.arrays._plan.Plan` (result shapes
    and dtypes, kernel dtypes, work). To run the call as eager execution
    would, call ``_dispatch.eager_bind(entry, plan, args, static, **options)``
    (or ``eager_bind_into``), which skip the interpreters of this thread.
    """

    def bind(self, entry: OpDef, plan: Any, args: Sequence[Any], static: dict[str, Any], **options: Any) -> Any:
        """A new result: ``options`` are ``bind``'s (device, lane, out_device, state, inline, name)."""

    def bind_into(self, entry: OpDef, plan: Any, target: Any, args: Sequence[Any], static: dict[str, Any],
                  **options: Any) -> Any:  # fmt: skip
        """A write into ``target``: ``options`` are what (the op's name), casting, device, lane."""

    def read(self, array: Any, what: str) -> None:
        """A value of ``array`` is about to be read on this thread (``float(x)``, ``x.numpy()``): a
        tracing interpreter raises here, since the value is not known while tracing."""

    def pushed(self, fn: Any, reads: tuple[engine.Var, ...], writes: tuple[engine.Var, ...], device: Device,
               name: str, lane: str) -> None:  # fmt: skip
        """An engine op about to be pushed by the array layer outside ``bind`` (gradient ops, optimizer
        updates): a tracing interpreter records it, or says why it cannot."""

    def made(self, array: Any) -> None:
        """``array`` was just made from host data on this thread (``asarray``): a tracing interpreter
        notes its value (a replay makes a new array of it, as each eager call does)."""

    def backward(self, heads: Sequence[Any], head_grads: Sequence[Any] | None, retain_graph: bool, what: str,
                 before: Any, cuts: Any) -> Any:  # fmt: skip
        """``backward(heads)`` called on this thread: return what ``_backward.backward`` returns (the
        leaves written). Run the real one with :func:`passing` around it."""


class _Stack(threading.local):
    interpreters: tuple[Interpreter, ...] = ()
    passing = 0  # inside an interpreter's own eager calls: the hooks below let them through


_stack = _Stack()
_lock = threading.Lock()
active = 0  # interpreters active on any thread: while 0, the dispatcher skips the lookup


def current() -> Interpreter | None:
    """The innermost interpreter active on this thread, if any (None while :func:`passing`)."""
    found = _stack.interpreters
    return found[-1] if found and not _stack.passing else None


@contextmanager
def passing() -> Iterator[None]:
    """Inside the block, this thread's calls go past its interpreters (an interpreter running an
    op eagerly, or the gradient ops of a backward it recorded)."""
    _stack.passing += 1
    try:
        yield
    finally:
        _stack.passing -= 1


def reading(array: Any, what: str) -> None:
    """A blocking read of ``array``'s value: the innermost interpreter may refuse it (capture)."""
    tracer = current()
    read = getattr(tracer, "read", None)  # an interpreter that records calls only may leave it out
    if read is not None:
        read(array, what)


def pushing(fn: Any, reads: tuple[engine.Var, ...], writes: tuple[engine.Var, ...], device: Device, name: str,
            lane: str) -> None:  # fmt: skip
    """An engine op pushed outside ``bind``: the innermost interpreter sees it first."""
    pushed = getattr(current(), "pushed", None)
    if pushed is not None:
        pushed(fn, reads, writes, device, name, lane)


def made(array: Any) -> None:
    """``array`` was just made from host data on this thread (``asarray`` of a list, a NumPy array,
    a copied tensor): the innermost interpreter may note it (capture snapshots it: a replay makes a
    new one)."""
    note = getattr(current(), "made", None)
    if note is not None:
        note(array)


@contextmanager
def interpreting(interpreter: Interpreter) -> Iterator[Interpreter]:
    """Hand this thread's ``bind``/``bind_into`` calls to ``interpreter`` inside the block."""
    global active
    with _lock:
        active += 1
    _stack.interpreters = (*_stack.interpreters, interpreter)
    try:
        yield interpreter
    finally:
        _stack.interpreters = _stack.interpreters[:-1]
        with _lock:
            active -= 1


class Remote(Protocol):
    """What the array layer asks of the cluster (``autopar.cluster._remote`` implements it)."""

    def bind(self, entry: OpDef, plan: Any, args: Sequence[Any], static: dict[str, Any], device: Device, lane: str,
             state: tuple[engine.Var, ...], label: str) -> Any:  # fmt: skip
        """Step 4 of ``_dispatch.bind`` on a node's device: results there, the op sent there."""

    def bind_into(self, entry: OpDef, target: Any, args: Sequence[Any], static: dict[str, Any], what: str,
                  casting: str, device: Device, lane: str, reads: tuple[engine.Var, ...]) -> Any:  # fmt: skip
        """Step 4 of ``_dispatch.bind_into`` on a node's device."""

    def fetch(self, a: Any) -> torch.Tensor:
        """The value of remote array ``a`` (its var ready) as a CPU tensor here; blocks."""

    def copy_to_device(self, src: Any, dst: Device, name: str) -> Any:
        """``src`` on ``dst``, where one of them is a node's device."""

    def alloc(self, shape: tuple[int, ...], dtype: Any, device: Device) -> Any:
        """An array on a node's device that nothing has written yet."""

    def seed(self, device: Device, var: engine.Var, n: int) -> None:
        """Seed the generator of a node's device with ``n``."""

    def push_grad(self, node: Any, outs: Sequence[Any], targets: Sequence[Any], retain: bool) -> None:
        """Push the gradient op of a recorded op that ran on a node's device."""


class _NoCluster:
    """The remote interpreter while no cluster layer is loaded: every call says how to get one."""

    @staticmethod
    def _fail(device: Any) -> DeviceError:
        return DeviceError(f"device {device}: no cluster is connected; call autopar.cluster.connect(address) first")

    def bind(self, entry: Any, plan: Any, args: Any, static: Any, device: Any, *rest: Any) -> Any:
        raise self._fail(device)

    def bind_into(self, entry: Any, target: Any, args: Any, static: Any, what: Any, casting: Any, device: Any,
                  *rest: Any) -> Any:  # fmt: skip
        raise self._fail(device)

    def fetch(self, a: Any) -> Any:
        raise self._fail(a.device)

    def copy_to_device(self, src: Any, dst: Any, name: str) -> Any:
        raise self._fail(dst if dst.node is not None else src.device)

    def alloc(self, shape: Any, dtype: Any, device: Any) -> Any:
        raise self._fail(device)

    def seed(self, device: Any, var: Any, n: int) -> None:
        raise self._fail(device)

    def push_grad(self, node: Any, outs: Any, targets: Any, retain: bool) -> None:
        raise self._fail(node.device)


remote: Remote = _NoCluster()


def set_remote(target: Remote) -> None:
    """The cluster layer registers its interpreter (once, when it is imported)."""
    global remote
    remote = target
