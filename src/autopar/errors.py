"""The exceptions autopar raises itself.

Errors raised *inside* an operation keep their own type (the contract's failure rules): they are
re-raised, with the failed operation named, on every blocking read of what the
operation wrote. The classes here are for the rules autopar enforces.
"""

from __future__ import annotations

__all__ = [
    "AutoparError",
    "AxisError",
    "BlockingCallError",
    "CaptureError",
    "ClusterError",
    "DeviceError",
    "EngineShutdownError",
    "NodeLostError",
]


class AutoparError(Exception):
    """Base class of the errors autopar raises for its own rules."""


class AxisError(AutoparError, ValueError, IndexError):
    """An axis outside an array's dimensions. The standard asks for ``IndexError``
    (``expand_dims``), NumPy raises its ``AxisError`` (both): this is both as well."""


class DeviceError(AutoparError, ValueError):
    """A device that does not exist, or operands that live on different devices."""


class BlockingCallError(AutoparError, RuntimeError):
    """A blocking call (``waitall``, reading a pending value) made inside an engine op.

    The op would wait for work that may be queued behind itself; instead of
    deadlocking, the call raises this.
    """


class EngineShutdownError(AutoparError, RuntimeError):
    """An operation that was cancelled because the interpreter was exiting."""


class CaptureError(AutoparError, RuntimeError):
    """A function that ``autopar.capture`` cannot trace as written: it reads an array's value
    (``float(x)``, ``if x > 0``, ``x.numpy()``), or its shapes depend on data. Raised at trace
    time, naming the line and the fix."""


class ClusterError(AutoparError, RuntimeError):
    """A Ray cluster that cannot be joined or used as asked (``autopar.cluster``)."""


class NodeLostError(AutoparError, RuntimeError):
    """A cluster node, or the autopar runtime actor on it, is gone.

    Raised for every operation that ran on the node or read data held there
    when it was lost; ``node`` is the node's autopar name (``"node1"``).
    Connecting again (``autopar.cluster.connect``) starts a fresh runtime
    on the node if it is still in the cluster; the data it held is gone.
    """

    def __init__(self, node: str, reason: str) -> None:
        self.node = node
        self.reason = reason
        super().__init__(
            f"node {node} was lost: {reason}; the data held there is gone. Call "
            f"autopar.cluster.connect() again to restart its runtime if the node is still in the cluster"
        )

    def __reduce__(self) -> tuple[type[NodeLostError], tuple[str, str]]:
        return (type(self), (self.node, self.reason))
