"""``autopar.random``: ``seed``, ``uniform``, ``normal`` (NumPy/MXNet spellings)."""

from autopar.ndarray._random import normal, rand, randn, seed, uniform

__all__ = ["normal", "rand", "randn", "seed", "uniform"]
