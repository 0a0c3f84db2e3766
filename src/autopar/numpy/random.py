"""``autopar.numpy.random``: the functions of ``autopar.random`` that ``numpy.random`` has too, in NumPy mode."""

from __future__ import annotations

from autopar.arrays import random as _source
from autopar.numpy._namespace import lazy

__all__, __getattr__, __dir__ = lazy(globals(), "autopar.arrays.random", "numpy.random", _source.__all__)
