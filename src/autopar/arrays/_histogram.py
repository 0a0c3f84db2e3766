"""NumPy's histograms: ``histogram``, ``histogram_bin_edges``, ``histogram2d``, ``histogramdd``.

Design note
-----------
Two table entries, neither of which waits for data:

``histogram.edges``
    ``bins`` equal bins over ``range`` (or the data's own minimum and
    maximum, found on the device): NumPy's ``linspace`` formula
    (``arange(n + 1) * ((hi - lo) / n) + lo``, the last edge set to ``hi``),
    so float64 edges are NumPy's to the bit. An empty range widens by 0.5
    each way, as NumPy's does. The edges' dtype is the data's floating dtype
    (float64 for integer data), NumPy's rule.
``histogram.count``
    Counts (or sums of ``weights``) per bin, for one or more dimensions,
    given the edges of each. A value lands in bin ``i`` when
    ``edges[i] <= x < edges[i + 1]``; the last bin also takes its right edge;
    values outside the edges are dropped. For one dimension of equal bins
    (``histogram(a, bins=int)``) the bin comes from NumPy's own arithmetic,
    ``int((x - lo) / (hi - lo) * n)`` corrected by one where rounding put it
    on the wrong side of an edge, so values on an edge land where NumPy puts
    them. Counts are int64, sums of weights have the weights' dtype;
    ``density`` divides by the total and the bin widths (float64, as NumPy).

The results' shapes come from the number of bins, never from the data, so a
histogram is pushed like any op. A range that is not finite (data with NaN
or inf and no ``range=``) is NumPy's ``ValueError``; here it is found on the
device, so the edges come out NaN instead -- pass ``range=`` for such data.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np
import torch

from autopar.arrays import _dtypes
from autopar.arrays import _manipulation as man
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._table import TABLE, define


def _edges(x: torch.Tensor, bins: int, range: Any) -> torch.Tensor:  # noqa: A002 - NumPy's name
    dt = x.dtype if x.is_floating_point() else torch.float64
    def fill(v: float) -> torch.Tensor:  # made on the device: no copy from the host, no sync
        return torch.full((), v, dtype=torch.float64, device=x.device)

    if range is not None:
        lo, hi = fill(float(range[0])), fill(float(range[1]))
    elif x.numel() == 0:
        lo, hi = fill(0.0), fill(1.0)
    else:
        lo, hi = x.min().to(torch.float64), x.max().to(torch.float64)
    same = lo == hi
    lo, hi = torch.where(same, lo - 0.5, lo).to(dt), torch.where(same, hi + 0.5, hi).to(dt)
    step = (hi - lo) / bins
    out = torch.arange(bins + 1, dtype=dt, device=x.device) * step + lo
    out[-1] = hi
    return out


def _count(*ts: torch.Tensor, dims: int, weighted: bool, density: bool, uniform: bool) -> torch.Tensor:
    values, edges = ts[:dims], ts[dims : 2 * dims]
    w = ts[2 * dims] if weighted else None
    sizes = [len(e) - 1 for e in edges]
    keep: torch.Tensor | None = None
    flat: torch.Tensor | None = None
    for x, e, n in zip(values, edges, sizes):
        common = torch.promote_types(x.dtype, e.dtype)  # compared in a dtype that holds both (int edges, float data)
        x, e = x.to(common), e.to(common)
        if uniform:  # NumPy's equal-bin arithmetic, then its one-off corrections (NaN and far values: dropped)
            lo, hi = e[0], e[-1]
            i = ((x - lo) / (hi - lo) * n).to(torch.int64).clamp_(0, n - 1)
            i -= (x < e[i]).to(torch.int64)
            i += ((x >= e[i + 1]) & (i != n - 1)).to(torch.int64)
            inside = (x >= lo) & (x <= hi)
        else:
            i = torch.searchsorted(e, x.contiguous(), right=True) - 1
            i = torch.where(x == e[-1], n - 1, i)
            inside = (i >= 0) & (i < n)
        keep = inside if keep is None else keep & inside
        flat = i if flat is None else flat * n + i
    assert keep is not None and flat is not None
    total = math.prod(sizes)
    where = torch.where(keep, flat, total).reshape(-1)  # what is dropped is counted in one bin more, cut off
    if w is None or w.is_complex():
        hist = torch.zeros(total + 1, dtype=torch.int64 if w is None else w.dtype, device=where.device)
        hist.index_add_(0, where, torch.ones_like(where) if w is None else w.reshape(-1))
        hist = hist[:total]
    else:
        hist = torch.bincount(where, weights=w.reshape(-1).to(torch.float64), minlength=total + 1)[:total].to(w.dtype)
    hist = hist.reshape(sizes)
    if dims > 1 and w is None:
        hist = hist.to(torch.float64)  # histogramdd counts in float64, NumPy's
    if density:
        h = hist.to(torch.float64)
        width = torch.ones((), dtype=torch.float64, device=h.device)
        for d, e in enumerate(edges):
            shape = [1] * dims
            shape[d] = sizes[d]
            width = width * torch.diff(e.to(torch.float64)).reshape(shape)
        return h / width / h.sum()
    return hist


def _edges_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    _dtypes.check_category("histogram", dtypes[0], "real")
    d = dtypes[0]
    return ((d if d.kind == "f" else _dtypes.float64),), None


def _count_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    for d in dtypes[: s["dims"]]:
        _dtypes.check_category("histogram", d, "real")
    if s["density"]:
        return (_dtypes.float64,), None
    if s["weighted"]:
        w = dtypes[2 * s["dims"]]
        _dtypes.check_category("histogram", w, "numeric", "weights")
        return ((_dtypes.int64 if w.kind in "bu" else w),), (None,) * (len(dtypes) - 1) + (
            (_dtypes.int64,) if w.kind in "bu" else (None,))  # fmt: skip
    return (_dtypes.int64 if s["dims"] == 1 else _dtypes.float64,), None


define("histogram.edges", _edges, _edges_dtype, shape=lambda op, sh, s: ((s["bins"] + 1,),), differentiable=False)
define("histogram.count", _count, _count_dtype, differentiable=False,
       shape=lambda op, sh, s: (tuple(e[0] - 1 for e in sh[s["dims"] : 2 * s["dims"]]),))  # fmt: skip


# -- the functions ---------------------------------------------------------------------------------


def _range(op: str, range: Any) -> tuple[float, float] | None:  # noqa: A002
    if range is None:
        return None
    lo, hi = (float(v) for v in range)
    if lo > hi:
        raise ValueError(f"{op}: range={range!r}: max must be larger than min")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"{op}: range={range!r} must be finite")
    return lo, hi


def _bin_edges(op: str, x: Any, bins: Any, range: Any) -> tuple[Any, bool]:  # noqa: A002
    """(edges, equal bins?) for one dimension's values ``x`` (1-D)."""
    if isinstance(bins, str):
        raise ValueError(f"{op}: bins={bins!r}: estimators by name are not supported; give the number of bins "
                         "(bins=10) or the edges (bins=[0, 1, 2])")  # fmt: skip
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ValueError(f"{op}: bins={bins} must be a positive integer")
        edges = bind(TABLE["histogram.edges"], (x,), {"bins": int(bins), "range": _range(op, range)})
        return edges, True
    from autopar.arrays import _array
    from autopar.arrays._creation import asarray

    if type(bins) is not _array.NDArray:
        host = np.asarray(bins)
        if host.ndim != 1 or host.size < 2:
            raise ValueError(f"{op}: bins must be an int or a 1-D sequence of at least 2 edges; got shape {host.shape}")
        if np.any(np.diff(host) < 0):
            raise ValueError(f"{op}: bins must increase monotonically; got {bins!r}")
        bins = asarray(host, device=x.device)  # returned as given (integer edges stay integers, NumPy's)
    elif bins.ndim != 1 or bins.shape[0] < 2:
        raise ValueError(f"{op}: bins must be 1-D with at least 2 edges; got shape {bins.shape}")
    return bins, False


