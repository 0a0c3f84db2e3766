"""The IDX file format of (Fashion-)MNIST: :func:`read_idx`.

An IDX file is a 4-byte magic number -- two zero bytes, a type code, the
number of dimensions -- then each dimension as a big-endian uint32, then the
values, big-endian, in C order. Fashion-MNIST ships four of them, usually
gzipped::

    train-images-idx3-ubyte   60000 x 28 x 28 uint8 (magic 0x00000803)
    train-labels-idx1-ubyte   60000 uint8           (magic 0x00000801)
    t10k-images-idx3-ubyte    10000 x 28 x 28 uint8
    t10k-labels-idx1-ubyte    10000 uint8

Where the files may be and what they are called: ``_local.py``.
"""

from __future__ import annotations

import gzip
import os

import numpy as np

# IDX type codes (the third magic byte) and the big-endian dtypes they name.
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_GZIP_MAGIC = b"\x1f\x8b"


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """The array in the IDX file ``path`` (gzipped or not, whatever its name), in native byte order."""
    path = os.fspath(path)
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise ValueError(f"read_idx: {path} starts like gzip but does not decompress ({error})") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(f"read_idx: {path} does not start with an IDX magic number (0x00 0x00, a type code "
                         f"in {sorted(hex(t) for t in _IDX_TYPES)}, the number of dimensions); got {data[:4]!r}")
    dtype, ndim = np.dtype(_IDX_TYPES[data[2]]), data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"read_idx: {path} ends inside its header ({len(data)} bytes for {ndim} dimensions)")
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise ValueError(f"read_idx: {path} holds {len(data)} bytes; its header (shape {shape}, {dtype.name}) "
                         f"needs {expected}: the file is truncated or not IDX")
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))
