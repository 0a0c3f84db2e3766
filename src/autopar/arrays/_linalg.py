"""The standard's ``linalg`` extension on ``torch.linalg``: one table entry per function.

Shapes come from torch's meta kernels (every ``torch.linalg`` function has
one), dtypes from the standard: floating inputs keep their dtype, integer
inputs become the default float (NumPy would give float64, its default);
eigenvalues, singular values, norms and ``logabsdet`` are real.
``matrix_rank`` gives int64. Functions that return several arrays return
the standard's named tuples.

A matrix a kernel cannot factor or invert (``cholesky`` of one that is not
positive definite, ``inv``, ``solve`` or a negative ``matrix_power`` of a
singular one, an ``eigh``/``svd`` that does not converge) fails the op with
:class:`LinAlgError`, a subclass of NumPy's, so ``except
numpy.linalg.LinAlgError`` written for NumPy catches it; torch's own error is
its ``__cause__``. As every failure inside an op, it is raised where the
result is read; ``autopar.numpy.linalg`` reads at the call for the three
functions NumPy programs guard with ``try``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch

from autopar.arrays import _dtypes
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._manipulation import _array_like, normalize_axes, normalize_axis
from autopar.arrays._products import _madds
from autopar.arrays._table import TABLE, define
from autopar.errors import AutoparError


class LinAlgError(AutoparError, np.linalg.LinAlgError):
    """A matrix the function cannot handle: not positive definite (``cholesky``), singular (``inv``,
    ``solve``), or of the wrong shape (at the call, as NumPy's). A subclass of ``numpy.linalg.LinAlgError``,
    so of ``ValueError``."""


def _raising_linalg_error(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``kernel`` with torch's linear-algebra error raised as :class:`LinAlgError` (module note)."""

    @functools.wraps(kernel)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return kernel(*args, **kwargs)
        except torch.linalg.LinAlgError as e:
            raise LinAlgError(str(e).split("\n")[0].replace("torch.linalg.", "linalg.")) from e  # autopar's name

    return run


def _float_rule(*real: bool, fixed_out: DType | None = None) -> Any:
    """Inputs promoted and made floating; result i is real when ``real[i]``."""

    def rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
        for d in dtypes:
            _dtypes.check_category(op, d, "numeric")
        f = _dtypes.to_float(_dtypes.result_type(*dtypes))
        outs = tuple(fixed_out or (_dtypes.REAL_OF.get(f, f) if r else f) for r in (real or (False,)))
        return outs, (f,) * len(dtypes)

    return rule


def _matrix(op: str, x: Any, square: bool = False) -> Any:
    x = _array_like(x)
    if x.ndim < 2:
        raise LinAlgError(f"linalg.{op}: the array has shape {x.shape}; it needs at least 2 dimensions (a stack of matrices)")
    if square and x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"linalg.{op}: the matrices have shape {x.shape[-2:]}; they must be square")
    return x


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


@_raising_linalg_error
def _cholesky(t: torch.Tensor, upper: bool) -> torch.Tensor:
    return torch.linalg.cholesky(t, upper=upper)


