"""Random draws for NumPy's ``Generator`` and the legacy ``autopar.random`` functions: one table entry.

Design note
-----------
A ``Generator`` (``_generator.py``) is an independent stream: its own engine var orders its
draws (push order, whatever runs in parallel), and it owns one
``torch.Generator`` per device it draws on, each seeded from the same seed,
made at the first draw there. ``default_rng(seed)`` turns ``seed`` into that
seed with NumPy's ``SeedSequence`` (so nearby seeds give unrelated streams,
and ``spawn`` gives children NumPy's way); the same seed gives the same
numbers, on any engine. The numbers are *torch's*, not NumPy's PCG64 bits:
the same distributions, not the same values.

Draws are one table entry, ``random.draw``, whose kernel finds its generator
from a static ``source``: ``("device", name)`` is the device's global
generator (``autopar.random.seed``; the legacy functions below use it),
``("stream", id)`` a Generator's. The kinds are torch's own draws (uniform,
normal, exponential, integers, permutation, poisson, binomial, standard gamma,
multinomial indices); every other distribution (``_distributions.py``) is
made from them with ordinary ops. A stream is found through a weak map from
id to its var; the engine holds the var while a draw is pending, so a
Generator dropped with draws in flight still finds its generators, and one
dropped for good takes them with it.

Parameters that are arrays (``normal(mu, sigma)`` with ``mu`` an array)
broadcast as NumPy's do: the draw is standard (``normal(0, 1)``,
``uniform(0, 1)``, ``exponential(1)``) and the parameters are applied with
ordinary ops; ``poisson`` and ``binomial`` take their parameters as kernel
inputs. With ``size=None`` and number parameters a draw is a 0-d array (NumPy
gives a Python float; reading one here would wait).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any

import numpy as np
import torch

from autopar import engine
from autopar.arrays import _dtypes
from autopar.arrays import _random as legacy
from autopar.arrays._array import NDArray, as_device
from autopar.arrays._creation import asarray, shape_arg
from autopar.arrays._dispatch import bind
from autopar.arrays._dtypes import DType
from autopar.arrays._table import TABLE, define
from autopar.devices import Device

_ids = itertools.count(1)
_lock = threading.Lock()
_vars: weakref.WeakValueDictionary[int, engine.Var] = weakref.WeakValueDictionary()
_torch_gens: weakref.WeakKeyDictionary[engine.Var, dict[str, torch.Generator]] = weakref.WeakKeyDictionary()


def new_stream(seed: int) -> engine.Var:
    """The var that orders a new stream's draws (and, weakly, finds its torch generators)."""
    var = engine.Var("rng:Generator")
    with _lock:
        _vars[var.id] = var
        _torch_gens[var] = {}
    return var


def _torch_generator(source: tuple[Any, ...], device: str) -> torch.Generator:
    if source[0] == "device":
        return legacy._local_generator(device)
    with _lock:
        var = _vars[source[1]]  # alive: the engine holds it while this draw runs
        gens = _torch_gens[var]
        gen = gens.get(device)
        if gen is None:
            gen = gens[device] = torch.Generator(device=Device(device).torch_device)
            gen.manual_seed(source[2])
    return gen


def _draw(*params: torch.Tensor, shape: tuple[int, ...], dtype: DType, kind: str, a: Any, b: Any,
          source: tuple[Any, ...], device: str) -> torch.Tensor:  # fmt: skip
    gen = _torch_generator(source, device)
    if kind == "exponential":
        return torch.empty(shape, dtype=dtype.torch, device=gen.device).exponential_(1.0, generator=gen)
    if kind == "poisson":
        rates = params[0].broadcast_to(shape).contiguous()
        return torch.poisson(rates, generator=gen).to(dtype.torch)
    if kind == "binomial":
        count, prob = (t.broadcast_to(shape).contiguous() for t in params)
        return torch.binomial(count, prob, generator=gen).to(dtype.torch)
    if kind == "gamma":  # standard gamma with shape params[0]
        return torch._standard_gamma(params[0].broadcast_to(shape).contiguous(), generator=gen).to(dtype.torch)
    if kind == "multinomial":  # indices drawn with weights params[0]: a (shape-size,) sample
        n = 1
        for s in shape:
            n *= s
        return torch.multinomial(params[0], n, replacement=a, generator=gen).reshape(shape).to(dtype.torch)
    return legacy.sample(gen, kind, shape, dtype, a, b)  # uniform, normal, integers, permutation


