"""Running a NumPy program with NumPy and with autopar.numpy and comparing the answers (the program tests)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy

import autopar.numpy as anp


def _as_numpy(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_as_numpy(v) for v in value]
    return numpy.asarray(value)


def _compare(got: Any, want: Any, where: str) -> None:
    """Integers and booleans exactly; floats at rtol 1e-9 (what two float64 BLAS builds agree to)."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, f"{where}[{i}]")
        return
    assert got.shape == want.shape, (where, got.shape, want.shape)
    if want.dtype.kind in "biu":
        assert got.dtype.kind == want.dtype.kind and (got == want).all(), where
    else:
        assert got.dtype == want.dtype, (where, got.dtype, want.dtype)
        numpy.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, err_msg=where)


def _flat(value: Any) -> list[Any]:
    return [x for v in value for x in _flat(v)] if isinstance(value, (tuple, list)) else [value]


def check_same_answer(program: Callable[[Any], Any], name: str) -> None:
    """``program(numpy)`` and ``program(autopar.numpy)`` give the same answer, the latter computed by autopar."""
    want = _as_numpy(program(numpy))
    ours = program(anp)
    assert any(isinstance(v, anp.ndarray) for v in _flat(ours)), f"{name} computed nothing with autopar"
    _compare(_as_numpy(ours), want, name)
