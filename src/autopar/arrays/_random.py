"""Random numbers, reproducible whatever runs in parallel.

Each device has one generator, guarded by an engine var that every random op
on that device reads and writes: the draws on a device happen in push order, so
``seed(n)`` followed by the same program gives the same numbers on any
engine. ``seed(n)`` seeds every device's generator with ``n`` (devices first
used later start from ``n`` too), as ``torch.manual_seed`` does; it only
writes the generator, so it also replaces a generator whose last draw failed
(contract, failures rule 2). Draws are table entries whose kernels find the generator by
device name (a static parameter: the device's own name where it lives, so
``node1/cpu:0``'s draws use ``cpu:0``'s generator on node1). For a cluster
node's device the driver keeps only the var that orders the draws; the node
makes its generator at the first draw, and ``seed(n)`` is sent there.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import torch

from autopar import engine
from autopar.arrays import _dtypes, _interpreters
from autopar.arrays._array import NDArray, as_device
from autopar.arrays._creation import requiring, shape_arg
from autopar.arrays._dispatch import bind, push
from autopar.arrays._dtypes import DType
from autopar.arrays._table import TABLE, define, fixed
from autopar.devices import Device
from autopar.errors import DeviceError

_lock = threading.Lock()
_generators: dict[str, tuple[engine.Var, torch.Generator | None]] = {}
_seed: int | None = None
_seeded_in: Any = None  # weakref to the tracing interpreter that called seed(n) last, if one did (capture)


def _generator(device: Device) -> tuple[engine.Var, torch.Generator | None]:
    """The var ordering ``device``'s draws, and its generator (``None`` here for a cluster node's
    device: the node keeps its own, and this var orders what is sent there)."""
    key = str(device)
    with _lock:
        found = _generators.get(key)
        if found is not None:
            return found
        var = engine.Var(f"rng:{device}")
        gen = None
        if device.node is None:
            gen = torch.Generator(device=device.torch_device)
            if _seed is not None:
                gen.manual_seed(_seed)
            else:
                gen.seed()
        found = _generators[key] = (var, gen)
    if gen is None and _seed is not None:
        _interpreters.remote.seed(device, var, _seed)  # a node's device first used after seed(n) starts from n too
    elif gen is not None and _seed is not None and _interpreters.active and _seeded_in is not None and \
            _seeded_in() is _interpreters.current() is not None:
        # first used after a seed(n) inside a captured function: seeded at its creation, which a replay
        # would not repeat, so the trace records the seed as an op on the generator's var
        push(_reseeder(gen, _seed), (), (var,), device, "random.seed")
    return found


def _local_generator(name: str) -> torch.Generator:
    """The generator of this process's device ``name``, made on first use (on a node, by its first draw)."""
    found = _generators.get(name)
    gen = (found if found is not None else _generator(Device(name)))[1]
    assert gen is not None, f"{name} is a device of this process"
    return gen


def seed_device(device: Device, n: int) -> None:
    """Seed this process's ``device`` generator now (what a node runs for ``seed`` on the driver)."""
    _local_generator(device.local_name).manual_seed(n)


def seed(n: int) -> None:
    """Seed every device's generator with ``n``."""
    global _seed, _seeded_in
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"random.seed: n={n!r}; expected an int")
    tracer = _interpreters.current() if _interpreters.active else None
    with _lock:
        _seed = n
        _seeded_in = None if tracer is None else weakref.ref(tracer)
        for key in list(_generators):
            try:
                Device(key).check_exists()
            except DeviceError:  # the cores were split differently since: start afresh if it returns
                del _generators[key]
        known = list(_generators.items())
    for key, (var, gen) in known:
        if gen is None:
            _interpreters.remote.seed(Device(key), var, n)
        else:
            push(_reseeder(gen, n), (), (var,), Device(key), "random.seed")


def _reseeder(gen: torch.Generator, n: int) -> Any:
    return lambda: gen.manual_seed(n)


def _draw_kernel(shape: tuple[int, ...], dtype: DType, device: str, kind: str, a: Any, b: Any) -> torch.Tensor:
    return sample(_local_generator(device), kind, shape, dtype, a, b)


