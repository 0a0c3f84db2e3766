"""``autopar.nn``: neural-network operations on autopar arrays (``autopar.nn.functional``)."""

from __future__ import annotations

from autopar.arrays import _methods  # noqa: F401  (arrays get their methods and operators)

from autopar.nn import functional

__all__ = ["functional"]