def _draw_dtype(op: str, dtypes: tuple[DType, ...], s: dict[str, Any]) -> Any:
    return (s["dtype"],), (_dtypes.float64,) * len(dtypes)


define("random.draw", _draw, _draw_dtype, shape=lambda op, sh, s: (s["shape"],), differentiable=False)


# -- shared by Generator and the legacy functions --------------------------------------------------


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _size(op: str, size: Any) -> tuple[int, ...] | None:
    return None if size is None else shape_arg(op, (size,))


class Source:
    """Where draws come from: a Generator's stream, or a device's global generator (legacy)."""

    def __init__(self, var: engine.Var | None, seed: int, device: Any) -> None:
        self.var, self.seed, self.device = var, seed, device

    def draw(self, op: str, kind: str, shape: tuple[int, ...], dtype: DType, a: Any = 0, b: Any = 0,
             params: tuple[Any, ...] = (), device: Any = None) -> NDArray:  # fmt: skip
        dev = params[0].device if params else as_device(device if device is not None else self.device, None, op)
        if self.var is None:
            var = legacy._generator(dev)[0]
            source: tuple[Any, ...] = ("device",)
        else:
            if dev.node is not None:
                raise ValueError(f"{op}: a Generator draws on this process's devices; for {dev} use "
                                 "autopar.random.* (seeded with autopar.random.seed), which every node follows")  # fmt: skip
            var, source = self.var, ("stream", self.var.id, self.seed)
        static = {"shape": shape, "dtype": dtype, "kind": kind, "a": a, "b": b, "source": source,
                  "device": dev.local_name}  # fmt: skip
        out: NDArray = bind(TABLE["random.draw"], params, static, device=None if params else dev, state=(var,), name=op)
        return out


def _param(op: str, name: str, v: Any, device: Any) -> Any:
    """A number stays a float; anything else becomes an array (on ``device``)."""
    if _is_number(v):
        return float(v)
    if type(v) is NDArray:
        return v
    return asarray(np.asarray(v, dtype=float), dtype="float64", device=device)


def _broadcast(op: str, size: tuple[int, ...] | None, *params: Any) -> tuple[int, ...]:
    shapes = [p.shape for p in params if type(p) is NDArray]
    shape = np.broadcast_shapes(*shapes) if shapes else ()
    if size is None:
        return tuple(shape)
    try:
        fits = np.broadcast_shapes(shape, size) == tuple(size)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{op}: size={size} does not fit the parameters' broadcast shape {tuple(shape)}")
    return size


def _float_dtype(op: str, dtype: Any) -> DType:
    return legacy._float_dtype(op.split(".", 1)[-1] if "." in op else op, dtype)


def _scaled(base: NDArray, loc: Any, scale: Any) -> Any:
    out: Any = base
    if not (type(scale) is float and scale == 1.0):
        out = out * scale
    if not (type(loc) is float and loc == 0.0):
        out = out + loc
    return out


def uniform_draw(src: Source, op: str, low: Any, high: Any, size: Any, dtype: Any = None, device: Any = None) -> Any:
    d = _float_dtype(op, dtype)
    lo, hi = _param(op, "low", low, device), _param(op, "high", high, device)
    shape = _broadcast(op, _size(op, size), lo, hi)
    if type(lo) is float and type(hi) is float:
        if hi < lo:
            raise ValueError(f"{op}: high={high} is below low={low}")
        return src.draw(op, "uniform", shape, d, lo, hi, device=device)
    u = src.draw(op, "uniform", shape, d, 0.0, 1.0, device=device)
    return _scaled(u, lo, hi - lo)


