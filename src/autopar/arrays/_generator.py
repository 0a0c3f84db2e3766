"""``autopar.random.default_rng`` and ``Generator`` (NumPy's names), and the legacy draws NumPy programs use.

A Generator is a seeded stream of its own (``_draws.py`` says how its draws
are ordered and found); ``default_rng(seed)`` makes one. The methods take
NumPy's arguments and give NumPy's distributions, shapes and dtypes, with
torch's bits -- not NumPy's PCG64 values (see docs/arrays.md). ``device=`` is
autopar's: where the draw lives (default: cpu:0, or where an array argument
lives). The legacy module-level functions (``random.standard_normal``,
``random.exponential`` ...) draw from the device's global generator,
which ``autopar.random.seed(n)`` seeds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from autopar.arrays import _draws as dr
from autopar.arrays import _random
from autopar.arrays._array import NDArray
from autopar.arrays._distributions_api import Distributions
from autopar.arrays._dtypes import in_mode, numpy_mode


def _seed_sequence(seed: Any) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, (bool, float)) or (not isinstance(seed, (int, np.integer)) and not (
            isinstance(seed, (list, tuple, np.ndarray)) and all(isinstance(v, (int, np.integer)) for v in np.ravel(seed)))):  # fmt: skip
        raise TypeError(f"default_rng: seed={seed!r}; expected None, a non-negative int, a sequence of them, "
                        "a SeedSequence or a Generator")  # fmt: skip
    if any(int(v) < 0 for v in np.ravel(seed)):
        raise ValueError(f"default_rng: seed={seed!r} must be non-negative")
    return np.random.SeedSequence(seed)


def _in_its_mode(method: Callable[..., Any]) -> Callable[..., Any]:
    """The method runs in the dtype mode its Generator was made in: one made by ``autopar.numpy.random``
    draws float64 by default wherever it is called (its methods are not served through ``autopar.numpy``)."""

    @functools.wraps(method)
    def call(self: Generator, *args: Any, **kwargs: Any) -> Any:
        if self._numpy_mode is None:  # the legacy functions: the caller's mode
            return method(self, *args, **kwargs)
        return in_mode(self._numpy_mode, method, self, *args, **kwargs)

    return call


class Generator(Distributions):
    """NumPy's ``Generator`` API on autopar draws: ``rng = default_rng(42); rng.normal(size=3)``."""

    _prefix = "Generator"

    def __init__(self, seed: Any = None, *, device: Any = None) -> None:
        self._numpy_mode: bool | None = numpy_mode.on
        self._sequence = _seed_sequence(seed)
        state = self._sequence.generate_state(2, np.uint32)
        self._seed = (int(state[0]) << 31) ^ int(state[1])  # 63 bits: torch's manual_seed range
        self._src = dr.Source(dr.new_stream(self._seed), self._seed, device)

    @classmethod
    def _numpy_mode_variant(cls) -> type:
        return _NumpyModeGenerator

    def __repr__(self) -> str:
        return f"Generator(autopar, seed sequence entropy={self._sequence.entropy})"

    def spawn(self, n_children: int) -> list[Generator]:
        """Independent child generators (NumPy's ``SeedSequence.spawn``): the same children for the same seed."""
        return [type(self)(child, device=self._src.device) for child in self._sequence.spawn(int(n_children))]

    def random(self, size: Any = None, dtype: Any = None, out: Any = None, *, device: Any = None) -> Any:
        """Floats in ``[0, 1)``."""
        return _into(dr.uniform_draw(self._src, self._op("random"), 0.0, 1.0, size, dtype, device), out)

    def uniform(self, low: Any = 0.0, high: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return dr.uniform_draw(self._src, self._op("uniform"), low, high, size, None, device)

    def normal(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return dr.normal_draw(self._src, self._op("normal"), loc, scale, size, None, device)

    def standard_normal(self, size: Any = None, dtype: Any = None, out: Any = None, *, device: Any = None) -> Any:
        return _into(dr.normal_draw(self._src, self._op("standard_normal"), 0.0, 1.0, size, dtype, device), out)

    def lognormal(self, mean: float = 0.0, sigma: float = 1.0, size: Any = None, *, device: Any = None) -> Any:
        from autopar.arrays._elementwise import call

        if dr._is_number(sigma) and sigma < 0:
            raise ValueError(f"{self._op('lognormal')}: sigma={sigma!r} must be non-negative")
        return call("exp", dr.normal_draw(self._src, self._op("lognormal"), mean, sigma, size, None, device))

    def exponential(self, scale: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return dr.exponential_draw(self._src, self._op("exponential"), scale, size, None, device)

    def standard_exponential(self, size: Any = None, dtype: Any = None, method: str = "zig", out: Any = None, *,
                             device: Any = None) -> Any:  # fmt: skip
        return _into(dr.exponential_draw(self._src, self._op("standard_exponential"), 1.0, size, dtype, device), out)

    def poisson(self, lam: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return dr.poisson_draw(self._src, self._op("poisson"), lam, size, device)

    def binomial(self, n: Any, p: Any, size: Any = None, *, device: Any = None) -> Any:
        return dr.binomial_draw(self._src, self._op("binomial"), n, p, size, device)

    def integers(self, low: Any, high: Any = None, size: Any = None, dtype: Any = None, endpoint: bool = False, *,
                 device: Any = None) -> Any:  # fmt: skip
        """Integers in ``[low, high)`` (``[low, high]`` with ``endpoint=True``; ``[0, low)`` with one bound)."""
        return dr.integers_draw(self._src, self._op("integers"), low, high, size, dtype, endpoint, device)

    def choice(self, a: Any, size: Any = None, replace: bool = True, p: Any = None, axis: int = 0,
               shuffle: bool = True, *, device: Any = None) -> Any:  # fmt: skip
        """Samples of ``a`` (an array, along ``axis``; or ``range(a)``), with weights ``p`` if given."""
        return dr.choice_draw(self._src, self._op("choice"), a, size, replace, p, axis, device)

    def permutation(self, x: Any, axis: int = 0, *, device: Any = None) -> Any:
        """A permuted ``range(x)`` (an int), or a permuted copy of ``x`` along ``axis``."""
        return dr.permutation_draw(self._src, self._op("permutation"), x, axis, device)

    def shuffle(self, x: Any, axis: int = 0) -> None:
        """Shuffle the autopar array ``x`` in place along ``axis``."""
        if type(x) is not NDArray:
            raise TypeError(f"{self._op('shuffle')}: x must be an autopar array (it is shuffled in place); got "
                            f"{type(x).__name__}; use permutation(x) for a shuffled copy")  # fmt: skip
        x[...] = dr.permutation_draw(self._src, self._op("shuffle"), x, axis)

    def permuted(self, x: Any, axis: Any = None, out: Any = None) -> Any:
        """``x`` with each slice along ``axis`` shuffled independently (the whole array when None)."""
        from autopar.arrays._manipulation import _array_like, normalize_axis, reshape
        from autopar.arrays._searching import argsort

        arr = _array_like(x)
        if axis is None:
            flat = reshape(arr, (-1,))
            return _into(reshape(flat[self.permutation(flat.shape[0], device=arr.device)], arr.shape), out)
        ax = normalize_axis(self._op("permuted"), axis, arr.ndim)
        keys = dr.uniform_draw(self._src, self._op("permuted"), 0.0, 1.0, arr.shape, None, arr.device)
        from autopar.arrays._indexing import take_along_axis

        return _into(take_along_axis(arr, argsort(keys, axis=ax), ax), out)


for _name, _value in list(vars(Generator).items()) + list(vars(Distributions).items()):
    if not _name.startswith("_") and callable(_value):
        setattr(Generator, _name, _in_its_mode(_value))


class _NumpyModeGenerator(Generator):
    """``autopar.numpy.random.Generator``: made, so drawing, in NumPy mode."""

    def __init__(self, seed: Any = None, *, device: Any = None) -> None:
        in_mode(True, Generator.__init__, self, seed, device=device)


_NumpyModeGenerator.__name__ = _NumpyModeGenerator.__qualname__ = "Generator"


def _into(r: Any, out: Any) -> Any:
    if out is None:
        return r
    out[...] = r
    return out


def default_rng(seed: Any = None, *, device: Any = None) -> Generator:
    """NumPy's ``default_rng``: a new :class:`Generator` (``seed`` an int, ints, a SeedSequence, or a Generator)."""
    if isinstance(seed, Generator):
        return seed
    if numpy_mode.on:  # an autopar.numpy.random.Generator (isinstance holds there)
        return _NumpyModeGenerator(seed, device=device)
    return Generator(seed, device=device)


# -- legacy module-level draws (the device's global generator, seeded by random.seed) ---------------

_GLOBAL = dr.Source(None, 0, None)
# The legacy functions' draws with array parameters (normal(mu_array, sigma), uniform(low, high_array)).
_random.ARRAY_DRAWS.update({name: functools.partial(getattr(dr, name), _GLOBAL) for name in ("normal_draw", "uniform_draw")})


def standard_normal(size: Any = None, *, dtype: Any = None, device: Any = None) -> Any:
    return dr.normal_draw(_GLOBAL, "random.standard_normal", 0.0, 1.0, size, dtype, device)


def exponential(scale: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
    return dr.exponential_draw(_GLOBAL, "random.exponential", scale, size, None, device)


def poisson(lam: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
    return dr.poisson_draw(_GLOBAL, "random.poisson", lam, size, device)


def binomial(n: Any, p: Any, size: Any = None, *, device: Any = None) -> Any:
    return dr.binomial_draw(_GLOBAL, "random.binomial", n, p, size, device)


def random_sample(size: Any = None, *, device: Any = None) -> Any:
    return dr.uniform_draw(_GLOBAL, "random.random_sample", 0.0, 1.0, size, None, device)


def choice(a: Any, size: Any = None, replace: bool = True, p: Any = None, device: Any = None, ctx: Any = None) -> Any:
    """Samples from ``a`` (an array, or ``range(a)`` for an int), with or without replacement, with weights ``p``."""
    if p is None:
        return dr.legacy.choice(a, size, replace, None, device=device, ctx=ctx)
    from autopar.arrays._array import as_device

    where = as_device(device, ctx, "random.choice") if device is not None or ctx is not None else None
    return dr.choice_draw(_GLOBAL, "random.choice", a, size, replace, p, 0, where)


class _Legacy(Generator):
    """The legacy functions' draws: the device's global generator, in the caller's dtype mode."""

    _prefix = "random"

    def __init__(self) -> None:  # noqa: D107 - no seed: random.seed(n) seeds the device generators
        self._numpy_mode = None
        self._src = _GLOBAL


_LEGACY = _Legacy()
gamma, standard_gamma, beta, chisquare, f = _LEGACY.gamma, _LEGACY.standard_gamma, _LEGACY.beta, _LEGACY.chisquare, _LEGACY.f
standard_t, negative_binomial, geometric = _LEGACY.standard_t, _LEGACY.negative_binomial, _LEGACY.geometric
standard_cauchy, laplace, logistic, gumbel = _LEGACY.standard_cauchy, _LEGACY.laplace, _LEGACY.logistic, _LEGACY.gumbel
weibull, pareto, rayleigh, power, triangular = _LEGACY.weibull, _LEGACY.pareto, _LEGACY.rayleigh, _LEGACY.power, _LEGACY.triangular
wald, multivariate_normal, dirichlet, multinomial = _LEGACY.wald, _LEGACY.multivariate_normal, _LEGACY.dirichlet, _LEGACY.multinomial
lognormal, standard_exponential = _LEGACY.lognormal, _LEGACY.standard_exponential
noncentral_chisquare, noncentral_f = _LEGACY.noncentral_chisquare, _LEGACY.noncentral_f
hypergeometric, logseries, bytes = _LEGACY.hypergeometric, _LEGACY.logseries, _LEGACY.bytes  # noqa: A001
vonmises, zipf = _LEGACY.vonmises, _LEGACY.zipf
ranf = sample = random_sample  # NumPy's legacy aliases


def random_integers(low: int, high: int | None = None, size: Any = None, *, device: Any = None) -> Any:
    """Legacy: integers in ``[low, high]`` (``[1, low]`` with one bound); NumPy deprecates it for randint."""
    if high is None:
        low, high = 1, low
    return dr.integers_draw(_GLOBAL, "random.random_integers", low, high, size, None, True, device)
