"""Lazy NumPy-mode namespaces: what ``autopar.numpy`` and its submodules serve, and how.

Each public module of ``autopar.numpy`` is a view of one of autopar's
namespaces: it serves the names that module of NumPy has too (NumPy's own
``__all__`` decides which, so the list follows the installed NumPy), each
through :func:`_mode.serve`, made and cached on first use -- importing
``autopar.numpy`` does not import torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from autopar.numpy._mode import serve


def lazy(
    module: dict[str, Any],
    source: str,
    numpy_module: str,
    names: Iterable[str],
    extra: Iterable[str] = (),
    local: dict[str, Callable[[], Any]] | None = None,
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for a module serving ``source``'s ``names`` that
    ``numpy_module`` has too, plus ``extra`` (autopar's own, not in NumPy), in NumPy mode.
    ``local`` maps names to makers of values defined by ``autopar.numpy`` itself."""
    theirs = set(getattr(importlib.import_module(numpy_module), "__all__", ()))
    local = local or {}
    public = sorted((set(names) & theirs) | set(extra) | set(local))
    served = set(public)
    qualname = module["__name__"]
    prefix = qualname.removeprefix("autopar.numpy").lstrip(".")
    prefix = prefix + "." if prefix else ""

    def __getattr__(name: str) -> Any:
        if name in local:
            value = local[name]()
        elif name in served:
            value = serve(getattr(importlib.import_module(source), name), prefix + name)
        else:
            hint = ""
            if name in theirs:
                from autopar.numpy._unsupported import names

                why = names().get(prefix + name, "not implemented yet")
                hint = f"; NumPy's {prefix + name} is not supported: {why} (autopar.numpy's table of unsupported names)"
            raise AttributeError(f"module {qualname!r} has no attribute {name!r}{hint}")
        module[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(module) | served)

    return public, __getattr__, __dir__
