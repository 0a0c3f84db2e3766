"""``autopar.linalg``: the Array API standard's linear algebra extension (and NumPy's ``norm``)."""

from autopar.arrays._linalg import (
    EighResult,
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
from autopar.arrays._lstsq import cond, lstsq
from autopar.arrays._manipulation import matrix_transpose
from autopar.arrays._products import cross, diagonal, matmul, outer, tensordot, trace, vecdot

__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond", "lstsq", "cross", "det", "diagonal", "eigh",
    "eigvalsh", "inv", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "norm", "outer",
    "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]  # fmt: skip