def normal_draw(src: Source, op: str, loc: Any, scale: Any, size: Any, dtype: Any = None, device: Any = None) -> Any:
    d = _float_dtype(op, dtype)
    mu, sigma = _param(op, "loc", loc, device), _param(op, "scale", scale, device)
    if type(sigma) is float and sigma < 0:
        raise ValueError(f"{op}: scale={scale} must be non-negative")
    shape = _broadcast(op, _size(op, size), mu, sigma)
    if type(mu) is float and type(sigma) is float:
        return src.draw(op, "normal", shape, d, mu, sigma, device=device)
    return _scaled(src.draw(op, "normal", shape, d, 0.0, 1.0, device=device), mu, sigma)


def exponential_draw(src: Source, op: str, scale: Any, size: Any, dtype: Any = None, device: Any = None) -> Any:
    d = _float_dtype(op, dtype)
    beta = _param(op, "scale", scale, device)
    if type(beta) is float and beta < 0:
        raise ValueError(f"{op}: scale={scale} must be non-negative")
    shape = _broadcast(op, _size(op, size), beta)
    return _scaled(src.draw(op, "exponential", shape, d, device=device), 0.0, beta)


def poisson_draw(src: Source, op: str, lam: Any, size: Any, device: Any = None) -> Any:
    if _is_number(lam) and lam < 0:
        raise ValueError(f"{op}: lam={lam} must be non-negative")
    rates = lam if type(lam) is NDArray else asarray(np.asarray(lam, dtype=float), dtype="float64", device=device)
    shape = _broadcast(op, _size(op, size), rates)
    return src.draw(op, "poisson", shape, _dtypes.int64, params=(rates,))


def binomial_draw(src: Source, op: str, n: Any, p: Any, size: Any, device: Any = None) -> Any:
    if _is_number(p) and not 0 <= p <= 1:
        raise ValueError(f"{op}: p={p} must be within [0, 1]")
    if _is_number(n) and n < 0:
        raise ValueError(f"{op}: n={n} must be non-negative")
    count = n if type(n) is NDArray else asarray(np.asarray(n, dtype=float), dtype="float64", device=device)
    prob = p if type(p) is NDArray else asarray(np.asarray(p, dtype=float), dtype="float64", device=count.device)
    shape = _broadcast(op, _size(op, size), count, prob)
    return src.draw(op, "binomial", shape, _dtypes.int64, params=(count, prob))


def integers_draw(src: Source, op: str, low: Any, high: Any, size: Any, dtype: Any, endpoint: bool,
                  device: Any = None) -> Any:  # fmt: skip
    if high is None:
        low, high = 0, low
    d = _dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype, op)
    if d.kind not in "iu":
        raise TypeError(f"{op}: dtype={dtype!r}: expected an integer dtype")
    if not (_is_number(low) and _is_number(high)):
        return _integers_between_arrays(src, op, low, high, size, d, endpoint, device)
    if isinstance(low, (float, np.floating)) or isinstance(high, (float, np.floating)):
        raise TypeError(f"{op}: low={low!r}, high={high!r}: expected ints")
    low, high = int(low), int(high) + (1 if endpoint else 0)
    if high <= low:
        raise ValueError(f"{op}: high={high - (1 if endpoint else 0)} must be above low={low}"
                         f"{' (or equal, with endpoint=True)' if endpoint else ''}")  # fmt: skip
    return src.draw(op, "integers", _size(op, size) or (), d, low, high, device=device)


