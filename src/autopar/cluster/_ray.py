"""Ray, imported lazily, and every wait on it bounded.

Ray is optional: ``import autopar.cluster`` works without it; the first call
that needs it (:func:`import_ray`) says how to install it.

Waits. Ray catches SIGTERM while a driver blocks in ``ray.get``, so a
``finally`` block after an unbounded wait may never run. :func:`get` waits
in slices (``ray.get(..., timeout=)``) until its deadline, if any, so a
signal's Python handler runs within a slice, and a wait that should be
quick fails with a message instead of hanging. Ray's errors become
autopar's: an actor or node that died is :class:`~autopar.NodeLostError`
naming the node; an error raised by a kernel comes back with its own type.

Transient faults. Ray answers ``ActorUnavailableError`` when it cannot reach
an actor it still believes alive (a network blip, a node whose death Ray
has not confirmed yet); the call may or may not have run. As Ray does for
``max_task_retries``, an *idempotent* call (``_kernels.idempotent``: reads,
uploads, copies, pure ops) is sent again, up to :data:`RETRIES` times after
growing pauses, then the node counts as lost. First each node the call
involves is probed (``_net``): a refused connection at its raylet (or, for
the head, at the cluster's GCS) proves it gone, so it is lost at once. A
call that is not idempotent (an in-place write, a random draw, a gradient
added into ``.grad``) is not sent again: it fails with a
:class:`~autopar.errors.ClusterError` saying so, and the node stays.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from autopar.errors import ClusterError, NodeLostError

INSTALL_HINT = 'pip install "autopar[cluster]"'
POLL_SECONDS = 0.25  # the longest a wait blocks in Ray before Python regains control
RETRIES = 3  # sends again of an idempotent call after a transient fault (Ray's max_task_retries)
FIRST_PAUSE = 0.25  # seconds before the first send again; doubled before each next one


def import_ray(call: str = "autopar.cluster.connect") -> Any:
    """The ``ray`` module; ``ImportError`` with the install hint when it is missing."""
    try:
        import ray
    except ImportError as error:
        raise ImportError(
            f"{call} needs Ray, which is not installed here ({error}); install it with: {INSTALL_HINT}"
        ) from error
    return ray


class EnvPatch:
    """Environment variables (and Ray settings) changed for as long as a connection lasts.

    :meth:`restore` puts back every variable as it was and runs the undo
    actions registered with :meth:`on_restore`, newest first.
    """

    def __init__(self) -> None:
        self._before: dict[str, str | None] = {}
        self._undo: list[Callable[[], object]] = []

    def on_restore(self, undo: Callable[[], object]) -> None:
        self._undo.append(undo)

    def set(self, name: str, value: str) -> None:
        if name not in self._before:
            self._before[name] = os.environ.get(name)
        os.environ[name] = value

    def set_default(self, name: str, value: str) -> None:
        if name not in os.environ:
            self.set(name, value)

    def restore(self) -> None:
        for name, old in self._before.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old
        self._before.clear()
        while self._undo:
            self._undo.pop()()


def get(
    refs: Any,
    *,
    what: str,
    nodes: Sequence[Any],
    timeout: float | None = None,
    on_lost: Callable[[Any, NodeLostError], None] | None = None,
    resend: Callable[[], Any] | None = None,
) -> Any:
    """``ray.get(refs)`` in slices of :data:`POLL_SECONDS`, with Ray's errors made autopar's.

    ``what`` names the call for messages; ``nodes`` are the handles
    (``_node.RemoteNode``) the call involves, the first being where it ran.
    ``timeout`` (seconds; ``None``: as long as the nodes live) raises
    :class:`ClusterError` when passed. ``on_lost(node, error)`` is told which
    node was lost before the error is raised. ``resend`` sends the call
    again (its new refs) after a transient fault; ``None``: the call is not
    idempotent and is not sent again (module note).
    """
    ray = sys.modules["ray"]
    exceptions = ray.exceptions
    deadline = None if timeout is None else time.monotonic() + timeout
    attempt = 0
    while True:
        slice_ = POLL_SECONDS if deadline is None else max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))
        try:
            return ray.get(refs, timeout=slice_)
        except exceptions.GetTimeoutError:
            if deadline is not None and time.monotonic() >= deadline:
                where = ", ".join(n.name for n in nodes)
                raise ClusterError(
                    f"{what} on {where}: no answer within {timeout:g} s; the node may be overloaded or "
                    f"unreachable (ray status shows the cluster's state)"
                ) from None
        except exceptions.RayError as error:
            if is_transient(error):
                verdict = after_transient(error, nodes, what, attempt, resend is not None, on_lost)
                if isinstance(verdict, BaseException):
                    raise verdict from error
                time.sleep(verdict)
                attempt += 1
                refs = resend()  # type: ignore[misc]  # verdict is a pause only for an idempotent call
                continue
            mine = mapped(error, nodes, what, on_lost)
            if mine is error:
                raise
            raise mine from (error if isinstance(mine, NodeLostError) else None)


def is_transient(error: BaseException) -> bool:
    """Ray could not reach an actor it believes alive (``ActorUnavailableError``): the call may have run."""
    exceptions = sys.modules["ray"].exceptions
    cause = getattr(error, "cause", None) if isinstance(error, exceptions.RayTaskError) else error
    return isinstance(cause, exceptions.ActorUnavailableError)


def after_transient(
    error: BaseException, nodes: Sequence[Any], what: str, attempt: int, idempotent: bool,
    on_lost: Callable[[Any, NodeLostError], None] | None = None,
) -> float | BaseException:  # fmt: skip
    """After transient fault number ``attempt + 1`` of a call: seconds to pause before sending it again,
    or the error to fail it with (module note)."""
    for node in nodes:
        gone = node.gone()
        if gone is not None:
            lost = NodeLostError(node.name, f"{what} failed: {gone}")
            if on_lost is not None:
                on_lost(node, lost)
            return lost
    first = _first_line(error)
    if not idempotent:
        return ClusterError(
            f"{what}: {nodes[0].name} could not be reached for a moment ({first}). The call writes in place, "
            f"draws random numbers or adds a gradient, so it may or may not have run there and is not sent "
            f"again: what it writes fails with this error (the node's other arrays are kept)"
        )
    if attempt >= RETRIES:
        node, lost = lost_node(error, nodes, what)
        lost = NodeLostError(node.name, f"{what}: unreachable after {RETRIES} retries over "
                                        f"{FIRST_PAUSE * (2**RETRIES - 1):g} s ({first})")  # fmt: skip
        if on_lost is not None:
            on_lost(node, lost)
        return lost
    return float(FIRST_PAUSE * 2**attempt)


def mapped(
    error: BaseException, nodes: Sequence[Any], what: str, on_lost: Callable[[Any, NodeLostError], None] | None = None
) -> BaseException:
    """The error to raise for a Ray error of a call on ``nodes``: autopar's, or the kernel's own.

    A dead actor or node is :class:`NodeLostError` (``on_lost`` is told which
    node first); a kernel's error comes back with its own type; anything else
    is returned as it is.
    """
    exceptions = sys.modules["ray"].exceptions
    if not isinstance(error, exceptions.RayError):
        return error
    # A call whose argument came from a dead actor fails with a RayTaskError around the loss.
    cause = getattr(error, "cause", None) if isinstance(error, exceptions.RayTaskError) else error
    if isinstance(cause, (exceptions.RayActorError, exceptions.NodeDiedError, exceptions.ObjectLostError,
                          exceptions.WorkerCrashedError, exceptions.LocalRayletDiedError)):
        node, lost = lost_node(cause, nodes, what)
        if on_lost is not None:
            on_lost(node, lost)
        lost.__cause__ = error
        return lost
    if isinstance(cause, BaseException) and cause is not error:
        cause.__cause__ = None
        cause.__suppress_context__ = True
        return cause  # the kernel's own error, with its own type
    return error


def lost_node(error: BaseException, nodes: Sequence[Any], what: str) -> tuple[Any, NodeLostError]:
    """Which of ``nodes`` a Ray failure means was lost, and the error to raise for it.

    An actor error names its actor: the node whose runtime that is. Data lost
    on the way (``ObjectLostError``) was held by the source of a move, the
    last node listed; anything else is pinned on the node the call ran on.
    """
    ray = sys.modules["ray"]
    node = nodes[0]
    actor_id = getattr(error, "actor_id", None)
    if isinstance(error, ray.exceptions.RayActorError) and actor_id is not None:
        for candidate in nodes:
            if candidate.actor_id_hex == actor_id:
                node = candidate
                break
    elif isinstance(error, ray.exceptions.ObjectLostError):
        node = nodes[-1]
    reason = f"{what} failed with {type(error).__name__} ({_first_line(error)})"
    return node, NodeLostError(node.name, reason)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__
