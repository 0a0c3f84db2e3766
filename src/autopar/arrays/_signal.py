"""NumPy's 1-D ``convolve`` and ``correlate`` (modes ``full``, ``same``, ``valid``) as one table entry.

Design note
-----------
Both are slices of one *full cross-correlation* ``c[k] = sum_j a[k + j - (m - 1)] * v[j]``
(``a`` zero-padded by ``m - 1`` on each side, ``m = len(v)``): ``convolve(a, v)``
is the correlation with ``v`` reversed, ``correlate(a, v)`` the correlation with
``v`` conjugated (NumPy's ``correlate`` conjugates its second argument). The
modes pick a window of it: ``full`` all ``n + m - 1`` values, ``valid`` the
``max - min + 1`` where the shorter array lies inside the longer, ``same``
``max(n, m)`` values centred as NumPy centres them (its offset depends on which
array is longer, computed here at the call). The kernel loops over the
shorter array: one multiply-add of the longer one, shifted, per element --
``O(n * m)`` work as NumPy's direct loop, with no ``n x m`` window matrix
(float64 ``conv1d`` builds one: 800 MB and 0.9 s for 10**6 x 101 values;
this loop, in blocks of outputs that stay in cache, takes about 70 ms on one
loaded core, NumPy's about 20 ms), exact for integers.
"""

from __future__ import annotations

from typing import Any

import torch

from autopar.arrays import _manipulation as man
from autopar.arrays._dispatch import bind
from autopar.arrays._table import TABLE, define, promoting

_MODES = ("full", "same", "valid")
_BLOCK = 16384  # outputs per block on a CPU: 128 KB of float64, in L2 while every tap adds to it


def _correlate(a: torch.Tensor, v: torch.Tensor, reverse: bool, conj: bool, start: int, length: int) -> torch.Tensor:
    if reverse:
        v = torch.flip(v, (0,))
    if conj and v.is_complex():
        v = v.conj()
    n, m = a.shape[0], v.shape[0]
    full = torch.zeros(n + m - 1, dtype=a.dtype, device=a.device)
    if m <= n:  # a multiply-add of ``a`` (shifted) per element of the shorter ``v``
        zeros = torch.zeros(m - 1, dtype=a.dtype, device=a.device)
        padded = torch.cat([zeros, a, zeros])
        total = n + m - 1
        block = _BLOCK if a.device.type == "cpu" else total  # on a CPU, in blocks that stay in cache
        taps = [v[j] for j in range(m)]
        for s in range(0, total, block):
            part = full[s : s + block]
            for j in range(m):
                part.addcmul_(padded[s + j : s + j + part.shape[0]], taps[j])
    else:  # per element of the shorter ``a``: its multiple of ``v`` reversed, shifted
        backwards = torch.flip(v, (0,))
        for i in range(n):
            full[i : i + m].addcmul_(backwards, a[i])
    return full[start : start + length].clone()


define("correlate", _correlate, promoting("numeric"), shape=lambda op, sh, s: ((s["length"],),))


def _window(op: str, n: int, m: int, mode: str, convolve: bool) -> tuple[int, int]:
    """(start, length) of ``mode``'s window in the full correlation of lengths ``n`` and ``m``."""
    if mode not in _MODES:
        raise ValueError(f"{op}: mode={mode!r}; expected one of {', '.join(_MODES)}")
    longer, shorter = max(n, m), min(n, m)
    if mode == "full":
        return 0, n + m - 1
    if mode == "valid":
        return shorter - 1, longer - shorter + 1
    if convolve or n >= m:  # NumPy pads the longer array by shorter // 2 on the left
        return (shorter - 1) - shorter // 2, longer
    return n // 2, longer  # correlate with the longer array second: NumPy's window, reversed


def _pair(op: str, a: Any, v: Any) -> tuple[Any, Any]:
    a, v = man._array_like(a), man._array_like(v)
    if a.ndim != 1 or v.ndim != 1:
        a, v = (man.reshape(x, (-1,)) if x.ndim == 0 else x for x in (a, v))
        if a.ndim != 1 or v.ndim != 1:
            raise ValueError(f"{op}: a and v must be 1-D; got shapes {a.shape} and {v.shape}")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{op}: {'a' if a.shape[0] == 0 else 'v'} cannot be empty")
    return a, v


def convolve(a: Any, v: Any, mode: str = "full") -> Any:
    """NumPy's ``convolve``: the discrete linear convolution of two 1-D arrays."""
    a, v = _pair("convolve", a, v)
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    start, length = _window("convolve", a.shape[0], v.shape[0], mode, True)
    return bind(TABLE["correlate"], (a, v), {"reverse": True, "conj": False, "start": start, "length": length})


def correlate(a: Any, v: Any, mode: str = "valid") -> Any:
    """NumPy's ``correlate``: ``c[k] = sum_n a[n + k] * conj(v[n])`` (default mode ``valid``)."""
    a, v = _pair("correlate", a, v)
    start, length = _window("correlate", a.shape[0], v.shape[0], mode, False)
    return bind(TABLE["correlate"], (a, v), {"reverse": False, "conj": True, "start": start, "length": length})
