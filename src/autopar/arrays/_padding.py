"""NumPy's ``pad``: ``constant`` with torch's kernel, and ``edge``, ``wrap``, ``reflect``, ``symmetric`` as
one gather per padded axis.

For the index modes, each padded axis of length ``n`` gets an index list
of length ``before + n + after`` saying which source element each output
element copies (``index_select``), computed on the host at the call from
the widths alone (no data):

- ``edge``: ``clip(i - before, 0, n - 1)``
- ``wrap``: ``(i - before) mod n``
- ``reflect`` (mirror without repeating the edge): period ``2n - 2``,
  ``j = (i - before) mod (2n - 2)``, then ``2n - 2 - j`` when ``j >= n``
- ``symmetric`` (mirror repeating the edge): period ``2n``, ``2n - 1 - j``
  when ``j >= n``

which is what NumPy gives for any widths, wider than the axis included. The
gather moves bits (``kernel_dtype="bits"``), so every dtype pads exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from autopar.arrays import _manipulation as man
from autopar.arrays._dispatch import bind
from autopar.arrays._table import TABLE, define, same

MODES = ("constant", "edge", "wrap", "reflect", "symmetric")


def _gather(t: torch.Tensor, indices: tuple[tuple[int, ...] | None, ...]) -> torch.Tensor:
    for axis, index in enumerate(indices):
        if index is not None:
            t = t.index_select(axis, torch.tensor(index, dtype=torch.int64, device=t.device))
    return t if any(i is not None for i in indices) else t.clone()


define("pad", lambda t, widths, value: torch.nn.functional.pad(t, widths, value=value), same(), kernel_dtype="bits")
define("pad_index", _gather, same(), kernel_dtype="bits")


def _index(mode: str, n: int, before: int, after: int) -> tuple[int, ...]:
    i = np.arange(-before, n + after)
    if mode == "edge":
        j = np.clip(i, 0, n - 1)
    elif mode == "wrap":
        j = i % n
    elif mode == "reflect":
        if n == 1:
            j = np.zeros_like(i)
        else:
            j = i % (2 * n - 2)
            j = np.where(j >= n, 2 * n - 2 - j, j)
    else:  # symmetric
        j = i % (2 * n)
        j = np.where(j >= n, 2 * n - 1 - j, j)
    return tuple(int(v) for v in j)


def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0, **kwargs: Any) -> Any:
    """NumPy's ``pad`` in modes ``constant``, ``edge``, ``wrap``, ``reflect``, ``symmetric`` (module note)."""
    if callable(mode) or mode not in MODES:
        raise ValueError(f"pad: mode={mode!r} is not supported; use one of {', '.join(MODES)}")
    if kwargs:
        name = next(iter(kwargs))
        fix = "reflect_type='even' is what reflect and symmetric do" if name == "reflect_type" else \
            f"pad with mode='edge' or 'constant' instead"  # fmt: skip
        if not (name == "reflect_type" and kwargs[name] == "even" and len(kwargs) == 1):
            raise TypeError(f"pad: {name}={kwargs[name]!r} is not supported; {fix}")
    a = man._array_like(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=int), (a.ndim, 2)).tolist()
    if any(w < 0 for pair in widths for w in pair):
        raise ValueError(f"pad: pad_width={pad_width!r} has a negative width; widths are counts of elements >= 0")
    if mode == "constant":
        if not isinstance(constant_values, (bool, int, float, complex)):
            raise TypeError(f"pad: constant_values={constant_values!r}; only one number is supported (the same "
                            f"on every side); pad in several calls for different values")  # fmt: skip
        flat: list[int] = []
        for before, after in reversed(widths):
            flat += [before, after]
        return bind(TABLE["pad"], (a,), {"widths": tuple(flat), "value": constant_values})
    for n, (before, after) in zip(a.shape, widths):
        if n == 0 and before + after > 0:
            raise ValueError(f"pad: mode={mode!r} cannot pad an empty axis (shape {a.shape}); use mode='constant'")
    index = tuple(None if before == after == 0 else _index(mode, n, before, after)
                  for n, (before, after) in zip(a.shape, widths))  # fmt: skip
    return bind(TABLE["pad_index"], (a,), {"indices": index})
