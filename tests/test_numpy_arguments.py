"""NumPy's arguments that NumPy programs use, through ``autopar.numpy``, against NumPy itself: round's
decimals, booleans in mean/sum, out=/where=/dtype= on ufuncs and reductions, positional fft sizes,
trapezoid's x, einsum's optimize, sort kinds, bincount's weights, pad modes, order='F', take without axis."""

from __future__ import annotations

from typing import Any

import numpy
import pytest

import autopar.numpy as np


def _out(m: Any, fn: Any, like: Any) -> Any:
    """fn writes into out (a zeros_like of like); the answer is out itself."""
    o = m.zeros_like(like)
    r = fn(o)
    assert r is o
    return o


CASES: dict[str, Any] = {
    "round positional": lambda m: m.round(m.asarray([1.234, -5.678, 2.5]), 1),
    "round keyword": lambda m: m.round(m.asarray([1.2345, 5.6789]), decimals=2),
    "round negative": lambda m: m.round(m.asarray([1234.5, -5678.0]), -2),
    "round ints": lambda m: m.round(m.asarray([1234, -5678, 150]), -2),
    "round method": lambda m: m.asarray([1.234, 5.678]).round(1),
    "around out": lambda m: _out(m, lambda o: m.around(m.asarray([1.26, 2.0]), 1, out=o), m.zeros(2)),
    "bool sum": lambda m: (m.arange(5) > 2).sum(),
    "bool mean": lambda m: (m.arange(5) > 2).mean(),
    "accuracy idiom": lambda m: m.mean(m.asarray([1, 2, 3, 3]) == m.asarray([1, 0, 3, 2])),
    "add out": lambda m: _out(m, lambda o: m.add(m.ones(3), 2.0, out=o), m.zeros(3)),
    "exp out tuple": lambda m: _out(m, lambda o: m.exp(m.ones(3), out=(o,)), m.zeros(3)),
    "divide where out": lambda m: _out(m, lambda o: m.divide(m.asarray([1.0, 2.0, 3.0]), m.asarray([2.0, 0.0, 4.0]),
                                                             out=o, where=m.asarray([2.0, 0.0, 4.0]) != 0),
                                       m.zeros(3)),
    "sqrt where no out": lambda m: m.sqrt(m.asarray([4.0, -1.0]), where=m.asarray([True, False]), out=m.zeros(2)),
    "add dtype": lambda m: m.add(m.arange(3), 1, dtype=m.float32),
    "multiply dtype": lambda m: m.multiply(m.asarray([1, 2]), 2.5, dtype=m.float32),
    "multiply dtype unsafe": lambda m: m.multiply(m.asarray([1.7, 2.2]), 2, dtype=m.int64, casting="unsafe"),
    "sum out": lambda m: _out(m, lambda o: m.sum(m.ones((2, 3)), axis=0, out=o), m.zeros(3)),
    "sum where": lambda m: m.sum(m.arange(4.0), where=m.asarray([True, False, True, True])),
    "sum initial": lambda m: m.sum(m.arange(4), initial=10),
    "sum dtype positional": lambda m: m.sum(m.ones((2, 2)), 0, m.int32),
    "prod where": lambda m: m.prod(m.arange(1.0, 5.0), where=m.asarray([True, False, True, True])),
    "max where initial": lambda m: m.max(m.arange(5.0), where=m.arange(5) < 3, initial=-1.0),
    "min initial": lambda m: m.min(m.arange(5.0), initial=-3.0),
    "max out": lambda m: _out(m, lambda o: m.max(m.arange(6.0).reshape(2, 3), axis=1, out=o), m.zeros(2)),
    "mean where": lambda m: m.mean(m.arange(6.0).reshape(2, 3), axis=1, where=m.asarray([True, False, True])),
    "var where": lambda m: m.var(m.arange(6.0), where=m.arange(6) != 2),
    "std where ddof": lambda m: m.std(m.arange(6.0), ddof=1, where=m.arange(6) > 0),
    "mean dtype": lambda m: m.mean(m.arange(5), dtype=m.float32),
    "any where": lambda m: m.any(m.asarray([True, False]), where=m.asarray([False, True])),
    "all out": lambda m: _out(m, lambda o: m.all(m.asarray([[True, False], [True, True]]), axis=1, out=o),
                              m.zeros(2, dtype=bool)),
    "argmax out": lambda m: _out(m, lambda o: m.argmax(m.asarray([[1, 5], [7, 2]]), axis=1, out=o),
                                 m.zeros(2, dtype=m.int64)),
    "cumsum out": lambda m: _out(m, lambda o: m.cumsum(m.arange(4.0), out=o), m.zeros(4)),
    "matmul out": lambda m: _out(m, lambda o: m.matmul(m.ones((2, 2)), m.ones((2, 2)), out=o), m.zeros((2, 2))),
    "dot out": lambda m: _out(m, lambda o: m.dot(m.ones((2, 2)), m.ones((2, 2)), out=o), m.zeros((2, 2))),
    "clip out": lambda m: _out(m, lambda o: m.clip(m.arange(5.0), 1, 3, out=o), m.zeros(5)),
    "rfft n": lambda m: m.fft.rfft(m.arange(6.0), 8),
    "fft n axis norm": lambda m: m.fft.fft(m.arange(6.0).reshape(2, 3), 4, 0, "ortho"),
    "irfft n": lambda m: m.fft.irfft(m.arange(6.0), 8),
    "fftn s": lambda m: m.fft.fftn(m.ones((2, 3)), (4, 4), (0, 1)),
    "trapezoid x": lambda m: m.trapezoid(m.arange(5.0) ** 2, m.arange(5.0) / 2),
    "trapezoid x axis": lambda m: m.trapezoid(m.ones((3, 4)), m.asarray([0.0, 1.0, 3.0]), axis=0),
    "einsum optimize": lambda m: m.einsum("ij,jk->ik", m.ones((2, 3)), m.ones((3, 2)), optimize=True),
    "einsum greedy": lambda m: m.einsum("i,i->", m.arange(3.0), m.arange(3.0), optimize="greedy"),
    "argsort kind": lambda m: m.argsort(m.asarray([3, 1, 2, 1]), kind="stable"),
    "sort kind": lambda m: m.sort(m.asarray([3.0, 1.0, 2.0]), kind="mergesort"),
    "sort axis None": lambda m: m.sort(m.asarray([[3, 1], [0, 2]]), axis=None),
    "sort method in place": lambda m: (lambda a: (a.sort(kind="quicksort"), a)[1])(m.asarray([3, 1, 2])),
    "argsort method": lambda m: m.asarray([3, 1, 2]).argsort(kind="stable"),
    "bincount weights": lambda m: m.bincount(m.asarray([0, 1, 1, 3]), weights=m.asarray([0.5, 1.0, 2.0, 3.0])),
    "bincount minlength": lambda m: m.bincount(m.asarray([0, 1, 1, 3]), minlength=6),
    "pad edge": lambda m: m.pad(m.asarray([[1, 2], [3, 4]]), 2, mode="edge"),
    "pad reflect": lambda m: m.pad(m.asarray([1, 2, 3, 4]), (2, 3), mode="reflect"),
    "pad reflect wide": lambda m: m.pad(m.asarray([1, 2, 3]), 7, mode="reflect"),
    "pad symmetric": lambda m: m.pad(m.asarray([1.5, 2, 3, 4]), ((5, 1),), mode="symmetric"),
    "pad wrap": lambda m: m.pad(m.asarray([[1, 2, 3], [4, 5, 6]]), ((1, 1), (2, 4)), mode="wrap"),
    "pad constant": lambda m: m.pad(m.asarray([1, 2]), 1, constant_values=9),
    "reshape F": lambda m: m.reshape(m.arange(6), (2, 3), order="F"),
    "reshape F method": lambda m: m.arange(12).reshape(2, 3, 2, order="F"),
    "ravel F": lambda m: m.ravel(m.arange(6).reshape(2, 3), order="F"),
    "ravel F method": lambda m: m.arange(6).reshape(2, 3).ravel("F"),
    "flatten F": lambda m: m.arange(24).reshape(2, 3, 4).flatten(order="F"),
    "take flattens": lambda m: m.take(m.arange(6).reshape(2, 3), [0, 4]),
    "take method flattens": lambda m: m.arange(6).reshape(2, 3).take([[0, 5], [1, 1]]),
    "take axis": lambda m: m.take(m.arange(6).reshape(2, 3), [0, 2], axis=1),
    "take wrap": lambda m: m.take(m.arange(5), [7, -8], mode="wrap"),
    "take clip": lambda m: m.take(m.arange(5), [7, -8], mode="clip"),
    "float64 of a number": lambda m: m.float64(1.5) * m.arange(3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_numpy_arguments_give_numpys_answer(name: str) -> None:
    case = CASES[name]
    want = numpy.asarray(case(numpy))
    got = case(np)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    g = got.numpy()
    assert g.shape == want.shape, name
    numpy.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("call,match", [
    (lambda: np.sort(np.arange(3), order="x"), "order='x' is not supported.*lexsort"),
    (lambda: np.add(np.ones(2), 1, out=numpy.zeros(2)), "out= must be an autopar array"),
    (lambda: np.sqrt(np.ones(2), subok=False), "subok=False is not supported"),
    (lambda: np.max(np.ones(2), where=np.asarray([True, False])), "where= needs initial="),
    (lambda: np.pad(np.ones(2), 1, mode="median"), "mode='median' is not supported; use one of"),
    (lambda: np.pad(np.ones(2), 1, mode="reflect", reflect_type="odd"), "reflect_type='odd' is not supported"),
    (lambda: np.reshape(np.ones(4), (2, 2), order="X"), "order='X'"),
    (lambda: np.add(np.ones(2), np.ones(2), out=np.zeros(2, dtype=int)), "same_kind"),
    (lambda: np.multiply(np.ones(2), 2, dtype=np.int64), "dtype=int64 by the 'same_kind' rule"),
    # arguments the function does not take at all: the table's reason, by the autopar.numpy wrapper
    (lambda: np.zeros(3, order="F"), "zeros: NumPy's order= is not supported: autopar stores arrays in C order"),
    (lambda: np.linalg.svd(np.eye(2), compute_uv=False), "compute_uv= is not supported: linalg.svdvals"),
    (lambda: np.sum(np.ones(2), fooo=1), "unexpected keyword argument 'fooo'"),
])  # fmt: skip
def test_refused_arguments_name_themselves_and_the_fix(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((TypeError, ValueError), match=match):
        call()
