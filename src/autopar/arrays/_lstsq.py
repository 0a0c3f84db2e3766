"""NumPy's ``linalg.lstsq`` and ``linalg.cond``.

``lstsq(a, b, rcond=None)`` solves by the SVD, as LAPACK's ``gelsd`` (NumPy's
driver) does: singular values at or below ``rcond * s.max()`` count as zero
(``rcond=None``: machine epsilon times ``max(M, N)``, NumPy 2's default), the
solution is the minimum-norm one, and the result is NumPy's 4-tuple
``(x, residuals, rank, s)``. ``residuals`` holds the squared residual norm of
each column of ``b`` only when the rank is full and ``M > N`` (else it is
empty) -- a shape that depends on the data, so ``lstsq`` waits for its result
(as ``nonzero`` does), and ``rank`` is a Python int, as NumPy's.

``cond(x, p=None)`` is the ratio of the extreme singular values for ``p`` in
``None, 2, -2``, else ``norm(x, p) * norm(inv(x), p)``; a singular matrix gives
``inf`` (NumPy's answer) rather than an error, whatever ``p``.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from autopar.arrays import _dtypes
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._manipulation import _array_like
from autopar.arrays._products import _madds
from autopar.arrays._table import TABLE, define


def _lstsq(a: torch.Tensor, b: torch.Tensor, rcond: float | None) -> tuple[torch.Tensor, ...]:
    m, n = a.shape
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    eps = torch.finfo(s.dtype).eps
    tol = (eps * max(m, n) if rcond is None else rcond) * (s[0] if s.numel() else torch.zeros((), dtype=s.dtype))
    kept = s > tol
    rank = kept.sum()
    b2 = b[:, None] if b.ndim == 1 else b
    inv = torch.where(kept, 1 / torch.where(kept, s, 1), 0).to(u.dtype)
    x = vh.mH @ (inv[:, None] * (u.mH @ b2))
    if m > n and int(rank) == n:
        r = a @ x - b2
        residuals = (r.abs() ** 2).sum(0)
    else:
        residuals = torch.zeros((0,), dtype=s.dtype, device=a.device)
    return (x[:, 0] if b.ndim == 1 else x), residuals, rank, s


def _lstsq_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    for d in dtypes:
        _dtypes.check_category(op, d, "numeric")
    f = _dtypes.to_float(_dtypes.result_type(*dtypes))
    real = _dtypes.REAL_OF.get(f, f)
    return (f, real, _dtypes.int64, real), (f, f)


def _cond(t: torch.Tensor, p: Any) -> torch.Tensor:
    if p is None or p == 2 or p == -2:
        s = torch.linalg.svdvals(t)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        inv, info = torch.linalg.inv_ex(t)
        r = torch.linalg.matrix_norm(t, ord=p) * torch.linalg.matrix_norm(inv, ord=p)
        r = torch.where(info != 0, math.inf, r)
    unexplained = torch.isnan(r) & ~torch.isnan(t).any(-1).any(-1)  # 0 / 0 of a singular matrix: inf, NumPy's
    return torch.where(unexplained, math.inf, r)


def _cond_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    _dtypes.check_category(op, dtypes[0], "numeric")
    f = _dtypes.to_float(dtypes[0])
    return (_dtypes.REAL_OF.get(f, f),), (f,)


define("linalg.lstsq", _lstsq, _lstsq_dtype, nout=4, data_dependent=True, work=_madds, differentiable=False)
define("linalg.cond", _cond, _cond_dtype, work=_madds, differentiable=False)

_CONDS = (None, 1, -1, 2, -2, math.inf, -math.inf, "fro", "nuc")


def lstsq(a: Any, b: Any, rcond: Any = None) -> tuple[Any, Any, int, Any]:
    """NumPy's least squares: ``(x, residuals, rank, s)`` minimizing ``||b - a @ x||`` (waits: see the note)."""
    a, b = _array_like(a), _array_like(b)
    if a.ndim != 2:
        raise ValueError(f"linalg.lstsq: a has shape {a.shape}; it must be 2-D (M, N)")
    if b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise ValueError(f"linalg.lstsq: a of shape {a.shape} and b of shape {b.shape} do not align; "
                         f"b needs shape ({a.shape[0]},) or ({a.shape[0]}, K)")  # fmt: skip
    if rcond is not None and (isinstance(rcond, bool) or not isinstance(rcond, (int, float))):
        raise TypeError(f"linalg.lstsq: rcond={rcond!r}; expected a number or None")
    x, residuals, rank, s = bind(TABLE["linalg.lstsq"], (a, b), {"rcond": None if rcond is None else float(rcond)})
    return x, residuals, int(rank.item()), s


def cond(x: Any, p: Any = None) -> Any:
    """NumPy's condition number of ``x`` (a matrix or a stack) in the norm ``p``."""
    x = _array_like(x)
    if p not in _CONDS:
        raise ValueError(f"linalg.cond: p={p!r}; expected one of None, 1, -1, 2, -2, inf, -inf, 'fro', 'nuc'")
    if x.ndim < 2:
        raise ValueError(f"linalg.cond: the array has shape {x.shape}; it needs at least 2 dimensions")
    if p not in (None, 2, -2) and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.cond: p={p!r} needs square matrices; these are {x.shape[-2:]} (p=None works for any)")
    return bind(TABLE["linalg.cond"], (x,), {"p": p})