def _eigh(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    w, v = torch.linalg.eigh(t)
    return w, v


def _qr(t: torch.Tensor, mode: str) -> tuple[torch.Tensor, torch.Tensor]:
    q, r = torch.linalg.qr(t, mode=mode)
    return q, r


def _slogdet(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    sign, logabs = torch.linalg.slogdet(t)
    return sign, logabs


def _svd(t: torch.Tensor, full_matrices: bool) -> tuple[torch.Tensor, ...]:
    u, s, vh = torch.linalg.svd(t, full_matrices=full_matrices)
    return u, s, vh


@_raising_linalg_error
def _solve(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if b.ndim == 1:
        return torch.linalg.solve(a, b.unsqueeze(-1).expand(*a.shape[:-1], 1)).squeeze(-1) if a.ndim > 2 else \
            torch.linalg.solve(a, b)  # fmt: skip
    return torch.linalg.solve(a, b)


def _matrix_rank(t: torch.Tensor, *rtols: torch.Tensor, rtol: Any = None) -> torch.Tensor:
    return torch.linalg.matrix_rank(t, rtol=rtols[0] if rtols else rtol)


def _pinv(t: torch.Tensor, *rtols: torch.Tensor, rtol: Any = None) -> torch.Tensor:
    return torch.linalg.pinv(t, rtol=rtols[0] if rtols else rtol)


def _tolerance_rule(fixed_out: DType | None = None) -> Any:
    """The matrices made floating; an array ``rtol`` (one per matrix of the stack) real, in their precision."""

    def rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
        _dtypes.check_category(op, dtypes[0], "numeric")
        f = _dtypes.to_float(dtypes[0])
        if len(dtypes) == 1:
            return (fixed_out or f,), (f,)
        _dtypes.check_category(op, dtypes[1], "real floating-point", "rtol")
        return (fixed_out or f,), (f, _dtypes.REAL_OF.get(f, f))

    return rule


def _with_tolerance(op: str, x: Any, rtol: Any) -> Any:
    """``linalg.<op>(x, rtol=...)``: a number for every matrix, or an array of them (its shape
    broadcastable to the stack's, ``x.shape[:-2]``), as the standard allows."""
    x = _matrix(op, x)
    if rtol is None or isinstance(rtol, (int, float)) and not isinstance(rtol, bool):
        return bind(TABLE[f"linalg.{op}"], (x,), {"rtol": rtol})
    tol, stack = _array_like(rtol), x.shape[:-2]
    if tol.ndim > len(stack) or any(a != 1 and a != b for a, b in zip(tol.shape[::-1], stack[::-1])):
        raise ValueError(f"linalg.{op}: rtol of shape {tol.shape} does not broadcast to the stack of matrices, "
                         f"shape {x.shape[:-2]}; give one tolerance per matrix, or a number")  # fmt: skip
    return bind(TABLE[f"linalg.{op}"], (x, tol))


def _vector_norm(t: torch.Tensor, axis: Any, keepdims: bool, ord: Any) -> torch.Tensor:  # noqa: A002
    return torch.linalg.vector_norm(t, ord=ord, dim=axis, keepdim=keepdims)


def _matrix_norm(t: torch.Tensor, keepdims: bool, ord: Any) -> torch.Tensor:  # noqa: A002
    return torch.linalg.matrix_norm(t, ord=ord, keepdim=keepdims)


define("linalg.cholesky", _cholesky, _float_rule(False), work=_madds)
define("linalg.det", torch.linalg.det, _float_rule(False), work=_madds)
define("linalg.eigh", _raising_linalg_error(_eigh), _float_rule(True, False), nout=2, work=_madds)
define("linalg.eigvalsh", _raising_linalg_error(torch.linalg.eigvalsh), _float_rule(True), work=_madds)
define("linalg.inv", _raising_linalg_error(torch.linalg.inv), _float_rule(False), work=_madds)
def _matrix_power_rule(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    """Floating (the standard's), but in NumPy mode integers to a power n >= 0 stay integers, as NumPy's."""
    d = dtypes[0]
    if _dtypes.numpy_mode.on and d.kind in "iu" and s["n"] >= 0:
        return (d,), (d,)
    return _float_rule(False)(op, dtypes, s)


define("linalg.matrix_power", _raising_linalg_error(lambda t, n: torch.linalg.matrix_power(t, n)), _matrix_power_rule,
       work=_madds)  # fmt: skip
define("linalg.matrix_rank", _matrix_rank, _tolerance_rule(_dtypes.int64), work=_madds, differentiable=False)
define("linalg.pinv", _raising_linalg_error(_pinv), _tolerance_rule(), work=_madds)
define("linalg.qr", _qr, _float_rule(False, False), nout=2, work=_madds)
define("linalg.slogdet", _slogdet, _float_rule(False, True), nout=2, work=_madds)
define("linalg.solve", _solve, _float_rule(False), work=_madds)
define("linalg.svd", _raising_linalg_error(_svd), _float_rule(False, True, False), nout=3, work=_madds)
define("linalg.svdvals", _raising_linalg_error(torch.linalg.svdvals), _float_rule(True), work=_madds)
define("linalg.vector_norm", _vector_norm, _float_rule(True))
define("linalg.matrix_norm", _matrix_norm, _float_rule(True), work=_madds)


def cholesky(x: Any, /, *, upper: bool = False) -> Any:
    return bind(TABLE["linalg.cholesky"], (_matrix("cholesky", x, True),), {"upper": bool(upper)})


def det(x: Any, /) -> Any:
    return bind(TABLE["linalg.det"], (_matrix("det", x, True),))


def eigh(x: Any, /) -> EighResult:
    return EighResult(*bind(TABLE["linalg.eigh"], (_matrix("eigh", x, True),)))


def eigvalsh(x: Any, /) -> Any:
    return bind(TABLE["linalg.eigvalsh"], (_matrix("eigvalsh", x, True),))


def inv(x: Any, /) -> Any:
    return bind(TABLE["linalg.inv"], (_matrix("inv", x, True),))


def matrix_power(x: Any, n: int, /) -> Any:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power: n={n!r} must be an int")
    return bind(TABLE["linalg.matrix_power"], (_matrix("matrix_power", x, True),), {"n": n})


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    return _with_tolerance("matrix_rank", x, rtol)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    return _with_tolerance("pinv", x, rtol)


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode={mode!r}; expected 'reduced' or 'complete'")
    return QRResult(*bind(TABLE["linalg.qr"], (_matrix("qr", x),), {"mode": mode}))


def slogdet(x: Any, /) -> SlogdetResult:
    return SlogdetResult(*bind(TABLE["linalg.slogdet"], (_matrix("slogdet", x, True),)))


def solve(x1: Any, x2: Any, /) -> Any:
    a = _matrix("solve", x1, True)
    b = _array_like(x2)
    n = a.shape[-1]
    if b.ndim == 0 or (b.shape[0] if b.ndim == 1 else b.shape[-2]) != n:
        raise LinAlgError(f"linalg.solve: x1 of shape {a.shape} and x2 of shape {b.shape} do not align; "
                          f"x2 needs {n} rows (shape ({n},) or (..., {n}, k))")  # fmt: skip
    return bind(TABLE["linalg.solve"], (a, b))


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    return SVDResult(*bind(TABLE["linalg.svd"], (_matrix("svd", x),), {"full_matrices": bool(full_matrices)}))


def svdvals(x: Any, /) -> Any:
    return bind(TABLE["linalg.svdvals"], (_matrix("svdvals", x),))


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:  # noqa: A002
    x = _array_like(x)
    axes = None if axis is None else normalize_axes("linalg.vector_norm", axis, x.ndim)
    if ord not in (1, 2, float("inf"), -float("inf"), 0) and not isinstance(ord, (int, float)):
        raise ValueError(f"linalg.vector_norm: ord={ord!r} must be a number or ±inf")
    if axes is None and keepdims:
        return bind(TABLE["linalg.vector_norm"], (x,), {"axis": tuple(range(x.ndim)), "keepdims": True, "ord": ord})
    return bind(TABLE["linalg.vector_norm"], (x,), {"axis": axes, "keepdims": bool(keepdims), "ord": ord})


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:  # noqa: A002
    if ord not in ("fro", "nuc", 1, 2, -1, -2, float("inf"), -float("inf")):
        raise ValueError(f"linalg.matrix_norm: ord={ord!r}; expected 'fro', 'nuc', ±1, ±2 or ±inf")
    return bind(TABLE["linalg.matrix_norm"], (_matrix("matrix_norm", x),), {"keepdims": bool(keepdims), "ord": ord})


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:  # noqa: A002
    """NumPy's ``linalg.norm``: the 2-norm of the flattened array by default."""
    x = _array_like(x)
    if axis is None and (ord is None or x.ndim == 1):
        return vector_norm(x, keepdims=keepdims, ord=2 if ord is None else ord)
    if axis is not None and (isinstance(axis, int) or len(tuple(axis)) == 1):
        return vector_norm(x, axis=axis, keepdims=keepdims, ord=2 if ord is None else ord)
    if axis is not None:
        a, b = (normalize_axis("linalg.norm", a, x.ndim) for a in axis)
        from autopar.arrays._manipulation import moveaxis

        x = moveaxis(x, (a, b), (-2, -1))
    return matrix_norm(x, keepdims=keepdims, ord="fro" if ord is None else ord)
