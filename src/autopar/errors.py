"""The exceptions autopar raises itself.

Errors raised *inside* an operation keep their own type (SPEC §4): they are
re-raised, with the failed operation named, on every blocking read of what the
operation wrote. The classes here are for the rules autopar enforces.
"""

from __future__ import annotations

__all__ = ["AutoparError", "DeviceError", "BlockingCallError", "EngineShutdownError"]


class AutoparError(Exception):
    """Base class of the errors autopar raises for its own rules."""


class DeviceError(AutoparError, ValueError):
    """A device that does not exist, or operands that live on different devices."""


class BlockingCallError(AutoparError, RuntimeError):
    """A blocking call (``waitall``, reading a pending value) made inside an engine op.

    The op would wait for work that may be queued behind itself; instead of
    deadlocking, the call raises this.
    """


class EngineShutdownError(AutoparError, RuntimeError):
    """An operation that was cancelled because the interpreter was exiting."""
