"""NumPy's index objects: ``r_``, ``c_``, ``mgrid``, ``ogrid``, ``s_``, ``index_exp``.

``r_[...]`` concatenates its items along the first axis: arrays as they are,
numbers as one-element arrays, a slice ``a:b:s`` as ``arange(a, b, s)`` (a
complex step ``nj`` means ``linspace(a, b, n)``); a leading string ``"axis"`` or
``"axis,ndmin"`` says where and how deep, as NumPy's does. ``c_`` joins along
the last axis with 1-D items made columns. ``mgrid[...]`` is the dense grid of
its slices (``meshgrid(..., indexing="ij")`` stacked), ``ogrid`` the open one.
``s_``/``index_exp`` give back the key. The objects of ``autopar.numpy``
work in NumPy mode (``0.5`` is float64), ``autopar``'s in the caller's.
"""

from __future__ import annotations

from typing import Any

from autopar.arrays import _manipulation as man


def _in_mode(mode: bool | None, fn: Any, *args: Any) -> Any:
    from autopar.arrays._dtypes import in_mode

    return fn(*args) if mode is None else in_mode(mode, fn, *args)


def _slice_values(op: str, s: slice) -> Any:
    from autopar.arrays._creation import arange, linspace

    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if s.stop is None:
        raise ValueError(f"{op}: a slice needs a stop ({s!r})")
    if isinstance(step, complex):
        return linspace(start, s.stop, int(abs(step)))
    return arange(start, s.stop, step)


class _Concatenator:
    def __init__(self, axis: int, ndmin: int, columns: bool, mode: bool | None = None) -> None:
        self._axis, self._ndmin, self._columns, self._mode = axis, ndmin, columns, mode

    def _numpy_mode_variant(self) -> _Concatenator:
        return type(self)(self._axis, self._ndmin, self._columns, True)

    def __getitem__(self, key: Any) -> Any:
        return _in_mode(self._mode, self._join, key)

    def __len__(self) -> int:
        return 0

    def _join(self, key: Any) -> Any:
        from autopar.arrays._creation import asarray

        op = "c_" if self._columns else "r_"
        items = list(key) if isinstance(key, tuple) else [key]
        axis, ndmin = self._axis, self._ndmin
        if items and isinstance(items[0], str):
            parts = items.pop(0).split(",")
            try:
                axis = int(parts[0])
                ndmin = int(parts[1]) if len(parts) > 1 else ndmin
            except ValueError:
                raise ValueError(f"{op}: directive {','.join(parts)!r}; give 'axis' or 'axis,ndmin' "
                                 "(the matrix directives 'r'/'c' are not supported)") from None  # fmt: skip
        arrays = []
        for item in items:
            x = _slice_values(op, item) if isinstance(item, slice) else man._array_like(item) if hasattr(
                item, "_dtype") else asarray(item)  # fmt: skip
            if x.ndim < ndmin:
                if self._columns and x.ndim == 1 and ndmin == 2:
                    x = man.reshape(x, (-1, 1))
                else:
                    x = man.reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
            arrays.append(x)
        if not arrays:
            return asarray([])
        return man.concat(arrays, axis=axis)


class _Grid:
    def __init__(self, sparse: bool, mode: bool | None = None) -> None:
        self._sparse, self._mode = sparse, mode

    def _numpy_mode_variant(self) -> _Grid:
        return type(self)(self._sparse, True)

    def __getitem__(self, key: Any) -> Any:
        return _in_mode(self._mode, self._grid, key)

    def _grid(self, key: Any) -> Any:
        op = "ogrid" if self._sparse else "mgrid"
        if isinstance(key, slice):
            return _slice_values(op, key)
        axes = [_slice_values(op, k) for k in key]
        if any(a.dtype.kind == "f" for a in axes):
            from autopar.arrays import _dtypes

            axes = [a.astype(_dtypes.default_float()) if a.dtype.kind != "f" else a for a in axes]
        n = len(axes)
        shaped = [man.reshape(a, (1,) * i + (-1,) + (1,) * (n - i - 1)) for i, a in enumerate(axes)]
        if self._sparse:
            return tuple(shaped)
        shape = tuple(a.shape[0] for a in axes)
        return man.stack([man.broadcast_to(s, shape) for s in shaped])


class _Key:
    def __init__(self, as_tuple: bool) -> None:
        self._as_tuple = as_tuple

    def __getitem__(self, key: Any) -> Any:
        return key if not self._as_tuple or isinstance(key, tuple) else (key,)


r_ = _Concatenator(0, 1, False)
c_ = _Concatenator(-1, 2, True)
mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)
s_ = _Key(as_tuple=False)
index_exp = _Key(as_tuple=True)


class broadcast:  # noqa: N801 - NumPy's name
    """NumPy's ``broadcast(*arrays)``: the broadcast ``shape``/``ndim``/``size`` at once; iterating gives one
    tuple of elements per position (reads the arrays once: waits)."""

    def __init__(self, *args: Any) -> None:
        from autopar.arrays._numpy_shapes import broadcast_shapes

        self._arrays = [man._array_like(a) for a in args]
        self.shape = tuple(broadcast_shapes(*(a.shape for a in self._arrays)))
        self.index = 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    nd = ndim

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def numiter(self) -> int:
        return len(self._arrays)

    def __iter__(self) -> Any:
        import numpy as np

        columns = [np.broadcast_to(a.numpy(), self.shape).ravel().tolist() for a in self._arrays]
        return iter(list(zip(*columns))[self.index :])

    def reset(self) -> None:
        self.index = 0
