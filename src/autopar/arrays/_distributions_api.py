"""The ``Generator`` methods for NumPy's other distributions (``_distributions.py`` makes them).

A mixin of :class:`~autopar.arrays._generator.Generator` (which also serves the
legacy module-level functions through it): each method is NumPy's signature,
plus autopar's ``device=``, calling the construction of the same name with the
generator's source.
"""

from __future__ import annotations

from typing import Any

from autopar.arrays import _distributions as ds


class Distributions:
    _src: Any
    _prefix: str

    def _op(self, name: str) -> str:
        return f"{self._prefix}.{name}"

    def gamma(self, shape: Any, scale: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return ds.gamma(self._src, self._op("gamma"), shape, scale, size, device)

    def standard_gamma(self, shape: Any, size: Any = None, dtype: Any = None, out: Any = None, *,
                       device: Any = None) -> Any:  # fmt: skip
        r = ds.standard_gamma(self._src, self._op("standard_gamma"), shape, size, device)
        r = r if dtype is None else r.astype(dtype)
        if out is None:
            return r
        out[...] = r
        return out

    def beta(self, a: Any, b: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.beta(self._src, self._op("beta"), a, b, size, device)

    def chisquare(self, df: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.chisquare(self._src, self._op("chisquare"), df, size, device)

    def f(self, dfnum: Any, dfden: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.f(self._src, self._op("f"), dfnum, dfden, size, device)

    def standard_t(self, df: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.standard_t(self._src, self._op("standard_t"), df, size, device)

    def negative_binomial(self, n: Any, p: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.negative_binomial(self._src, self._op("negative_binomial"), n, p, size, device)

    def geometric(self, p: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.geometric(self._src, self._op("geometric"), p, size, device)

    def standard_cauchy(self, size: Any = None, *, device: Any = None) -> Any:
        return ds.standard_cauchy(self._src, self._op("standard_cauchy"), size, device)

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return ds.laplace(self._src, self._op("laplace"), loc, scale, size, device)

    def logistic(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return ds.logistic(self._src, self._op("logistic"), loc, scale, size, device)

    def gumbel(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return ds.gumbel(self._src, self._op("gumbel"), loc, scale, size, device)

    def weibull(self, a: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.weibull(self._src, self._op("weibull"), a, size, device)

    def pareto(self, a: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.pareto(self._src, self._op("pareto"), a, size, device)

    def rayleigh(self, scale: Any = 1.0, size: Any = None, *, device: Any = None) -> Any:
        return ds.rayleigh(self._src, self._op("rayleigh"), scale, size, device)

    def power(self, a: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.power(self._src, self._op("power"), a, size, device)

    def triangular(self, left: Any, mode: Any, right: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.triangular(self._src, self._op("triangular"), left, mode, right, size, device)

    def wald(self, mean: Any, scale: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.wald(self._src, self._op("wald"), mean, scale, size, device)

    def multivariate_normal(self, mean: Any, cov: Any, size: Any = None, check_valid: str = "warn", tol: float = 1e-8,
                            *, method: str = "svd", device: Any = None) -> Any:  # fmt: skip
        """``check_valid``/``tol`` are accepted and not checked (that would read ``cov``)."""
        return ds.multivariate_normal(self._src, self._op("multivariate_normal"), mean, cov, size, method, device)

    def dirichlet(self, alpha: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.dirichlet(self._src, self._op("dirichlet"), alpha, size, device)

    def multinomial(self, n: Any, pvals: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.multinomial(self._src, self._op("multinomial"), n, pvals, size, device)

    def noncentral_chisquare(self, df: Any, nonc: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.noncentral_chisquare(self._src, self._op("noncentral_chisquare"), df, nonc, size, device)

    def noncentral_f(self, dfnum: Any, dfden: Any, nonc: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.noncentral_f(self._src, self._op("noncentral_f"), dfnum, dfden, nonc, size, device)

    def hypergeometric(self, ngood: Any, nbad: Any, nsample: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.hypergeometric(self._src, self._op("hypergeometric"), ngood, nbad, nsample, size, device)

    def logseries(self, p: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.logseries(self._src, self._op("logseries"), p, size, device)

    def vonmises(self, mu: Any, kappa: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.vonmises(self._src, self._op("vonmises"), mu, kappa, size, device)

    def zipf(self, a: Any, size: Any = None, *, device: Any = None) -> Any:
        return ds.zipf(self._src, self._op("zipf"), a, size, device)

    def bytes(self, length: int) -> bytes:
        """``length`` random bytes (reads them: waits)."""
        from autopar.arrays import _draws as dr
        from autopar.arrays import _dtypes

        draw = dr.integers_draw(self._src, self._op("bytes"), 0, 256, (int(length),), _dtypes.uint8, False)
        return draw.tobytes()
