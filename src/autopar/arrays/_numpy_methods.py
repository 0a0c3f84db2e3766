"""NumPy's array methods and attributes beyond ``_methods.py``: ``itemsize``, ``nbytes``, ``strides``,
``divmod(x, y)``, ``value in x``, ``partition`` (in place), ``argpartition``, ``compress``, ``put``,
``searchsorted``, ``tobytes``, ``flat`` (a :class:`flatiter`).

Each is one line calling the namespace function it names (as in ``_methods.py``,
which attaches this mixin too). ``value in x`` and ``tobytes`` read values, so
they wait; the rest return at once.
"""

from __future__ import annotations

from typing import Any


class flatiter:  # noqa: N801 - NumPy's name
    """``x.flat``: ``x`` as if flattened (C order). Indexing reads or writes ``x`` itself -- also through a
    transposed view, via the multi-indices of the flat positions; iterating reads ``x`` once (waits)."""

    def __init__(self, base: Any) -> None:
        self.base = base

    def _where(self, key: Any) -> tuple[Any, ...]:
        import numpy as np

        positions = np.arange(self.base.size)[key]
        return tuple(np.unravel_index(positions, self.base.shape))

    def __getitem__(self, key: Any) -> Any:
        from autopar.arrays._manipulation import reshape

        if isinstance(key, (int, slice)) or key is Ellipsis:
            return reshape(self.base, (-1,))[key] if self.base._storage_is_c_contiguous() else self.base[self._where(key)]
        return self.base[self._where(key)]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.base[self._where(key)] = value

    def __iter__(self) -> Any:
        return iter(self.base.numpy().ravel().tolist())

    def __len__(self) -> int:
        return int(self.base.size)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        out = self.base.numpy().ravel()
        return out if dtype is None else out.astype(dtype)

    def copy(self) -> Any:
        from autopar.arrays._manipulation import reshape

        return reshape(self.base, (-1,)).copy()


class NumpyMethods:
    @property
    def flat(self) -> flatiter:
        """The array as if flattened: ``x.flat[i]``, ``x.flat[::2] = 0``, ``for v in x.flat``."""
        return flatiter(self)

    def _storage_is_c_contiguous(self) -> bool:
        from autopar.arrays._manipulation import reshape

        try:
            return bool(reshape(self, (-1,))._storage is self._storage)  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - any failure: take the general path
            return False
    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return int(self._dtype.torch.itemsize)  # type: ignore[attr-defined]

    @property
    def nbytes(self) -> int:
        """Bytes of the elements (``size * itemsize``)."""
        return int(self.size * self.itemsize)  # type: ignore[attr-defined]

    @property
    def strides(self) -> tuple[int, ...]:
        """Bytes to step per dimension, as NumPy's C-ordered array of this shape has them."""
        shape, step, out = self.shape, self.itemsize, []  # type: ignore[attr-defined]
        for n in reversed(shape):
            out.append(step)
            step *= max(n, 1)
        return tuple(reversed(out))

    def __divmod__(self, other: Any) -> tuple[Any, Any]:
        from autopar.arrays._numpy import divmod_

        return divmod_(self, other)

    def __rdivmod__(self, other: Any) -> tuple[Any, Any]:
        from autopar.arrays._numpy import divmod_

        return divmod_(other, self)

    def __contains__(self, value: Any) -> bool:
        """``value in x``: whether any element equals ``value`` (reads: waits)."""
        from autopar.arrays._elementwise import call
        from autopar.arrays._reductions import any as any_

        return bool(any_(call("equal", self, value)).item())

    def partition(self, kth: Any, axis: int = -1) -> None:
        """Partition in place (NumPy's method); ``autopar.partition`` gives a new array."""
        from autopar.arrays._numpy_shapes import partition

        self[...] = partition(self, kth, axis)  # type: ignore[index]

    def argpartition(self, kth: Any, axis: int = -1) -> Any:
        from autopar.arrays._numpy_shapes import argpartition

        return argpartition(self, kth, axis)

    def compress(self, condition: Any, axis: Any = None) -> Any:
        from autopar.arrays._numpy_shapes import compress

        return compress(condition, self, axis)

    def put(self, indices: Any, values: Any) -> None:
        from autopar.arrays._numpy_shapes import put

        put(self, indices, values)

    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None) -> Any:
        from autopar.arrays._searching import searchsorted

        return searchsorted(self, v, side=side, sorter=sorter)

    def tobytes(self, order: str = "C") -> bytes:
        """The elements' bytes (reads: waits)."""
        return bytes(self.numpy().tobytes(order=order))  # type: ignore[attr-defined]
