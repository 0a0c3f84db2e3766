"""``autopar.random``: NumPy's, MXNet's and PyTorch's spellings of random draws.

Draws on a device are ordered by that device's generator var, so a seeded
program gives the same numbers on any engine, whatever ran in parallel.
"""

from autopar.arrays._random import (
    choice,
    normal,
    permutation,
    rand,
    randint,
    randn,
    random,
    seed,
    shuffle,
    uniform,
)

__all__ = ["choice", "normal", "permutation", "rand", "randint", "randn", "random", "seed", "shuffle", "uniform"]