def sample(gen: torch.Generator, kind: str, shape: tuple[int, ...], dtype: DType, a: Any, b: Any) -> torch.Tensor:
    """A draw of ``kind`` from ``gen`` (the device's, or a ``Generator``'s: ``_draws``' kernel ends here)."""
    where = gen.device
    if kind == "uniform":
        return torch.empty(shape, dtype=dtype.torch, device=where).uniform_(a, b, generator=gen)
    if kind == "normal":
        return torch.empty(shape, dtype=dtype.torch, device=where).normal_(a, b, generator=gen)
    if kind == "integers":
        return torch.randint(a, b, shape, dtype=dtype.torch, device=where, generator=gen)
    if kind == "permutation":
        return torch.randperm(shape[0], dtype=dtype.torch, device=where, generator=gen)
    raise ValueError(f"unknown draw {kind!r}")


def _choice_kernel(t: torch.Tensor, shape: tuple[int, ...], device: str, replace: bool) -> torch.Tensor:
    gen = _local_generator(device)
    n = t.shape[0]
    count = 1
    for s in shape:
        count *= s
    if replace:
        idx = torch.randint(0, n, (count,), device=t.device, generator=gen)
    else:
        idx = torch.randperm(n, device=t.device, generator=gen)[:count]
    return t[idx].reshape(shape)


define("random", _draw_kernel, fixed(lambda d, s: (s["dtype"],)), shape=lambda op, sh, s: (s["shape"],),
       differentiable=False)  # fmt: skip
define("random.choice", _choice_kernel, fixed(lambda d, s: (d[0],)), shape=lambda op, sh, s: (s["shape"],),
       differentiable=False, kernel_dtype="bits")  # fmt: skip


def _draw(name: str, kind: str, size: Any, device: Any, ctx: Any, dtype: DType, a: Any, b: Any) -> NDArray:
    shape = () if size is None else shape_arg(f"random.{name}", (size,))
    dev = as_device(device, ctx, f"random.{name}")
    var, _ = _generator(dev)
    static = {"shape": shape, "dtype": dtype, "device": dev.local_name, "kind": kind, "a": a, "b": b}
    out: NDArray = bind(TABLE["random"], (), static, device=dev, state=(var,), name=f"random.{name}")
    return out


def _float_dtype(name: str, dtype: Any) -> DType:
    d = _dtypes.default_float() if dtype is None else _dtypes.as_dtype(dtype, f"random.{name}")
    if d.kind != "f":
        raise TypeError(f"random.{name}: dtype={dtype!r}: expected a floating dtype")
    return d


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Draws with array parameters: ``_draws``' (which broadcasts them) from the device generator. They live
# above this module (``_draws`` and ``_generator`` import it), so ``_generator`` registers them here.
ARRAY_DRAWS: dict[str, Callable[..., Any]] = {}


def _arrays_draw(draw: str, op: str, a: Any, b: Any, size: Any, dtype: Any, device: Any, ctx: Any) -> Any:
    """A draw with array parameters (``ARRAY_DRAWS``)."""
    dev = device if device is not None else ctx
    return ARRAY_DRAWS[draw](op, a, b, size, dtype, dev)


def _number(name: str, what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"random.{name}: {what}={value!r}: expected a number (arrays of parameters are not supported)")
    return float(value)


def uniform(low: float = 0.0, high: float = 1.0, size: Any = None, device: Any = None, ctx: Any = None,
            dtype: Any = None) -> NDArray:  # fmt: skip
    """Samples from ``[low, high)``; ``size`` is the shape (a scalar array if None). Array bounds
    broadcast, as NumPy's (the draws of ``_draws``, from this device generator)."""
    if not (_is_number(low) and _is_number(high)):
        return _arrays_draw("uniform_draw", "random.uniform", low, high, size, dtype, device, ctx)
    lo, hi = _number("uniform", "low", low), _number("uniform", "high", high)
    if hi < lo:
        raise ValueError(f"random.uniform: high={high} is below low={low}")
    return _draw("uniform", "uniform", size, device, ctx, _float_dtype("uniform", dtype), lo, hi)


def normal(loc: float = 0.0, scale: float = 1.0, size: Any = None, device: Any = None, ctx: Any = None,
           dtype: Any = None) -> NDArray:  # fmt: skip
    """Samples from a normal distribution with mean ``loc`` and standard deviation ``scale`` (arrays of them
    broadcast, as NumPy's)."""
    if not (_is_number(loc) and _is_number(scale)):
        return _arrays_draw("normal_draw", "random.normal", loc, scale, size, dtype, device, ctx)
    mu, sigma = _number("normal", "loc", loc), _number("normal", "scale", scale)
    if sigma < 0:
        raise ValueError(f"random.normal: scale={scale} must be >= 0")
    return _draw("normal", "normal", size, device, ctx, _float_dtype("normal", dtype), mu, sigma)


