"""Calls in NumPy mode: the wrappers ``autopar.numpy`` serves autopar's names through.

Design note
-----------
``autopar.numpy`` holds no op of its own: each name is autopar's function (one
op table), called with this thread in *NumPy mode* (``_dtypes.numpy_mode``;
``arrays/_dtypes.py``'s note says what the mode changes). The wrapper sets
the thread-local flag for the length of the call and clears it after; a call
made while the flag is already set (an ``autopar.numpy`` function that calls
another) runs as is. Arrays made during the call carry the mode
(``Storage.npmode``), so what a program does with them afterwards --
operators, methods, ``autopar``'s own functions -- keeps NumPy's rules without
any wrapper: the dispatcher reads the mark (``_plan``'s note).

``functools.wraps`` keeps each function's name, docstring and signature
(``inspect.signature`` follows ``__wrapped__``), which the namespace test
compares with NumPy's. A ufunc is served as a ufunc in NumPy mode
(``_ufunc.numpy_mode_variant``: its call and its ``reduce``, ``accumulate``,
``outer``, ``at`` run in the mode, and ``isinstance(np.add, np.ufunc)`` holds);
a class or object that makes arrays from its arguments (``poly1d``,
``random.Generator``, ``r_``, ``mgrid``) is served as its
``_numpy_mode_variant()``, which works in NumPy mode; other callable objects with callable attributes are served
through :class:`ModeProxy`, which wraps the call and each such attribute.

A NumPy argument the function does not take fails where Python binds the
call (``got an unexpected keyword argument``); the wrapper turns that error
-- and only that one, raised by the call itself, not from inside -- into one
that names the argument and says why and what to do instead, from the table
of unsupported parameters (``_unsupported``).
"""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Callable
from typing import Any

_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def in_numpy_mode(fn: Callable[..., Any], name: str | None = None) -> Callable[..., Any]:
    """``fn`` called with this thread in NumPy mode (module note); ``name``: NumPy's (``linalg.svd``)."""
    from autopar.arrays._dtypes import numpy_mode  # here, not at import: importing autopar.numpy needs no torch

    qualname = str(name or getattr(fn, "__name__", "function"))

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        state = numpy_mode.__dict__
        before = state.get("on")
        if before is True:  # already inside an autopar.numpy call
            return fn(*args, **kwargs)
        state["on"] = True  # (before False: inside an object that keeps deep learning's mode, _dtypes.in_mode)
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            refused = _refused(qualname, e)
            if refused is e:
                raise
            raise refused from None
        finally:
            if before is None:
                del state["on"]
            else:
                state["on"] = before

    call.__autopar_numpy__ = True  # type: ignore[attr-defined]
    return call


class ModeProxy:
    """A callable object (a ufunc) whose call and callable attributes run in NumPy mode."""

    __slots__ = ("_target", "__dict__")

    def __init__(self, target: Any) -> None:
        self._target = target
        self.__dict__["__doc__"] = getattr(target, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return in_numpy_mode(self._target)(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if callable(value) and not isinstance(value, type):
            value = in_numpy_mode(value)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return repr(self._target)


def serve(value: Any, name: str | None = None) -> Any:
    """``value`` as ``autopar.numpy`` serves it: functions in NumPy mode, other things as they are."""
    from autopar.arrays._dtypes import DType

    if hasattr(value, "_numpy_mode_variant"):  # classes (poly1d, random.Generator) and index objects (r_, mgrid)
        return value._numpy_mode_variant()
    if isinstance(value, (type, types.ModuleType, DType)) or not callable(value):
        return value
    if isinstance(value, _FUNCTIONS):
        return in_numpy_mode(value, name)
    from autopar.arrays import _ufunc

    if isinstance(value, _ufunc.ufunc):  # still a ufunc (isinstance(np.add, np.ufunc)), in NumPy mode
        return _ufunc.numpy_mode_variant(value)
    return ModeProxy(value)


_UNEXPECTED = re.compile(r"got an unexpected keyword argument '(\w+)'")


def _refused(name: str, error: TypeError) -> TypeError:
    """The error for a NumPy argument ``name`` does not take (module note), or ``error`` itself."""
    tb = error.__traceback__
    found = _UNEXPECTED.search(str(error))
    if found is None or tb is None or tb.tb_next is not None:
        return error  # raised inside the function, not by binding the call: keep it
    from autopar.numpy._unsupported import reason

    parameter = found.group(1)
    why = reason(name, parameter)
    if why is None:  # not a parameter the table knows (a typo, or not NumPy's): Python's message says it
        return error
    return TypeError(f"{name}: NumPy's {parameter}= is not supported: {why}")
