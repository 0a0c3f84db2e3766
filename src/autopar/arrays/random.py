"""``autopar.random``: NumPy's, MXNet's and PyTorch's spellings of random draws.

Draws on a device are ordered by that device's generator var, so a seeded
program gives the same numbers on any engine, whatever ran in parallel.
``default_rng(seed)`` gives NumPy's ``Generator``: a stream of its own.
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

from autopar.arrays._generator import (
    Generator,
    binomial,
    default_rng,
    exponential,
    poisson,
    random_sample,
    standard_normal,
)

__all__ = ["Generator", "binomial", "choice", "default_rng", "exponential", "normal", "permutation", "poisson", "rand",
           "randint", "randn", "random", "random_sample", "seed", "shuffle", "standard_normal", "uniform"]  # fmt: skip