def randint(low: int, high: int | None = None, size: Any = None, dtype: Any = None, device: Any = None,
            ctx: Any = None) -> NDArray:  # fmt: skip
    """Integers in ``[low, high)`` (``[0, low)`` with one bound), as NumPy's ``randint``."""
    if high is None:
        low, high = 0, low
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)):
        raise TypeError(f"random.randint: low={low!r}, high={high!r}: expected ints")
    if high <= low:
        raise ValueError(f"random.randint: high={high} must be above low={low}")
    d = _dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype, "random.randint")
    return _draw("randint", "integers", size, device, ctx, d, low, high)


def random(size: Any = None, device: Any = None, ctx: Any = None, dtype: Any = None) -> NDArray:
    """NumPy's ``random.random``: uniform samples in ``[0, 1)``."""
    return uniform(0.0, 1.0, size, device=device, ctx=ctx, dtype=dtype)


def permutation(x: Any, device: Any = None, ctx: Any = None) -> NDArray:
    """A random permutation of ``range(x)`` (an int), or of ``x``'s first axis (an array)."""
    if isinstance(x, int) and not isinstance(x, bool):
        return _draw("permutation", "permutation", (x,), device, ctx, _dtypes.int64, 0, 0)
    from autopar.arrays._creation import asarray

    arr = asarray(x)
    return arr[permutation(arr.shape[0], device=arr.device)]


def choice(a: Any, size: Any = None, replace: bool = True, p: Any = None, device: Any = None,
           ctx: Any = None) -> NDArray:  # fmt: skip
    """Samples from ``a`` (an array, or ``range(a)`` for an int), with or without replacement."""
    from autopar.arrays._creation import arange, asarray

    if p is not None:
        raise ValueError("random.choice: p= (weights) is autopar.random.choice's; this is the unweighted draw")
    if isinstance(a, int) and not isinstance(a, bool):
        arr = arange(a, device=as_device(device, ctx, "random.choice"))
    else:
        arr = asarray(a, device=None if device is None and ctx is None else as_device(device, ctx))
    if arr.ndim != 1:
        raise ValueError(f"random.choice: a must be 1-D; got shape {arr.shape}")
    shape = () if size is None else shape_arg("random.choice", (size,))
    count = 1
    for s in shape:
        count *= s
    if not replace and count > arr.shape[0]:
        raise ValueError(f"random.choice: cannot take {count} samples from {arr.shape[0]} without replacement")
    var, _ = _generator(arr.device)
    static = {"shape": shape, "device": arr.device.local_name, "replace": bool(replace)}
    out: NDArray = bind(TABLE["random.choice"], (arr,), static, state=(var,), name="random.choice")
    return out


def shuffle(x: NDArray) -> None:
    """Shuffle ``x`` in place along its first axis."""
    x[...] = permutation(x)


def _sizes(name: str, dims: tuple[Any, ...], size: Any) -> Any:
    if dims and size is not None:
        raise TypeError(f"{name}: give the shape as positional sizes or as size=, not both")
    if len(dims) == 1 and not isinstance(dims[0], int):
        return tuple(dims[0])
    return dims if dims else size


def rand(*dims: Any, size: Any = None, device: Any = None, ctx: Any = None, dtype: Any = None,
         requires_grad: bool = False) -> NDArray:  # fmt: skip
    """PyTorch's ``rand``: uniform samples in ``[0, 1)``, ``rand(2, 3)`` or ``rand(size=(2, 3))``."""
    out = uniform(0.0, 1.0, _sizes("rand", dims, size) or (), device=device, ctx=ctx, dtype=dtype)
    return requiring(out, requires_grad)


def randn(*dims: Any, size: Any = None, device: Any = None, ctx: Any = None, dtype: Any = None,
          requires_grad: bool = False) -> NDArray:  # fmt: skip
    """PyTorch's ``randn``: standard normal samples."""
    out = normal(0.0, 1.0, _sizes("randn", dims, size) or (), device=device, ctx=ctx, dtype=dtype)
    return requiring(out, requires_grad)