def _weights(op: str, weights: Any, shape: tuple[int, ...], like: Any) -> Any:
    from autopar.arrays._creation import asarray

    w = asarray(weights, device=like.device)
    if w.shape != shape:
        raise ValueError(f"{op}: weights of shape {w.shape} must have the data's shape {shape}")
    return man.reshape(w, (-1,))


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:  # noqa: A002
    """The edges ``histogram`` would use."""
    x = man.reshape(man._array_like(a), (-1,))
    return _bin_edges("histogram_bin_edges", x, bins, range)[0]


def histogram(a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> tuple[Any, Any]:  # noqa: A002
    """NumPy's ``histogram``: ``(hist, bin_edges)``; ``bins`` an int or the edges."""
    a = man._array_like(a)
    x = man.reshape(a, (-1,))
    edges, uniform = _bin_edges("histogram", x, bins, range)
    args = [x, edges]
    if weights is not None:
        args.append(_weights("histogram", weights, a.shape, a))
    static = {"dims": 1, "weighted": weights is not None, "density": bool(density), "uniform": uniform}
    return bind(TABLE["histogram.count"], tuple(args), static), edges


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> tuple[Any, list[Any]]:  # noqa: A002
    """NumPy's ``histogramdd``: ``sample`` is (N, D) (or D arrays of N); returns ``(hist, [edges per dimension])``."""
    from autopar.arrays import _array

    if isinstance(sample, (list, tuple)) and sample and not isinstance(sample[0], (int, float)):
        cols = [man.reshape(man._array_like(s), (-1,)) for s in sample]
    else:
        s = man._array_like(sample)
        if s.ndim == 1:
            s = man.reshape(s, (-1, 1))
        if s.ndim != 2:
            raise ValueError(f"histogramdd: sample of shape {s.shape}; expected (N, D)")
        cols = [s[:, d] for d in builtins.range(s.shape[1])]
    dims = len(cols)
    if isinstance(bins, (int, np.integer)) or type(bins) is _array.NDArray:
        bins = [bins] * dims
    if len(bins) != dims:
        raise ValueError(f"histogramdd: {len(bins)} bins for {dims} dimensions; give one per dimension, or one int")
    ranges = [None] * dims if range is None else list(range)
    if len(ranges) != dims:
        raise ValueError(f"histogramdd: {len(ranges)} ranges for {dims} dimensions; give one (min, max) per dimension")
    edges = [_bin_edges("histogramdd", c, b, r)[0] for c, b, r in zip(cols, bins, ranges)]
    args = [*cols, *edges]
    if weights is not None:
        args.append(_weights("histogramdd", weights, (cols[0].shape[0],), cols[0]))
    static = {"dims": dims, "weighted": weights is not None, "density": bool(density), "uniform": False}
    return bind(TABLE["histogram.count"], tuple(args), static), edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None) -> tuple[Any, Any, Any]:  # noqa: A002
    """NumPy's ``histogram2d``: ``(H, xedges, yedges)``; ``H[i, j]`` counts x in bin i and y in bin j."""
    if not isinstance(bins, (int, np.integer)) and len(bins) != 2:
        bins = [bins, bins]  # one array of edges for both
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]

