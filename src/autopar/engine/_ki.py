"""Ctrl-C that leaves the engine consistent (contract, failures rule 6).

Python's SIGINT handler raises ``KeyboardInterrupt`` in the main thread
between any two bytecodes. Landing in the engine's bookkeeping -- after a var
was granted to an op but before the op reached its lane, between running an
op and passing its vars on, inside a wait's ``finally`` -- it would leave a var
"writing" forever, and every later wait would hang. Wrapping each step in
``try``/``except`` cannot fix that: the interrupt can land in the ``except``
block too.

So, as Trio does (``trio/_core/_ki.py``), autopar swaps Python's default
SIGINT handler for one that looks at *where* the main thread was interrupted,
walking the stack from the interrupted frame outwards. The innermost frame
whose code is marked decides:

- a *protected* function (``entry``, ``protect``: the engine's entry points --
  push, the waits, ``complete`` ...): the handler does not raise. It notes the
  interrupt (``deferred``); the entry point raises ``KeyboardInterrupt`` itself
  when its bookkeeping is done (``check``), and a wait ends early;
- an *unprotected* function (``unprotect``: the frame that calls an op's
  function, so an op run on the calling thread is interrupted like any
  Python code, and the runner stores the interrupt as the op's failure), or
  no marked frame at all (the user's code): it raises at once, like Python's.

Marks are code objects kept in two sets, so they cost nothing while nobody
presses Ctrl-C; only the handler walks the stack. Waits in protected
functions on the main thread wait in slices of ``WAIT_SLICE`` seconds, so a
deferred interrupt ends them promptly after they have unwound their own
bookkeeping (waiter counts).

The handler is installed (``install``) only from the main thread, and only
while SIGINT has Python's default handler: a program or framework with its own
handler keeps it, and then an interrupt is raised wherever it lands (contract,
failures rule 6 is not guaranteed there).
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

WAIT_SLICE = 0.05  # seconds: how late a Ctrl-C may end a wait in a protected function

_protected: set[CodeType] = set()
_unprotected: set[CodeType] = set()
_main_ident = threading.main_thread().ident
installed = False
deferred = False  # a Ctrl-C arrived in a protected function and is owed to the main thread


def protect(fn: F) -> F:
    """Mark ``fn``: a Ctrl-C landing while it runs (or what it calls) is deferred."""
    _protected.add(fn.__code__)
    return fn


def entry(fn: F) -> F:
    """Make ``fn`` a protected entry point: a Ctrl-C landing while it runs is deferred,
    then raised when it returns (``check``). For the push path, which cannot afford the
    extra call, ``push_checked`` does the same by hand."""

    def protected(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            if deferred:
                check()

    _protected.add(protected.__code__)  # one code object, shared by every entry point
    return functools.wraps(fn)(protected)  # type: ignore[return-value]


def unprotect(fn: F) -> F:
    """Mark ``fn``: a Ctrl-C landing while it runs (or what it calls) is raised there."""
    _unprotected.add(fn.__code__)
    return fn


def _protected_at(frame: FrameType | None) -> bool:
    while frame is not None:
        code = frame.f_code
        if code in _protected:
            return True
        if code in _unprotected:
            return False
        frame = frame.f_back
    return False


def _handler(signum: int, frame: FrameType | None) -> None:
    global deferred
    if _protected_at(frame):
        deferred = True
        return
    raise KeyboardInterrupt


def install() -> bool:
    """Install the handler if this is the main thread and SIGINT has Python's default one."""
    global installed
    if installed:
        return True
    if threading.get_ident() != _main_ident:
        return False
    try:
        if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return False
        signal.signal(signal.SIGINT, _handler)
    except (ValueError, OSError):  # not the main interpreter, or no signals here
        return False
    installed = True
    return True


def after_fork() -> None:
    """In a forked child the thread that forked is the only one, and the main one."""
    global _main_ident, deferred
    _main_ident = threading.get_ident()
    deferred = False


def on_main_thread() -> bool:
    return threading.get_ident() == _main_ident


def interrupted() -> bool:
    """A Ctrl-C is owed and this is the main thread: a protected wait should end now."""
    return deferred and threading.get_ident() == _main_ident


def check() -> None:
    """Call last in a protected entry point: raise a deferred Ctrl-C.

    Not when the entry point was itself called from protected code (a nested
    entry point): the outermost one raises it, once its own bookkeeping is done.
    """
    global deferred
    if not deferred or threading.get_ident() != _main_ident:
        return
    if _protected_at(sys._getframe(2)):
        return
    deferred = False
    raise KeyboardInterrupt


def raise_now() -> None:
    """Raise the owed Ctrl-C here (a protected wait that has undone its bookkeeping)."""
    global deferred
    deferred = False
    raise KeyboardInterrupt
