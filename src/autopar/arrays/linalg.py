"""``autopar.linalg``: the Array API standard's linear algebra extension (and NumPy's ``norm`` and ``LinAlgError``)."""

from autopar.arrays._linalg import (
    EighResult,
    LinAlgError,
    QRResult,
    SlogdetResult,
    SVDResult,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    matrix_norm,
    matrix_power,
    matrix_rank,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
    vector_norm,
)
from autopar.arrays._linalg_numpy import EigResult, cond, eig, eigvals, lstsq, multi_dot, tensorinv, tensorsolve
from autopar.arrays._manipulation import matrix_transpose
from autopar.arrays._products import cross, diagonal, matmul, outer, tensordot, trace, vecdot

__all__ = [
    "EigResult", "EighResult", "LinAlgError", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond", "cross", "det",
    "diagonal", "eig", "eigh", "eigvals", "lstsq", "multi_dot",
    "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "norm", "outer",
    "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot",
    "vector_norm",
]  # fmt: skip
