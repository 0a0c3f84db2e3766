"""``autopar.numpy.fft``: the functions of ``autopar.fft`` that ``numpy.fft`` has too, in NumPy mode."""

from __future__ import annotations

from autopar.arrays import fft as _source
from autopar.numpy._namespace import lazy

__all__, __getattr__, __dir__ = lazy(globals(), "autopar.arrays.fft", "numpy.fft", _source.__all__)
