"""The kernels a node runtime may run: named autopar ops, or the user's own ``call`` functions.

A remote call never ships arbitrary code from autopar: it names a kernel,
and the node looks the name up here, in its own copy of autopar
(:func:`lookup`). The only code that travels is what the user wrote and
handed to ``autopar.call`` -- wrapped in :class:`UserFunction`, so the
runtime can tell it from a name.

The seam. :func:`lookup` is the one place a name becomes a kernel. Part 2 of
the cluster work backs it with the array layer's op table (``ndarray``'s
one entry per op); until then a minimal registry of the ops the cluster
tests and benchmarks use stands in for it. A kernel is called as
``fn(*input_tensors, **params)`` and returns a tensor, a tuple of tensors
(one per output key), or, for an in-place kernel (``inplace``), ``None``
having updated its first input, which is then its one output.
Creation kernels (no inputs) also get ``device=`` (a ``torch.device``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class KernelSpec:
    """One named kernel: its function; whether it makes data from nothing, or updates its first input."""

    name: str
    fn: Callable[..., Any]
    creates: bool = False
    inplace: bool = False


@dataclass(frozen=True, slots=True)
class UserFunction:
    """A function the user handed to ``autopar.call``: the only code that travels to a node."""

    fn: Callable[..., Any]
    name: str = "call"


_registry: dict[str, KernelSpec] = {}


def _register(name: str, creates: bool = False, inplace: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        _registry[name] = KernelSpec(name, fn, creates, inplace)
        return fn

    return add


def names() -> list[str]:
    """The kernel names a node runtime accepts."""
    return sorted(_registry)


def lookup(kernel: str | UserFunction) -> KernelSpec:
    """The kernel a remote call names; ``KeyError`` naming the known ones if there is none."""
    if isinstance(kernel, UserFunction):
        return KernelSpec(kernel.name, kernel.fn)
    if not isinstance(kernel, str):
        raise TypeError(
            f"remote kernel {kernel!r}: expected an op name or a UserFunction (autopar.call); "
            f"a node runs no other code"
        )
    spec = _registry.get(kernel)
    if spec is None:
        raise KeyError(f"remote kernel {kernel!r} is not an autopar op; known: {', '.join(names())}")
    return spec


# -- the stand-in registry (part 2: the array layer's op table) --------------------------


def _torch() -> Any:
    import torch

    return torch


@_register("full", creates=True)
def _full(*, shape: tuple[int, ...], value: Any, dtype: str, device: Any) -> Any:
    torch = _torch()
    return torch.full(shape, value, dtype=getattr(torch, dtype), device=device)


@_register("randn", creates=True)
def _randn(*, shape: tuple[int, ...], dtype: str, seed: int | None = None, device: Any) -> Any:
    torch = _torch()
    generator = None
    if seed is not None:
        generator = torch.Generator(device=device)
        generator.manual_seed(seed)
    return torch.randn(shape, dtype=getattr(torch, dtype), device=device, generator=generator)


@_register("copy")
def _copy(x: Any) -> Any:
    return x.clone()


@_register("add")
def _add(x: Any, y: Any) -> Any:
    return x + y


@_register("subtract")
def _subtract(x: Any, y: Any) -> Any:
    return x - y


@_register("multiply")
def _multiply(x: Any, y: Any) -> Any:
    return x * y


@_register("matmul")
def _matmul(x: Any, y: Any) -> Any:
    return x @ y


@_register("sum")
def _sum(x: Any) -> Any:
    return x.sum()


@_register("add_", inplace=True)
def _add_inplace(x: Any, y: Any) -> None:
    x.add_(y)


@_register("split")
def _split(x: Any, *, parts: int) -> tuple[Any, ...]:
    return tuple(p.contiguous() for p in x.chunk(parts))
