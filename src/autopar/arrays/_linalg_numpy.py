"""NumPy's ``linalg`` beyond the standard: ``lstsq``, ``cond``, ``eig``, ``eigvals``, ``multi_dot``,
``tensorinv``, ``tensorsolve`` (the last two reshape to a matrix problem, NumPy's steps).

``lstsq(a, b, rcond=None)`` solves by the SVD, as LAPACK's ``gelsd`` (NumPy's
driver) does: singular values at or below ``rcond * s.max()`` count as zero
(``rcond=None``: machine epsilon times ``max(M, N)``, NumPy 2's default), the
solution is the minimum-norm one, and the result is NumPy's 4-tuple
``(x, residuals, rank, s)``. ``residuals`` holds the squared residual norm of
each column of ``b`` only when the rank is full and ``M > N`` (else it is
empty) -- a shape that depends on the data, so ``lstsq`` waits for its result
(as ``nonzero`` does), and ``rank`` is a Python int, as NumPy's.

``eig``/``eigvals`` of a general matrix (LAPACK's ``geev``, as NumPy) compute
complex eigenvalues; NumPy returns them real when the input is real and every
imaginary part is zero -- a dtype that depends on the data, so for a real
input these two wait for their result to decide (as ``lstsq`` does).
``multi_dot`` multiplies in the order NumPy's matrix-chain rule picks, so
its rounding is NumPy's.

``cond(x, p=None)`` is the ratio of the extreme singular values for ``p`` in
``None, 2, -2``, else ``norm(x, p) * norm(inv(x), p)``; a singular matrix gives
``inf`` (NumPy's answer) rather than an error, whatever ``p``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch

from autopar.arrays import _dtypes
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._linalg import LinAlgError
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
        raise LinAlgError(f"linalg.lstsq: a has shape {a.shape}; it must be 2-D (M, N)")
    if b.ndim not in (1, 2) or b.shape[0] != a.shape[0]:
        raise LinAlgError(f"linalg.lstsq: a of shape {a.shape} and b of shape {b.shape} do not align; "
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
        raise LinAlgError(f"linalg.cond: the array has shape {x.shape}; it needs at least 2 dimensions")
    if p not in (None, 2, -2) and x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"linalg.cond: p={p!r} needs square matrices; these are {x.shape[-2:]} (p=None works for any)")
    return bind(TABLE["linalg.cond"], (x,), {"p": p})


class EigResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


def _eig_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    _dtypes.check_category(op, dtypes[0], "numeric")
    f = _dtypes.to_float(dtypes[0])
    c = _dtypes.complex_of(f)
    return ((c, c) if op == "linalg.eig" else (c,)), (f,)


define("linalg.eig", lambda t: tuple(torch.linalg.eig(t)), _eig_dtype, nout=2, work=_madds, differentiable=False)
define("linalg.eigvals", lambda t: torch.linalg.eigvals(t), _eig_dtype, work=_madds, differentiable=False)


def _square(op: str, x: Any) -> Any:
    x = _array_like(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"linalg.{op}: the array has shape {x.shape}; it needs square matrices (..., n, n)")
    return x


def _real_if_real(x: Any, *outs: Any) -> tuple[Any, ...]:
    """NumPy's rule: a real input whose eigenvalues are all real gives real results (reads them: waits)."""
    from autopar.arrays._elementwise import call
    from autopar.arrays._reductions import all as all_

    if x.dtype.kind == "c" or not bool(all_(call("equal", call("imag", outs[0]), 0)).item()):
        return outs
    return tuple(call("real", o) for o in outs)


def eig(a: Any) -> EigResult:
    """Eigenvalues and right eigenvectors of a general square matrix (NumPy's ``EigResult``)."""
    x = _square("eig", a)
    w, v = bind(TABLE["linalg.eig"], (x,))
    return EigResult(*_real_if_real(x, w, v))


def eigvals(a: Any) -> Any:
    """Eigenvalues of a general square matrix (real when they all are, for a real input: NumPy's rule)."""
    x = _square("eigvals", a)
    return _real_if_real(x, bind(TABLE["linalg.eigvals"], (x,)))[0]


def _chain_order(shapes: list[tuple[int, int]]) -> Any:
    """NumPy's matrix-chain order: ``split[i][j]`` where the product of matrices i..j splits."""
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = -1
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] == -1 or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(arrays: Any, *, out: Any = None) -> Any:
    """NumPy's ``multi_dot``: the product of 2-D arrays (the first and last may be 1-D), in the cheapest order."""
    from autopar.arrays._manipulation import reshape
    from autopar.arrays._products import matmul

    xs = [_array_like(a) for a in arrays]
    if len(xs) < 2:
        raise ValueError(f"linalg.multi_dot: needs at least 2 arrays; got {len(xs)}")
    first_1d, last_1d = xs[0].ndim == 1, xs[-1].ndim == 1
    if first_1d:
        xs[0] = reshape(xs[0], (1, -1))
    if last_1d:
        xs[-1] = reshape(xs[-1], (-1, 1))
    for i, x in enumerate(xs):
        if x.ndim != 2:
            raise ValueError(f"linalg.multi_dot: array {i} has shape {x.shape}; all but the first and last must be 2-D")
    if len(xs) == 2:
        result = matmul(xs[0], xs[1])
    elif len(xs) == 3:  # NumPy's closed form for three
        (a0, a1), (b1,), (c1,) = xs[0].shape, xs[1].shape[1:], xs[2].shape[1:]
        cost1 = a0 * b1 * (a1 + c1)
        cost2 = a1 * c1 * (a0 + b1)
        result = matmul(matmul(xs[0], xs[1]), xs[2]) if cost1 < cost2 else matmul(xs[0], matmul(xs[1], xs[2]))
    else:
        split = _chain_order([x.shape for x in xs])

        def product(i: int, j: int) -> Any:
            return xs[i] if i == j else matmul(product(i, split[i][j]), product(split[i][j] + 1, j))

        result = product(0, len(xs) - 1)
    if first_1d and last_1d:
        result = reshape(result, ())
    elif first_1d or last_1d:
        result = reshape(result, (-1,))
    if out is not None:
        out[...] = result
        return out
    return result


def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of ``a`` seen as a matrix of its first ``ind`` axes by the rest (NumPy's)."""
    from autopar.arrays._linalg import inv
    from autopar.arrays._manipulation import reshape

    x = _array_like(a)
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind={ind!r} must be a positive integer")
    old = x.shape
    rows = 1
    for k in old[ind:]:
        rows *= k
    return reshape(inv(reshape(x, (rows, -1))), old[ind:] + old[:ind])


def tensorsolve(a: Any, b: Any, axes: Any = None) -> Any:
    """``x`` with ``tensordot(a, x, axes=x.ndim) == b`` (NumPy's)."""
    from autopar.arrays._linalg import solve
    from autopar.arrays._manipulation import permute_dims, reshape

    x, y = _array_like(a), _array_like(b)
    n = x.ndim
    if axes is not None:
        order = list(range(n))
        for k in axes:
            order.remove(k)
            order.insert(n, k)
        x = permute_dims(x, tuple(order))
    old = x.shape[-(n - y.ndim):]
    size = 1
    for k in old:
        size *= k
    if x.size != size * size:
        raise ValueError(f"linalg.tensorsolve: a of shape {x.shape} and b of shape {y.shape}: a's trailing axes "
                         "must make a square problem (prod(a.shape[b.ndim:])**2 == a.size)")  # fmt: skip
    return reshape(solve(reshape(x, (size, size)), reshape(y, (-1,))), old)
