"""``autopar.random``: NumPy's, MXNet's and PyTorch's spellings of random draws.

Draws on a device are ordered by that device's generator var, so a seeded
program gives the same numbers on any engine, whatever ran in parallel.
``default_rng(seed)`` gives NumPy's ``Generator``: a stream of its own.
"""

from autopar.arrays._random import (
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
    beta,
    binomial,
    bytes,
    chisquare,
    choice,
    default_rng,
    dirichlet,
    exponential,
    f,
    gamma,
    geometric,
    gumbel,
    hypergeometric,
    laplace,
    logistic,
    lognormal,
    logseries,
    multinomial,
    multivariate_normal,
    negative_binomial,
    noncentral_chisquare,
    noncentral_f,
    pareto,
    poisson,
    power,
    random_integers,
    random_sample,
    ranf,
    rayleigh,
    sample,
    standard_cauchy,
    standard_exponential,
    standard_gamma,
    standard_normal,
    standard_t,
    triangular,
    vonmises,
    wald,
    weibull,
    zipf,
)

__all__ = [
    "Generator", "beta", "binomial", "bytes", "chisquare", "choice", "default_rng", "dirichlet", "exponential", "f",
    "gamma", "geometric", "gumbel", "hypergeometric", "laplace", "logistic", "lognormal", "logseries", "multinomial",
    "multivariate_normal", "negative_binomial", "noncentral_chisquare", "noncentral_f", "normal", "pareto",
    "permutation", "poisson", "power", "rand", "randint", "randn", "random", "random_integers", "random_sample",
    "ranf", "rayleigh", "sample", "seed", "shuffle", "standard_cauchy", "standard_exponential", "standard_gamma",
    "standard_normal", "standard_t", "triangular", "uniform", "vonmises", "wald", "weibull", "zipf",
]  # fmt: skip
