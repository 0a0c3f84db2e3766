"""``autopar.nn``: neural-network operations on autopar arrays (``autopar.nn.functional``)."""

from __future__ import annotations

from autopar.nn import functional

__all__ = ["functional"]
