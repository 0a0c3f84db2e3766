"""Random numbers, reproducible whatever runs in parallel.

Each device has one generator, guarded by an engine var that every random op
on that device writes: the draws on a device happen in push order, so
``seed(n)`` followed by the same program gives the same numbers on any
engine. ``seed(n)`` seeds every device's generator with ``n`` (devices first
used later start from ``n`` too), as ``torch.manual_seed`` does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

from autopar import engine
from autopar.ndarray import _dtypes, _shapes
from autopar.ndarray._core import TINY_NUMEL, NDArray, _push_kernel, as_device, make
from autopar.devices import Device
from autopar.errors import DeviceError

_lock = threading.Lock()
_generators: dict[Device, tuple[engine.Var, torch.Generator]] = {}
_seed: int | None = None


def _generator(device: Device) -> tuple[engine.Var, torch.Generator]:
    with _lock:
        found = _generators.get(device)
        if found is None:
            gen = torch.Generator(device=device.torch_device)
            if _seed is not None:
                gen.manual_seed(_seed)
            else:
                gen.seed()
            found = _generators[device] = (engine.Var(f"rng:{device}"), gen)
        return found


def seed(n: int) -> None:
    """Seed every device's generator with ``n``."""
    global _seed
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"random.seed: n={n!r}; expected an int")
    with _lock:
        _seed = n
        for device in list(_generators):
            try:
                device.check_exists()
            except DeviceError:  # the cores were split differently since: start afresh if it returns
                del _generators[device]
        known = list(_generators.items())
    for device, (var, gen) in known:
        engine.push(_reseed(gen, n), writes=[var], device=device, name="random.seed")


def _reseed(gen: torch.Generator, n: int) -> Callable[[], object]:
    return lambda: gen.manual_seed(n)


def _draw(name: str, size: Any, device: Any, ctx: Any, dtype: Any, fill: Any) -> NDArray:
    shape = () if size is None else _shapes.normalize_shape(size, "size")
    dev = as_device(device, ctx, f"random.{name}")
    tdtype = _dtypes.DEFAULT_FLOAT if dtype is None else _dtypes.to_torch_dtype(dtype)
    if not tdtype.is_floating_point:
        raise TypeError(f"random.{name}: dtype={dtype!r}: expected a floating dtype")
    var, gen = _generator(dev)
    out = make(shape, tdtype, dev)
    storage = out._storage
    where = dev.torch_device

    def run() -> None:
        t = torch.empty(shape, dtype=tdtype, device=where)
        fill(t, gen)
        storage.tensor = t

    _push_kernel(run, (), (storage.var, var), dev, f"random.{name}", out.size <= TINY_NUMEL and dev.kind == "cpu")
    return out


def _number(name: str, what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"random.{name}: {what}={value!r}: expected a number (arrays of parameters are not supported)")
    return float(value)


def uniform(low: float = 0.0, high: float = 1.0, size: Any = None, device: Any = None, ctx: Any = None, dtype: Any = None) -> NDArray:
    """Samples from ``[low, high)``; ``size`` is the shape (a scalar array if None)."""
    lo, hi = _number("uniform", "low", low), _number("uniform", "high", high)
    if hi < lo:
        raise ValueError(f"random.uniform: high={high} is below low={low}")
    return _draw("uniform", size, device, ctx, dtype, lambda t, g: t.uniform_(lo, hi, generator=g))


def normal(loc: float = 0.0, scale: float = 1.0, size: Any = None, device: Any = None, ctx: Any = None, dtype: Any = None) -> NDArray:
    """Samples from a normal distribution with mean ``loc`` and standard deviation ``scale``."""
    mu, sigma = _number("normal", "loc", loc), _number("normal", "scale", scale)
    if sigma < 0:
        raise ValueError(f"random.normal: scale={scale} must be >= 0")
    return _draw("normal", size, device, ctx, dtype, lambda t, g: t.normal_(mu, sigma, generator=g))


def _sizes(name: str, dims: tuple[Any, ...], size: Any) -> Any:
    if dims and size is not None:
        raise TypeError(f"{name}: give the shape as positional sizes or as size=, not both")
    if len(dims) == 1 and not isinstance(dims[0], int):
        return tuple(dims[0])
    return dims if dims else size


def rand(*dims: Any, size: Any = None, device: Any = None, ctx: Any = None, dtype: Any = None) -> NDArray:
    """PyTorch's ``rand``: uniform samples in ``[0, 1)``, ``rand(2, 3)`` or ``rand(size=(2, 3))``."""
    return uniform(0.0, 1.0, _sizes("rand", dims, size) or (), device=device, ctx=ctx, dtype=dtype)


def randn(*dims: Any, size: Any = None, device: Any = None, ctx: Any = None, dtype: Any = None) -> NDArray:
    """PyTorch's ``randn``: standard normal samples."""
    return normal(0.0, 1.0, _sizes("randn", dims, size) or (), device=device, ctx=ctx, dtype=dtype)