def _integers_between_arrays(src: Source, op: str, low: Any, high: Any, size: Any, d: DType, endpoint: bool,
                             device: Any) -> Any:  # fmt: skip
    """Bounds that are arrays (broadcast as NumPy's): ``low + floor(u * (high - low))`` from a float64
    uniform ``u``, exact for spans below 2**53 (the bounds are not read, so they are not checked)."""
    from autopar.arrays._elementwise import call

    lo = low if type(low) is NDArray else asarray(np.asarray(low), device=device)
    hi = high if type(high) is NDArray else asarray(np.asarray(high), device=lo.device)
    for name, b in (("low", lo), ("high", hi)):
        if b.dtype.kind not in "iu":
            raise TypeError(f"{op}: {name} holds {b.dtype}; the bounds must be integers")
    shape = _broadcast(op, _size(op, size), lo, hi)
    span = (hi - lo + (1 if endpoint else 0)).astype(_dtypes.float64)
    u = src.draw(op, "uniform", shape, _dtypes.float64, 0.0, 1.0, device=lo.device)
    return (lo + call("floor", u * span).astype(_dtypes.int64)).astype(d)


def permutation_draw(src: Source, op: str, x: Any, axis: int = 0, device: Any = None) -> Any:
    from autopar.arrays._indexing import take
    from autopar.arrays._manipulation import _array_like, normalize_axis

    if _is_number(x) and not isinstance(x, (float, np.floating)):
        return src.draw(op, "permutation", (int(x),), _dtypes.int64, device=device)
    arr = _array_like(x)
    if arr.ndim == 0:
        raise ValueError(f"{op}: x is 0-d; give an int n (a permutation of range(n)) or an array")
    ax = normalize_axis(op, axis, arr.ndim)
    order = src.draw(op, "permutation", (arr.shape[ax],), _dtypes.int64, device=arr.device)
    return take(arr, order, axis=ax)


def choice_draw(src: Source, op: str, a: Any, size: Any, replace: bool, p: Any, axis: int = 0,
                device: Any = None) -> Any:  # fmt: skip
    from autopar.arrays._indexing import take
    from autopar.arrays._manipulation import _array_like, normalize_axis, reshape

    pool = None
    if _is_number(a) and not isinstance(a, (float, np.floating)):
        n = int(a)
        if n <= 0:
            raise ValueError(f"{op}: a={a} must be a positive int (or a non-empty array)")
    else:
        pool = _array_like(a)
        if pool.ndim == 0:
            raise ValueError(f"{op}: a must be an int or an array of at least one dimension; got a 0-d array")
        axis = normalize_axis(op, axis, pool.ndim)
        n = pool.shape[axis]
        device = pool.device
    shape = _size(op, size) or ()
    count = 1
    for s in shape:
        count *= s
    if not replace and count > n:
        raise ValueError(f"{op}: cannot take {count} samples from {n} without replacement (replace=False)")
    if p is not None:
        weights = p if type(p) is NDArray else None
        if weights is None:
            host = np.asarray(p, dtype=float)
            if host.shape != (n,):
                raise ValueError(f"{op}: p has shape {host.shape}; it needs one probability per choice, shape ({n},)")
            if np.any(host < 0) or abs(host.sum() - 1.0) > 1e-8:
                raise ValueError(f"{op}: p must be non-negative and sum to 1 (it sums to {host.sum()!r})")
            if not replace and np.count_nonzero(host) < count:
                raise ValueError(f"{op}: fewer non-zero entries in p than size={size} without replacement")
            weights = asarray(host, dtype="float64", device=device)
        idx = src.draw(op, "multinomial", shape, _dtypes.int64, bool(replace), params=(weights,))
    elif replace:
        idx = src.draw(op, "integers", shape, _dtypes.int64, 0, n, device=device)
    else:
        idx = src.draw(op, "permutation", (n,), _dtypes.int64, device=device)[:count]
        idx = reshape(idx, shape)
    if pool is None:
        return idx
    picked = take(pool, reshape(idx, (-1,)), axis=axis)
    return reshape(picked, pool.shape[:axis] + shape + pool.shape[axis + 1 :])
