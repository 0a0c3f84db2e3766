"""NumPy's other distributions, made from torch's draws with ordinary ops (``Generator`` methods and
the legacy ``autopar.random`` functions alike).

Each is the textbook construction from the draws ``_draws.py`` has (standard
uniform, normal, exponential and gamma, Poisson, multinomial indices):
``beta`` is ``X / (X + Y)`` of two gammas, ``chisquare(k)`` twice a gamma of
shape ``k/2``, ``standard_t`` a normal over the root of a chi-square per
degree of freedom, ``f`` a ratio of those, ``negative_binomial`` a Poisson
of a gamma, ``geometric`` ``ceil(E / -log(1 - p))``, ``gumbel``, ``weibull``,
``pareto`` (NumPy's Lomax), ``rayleigh`` and ``power`` transforms of an
exponential, ``laplace`` a difference of exponentials, ``logistic`` and
``standard_cauchy`` and ``triangular`` inverse CDFs of a uniform, ``wald``
Michael, Schucany and Haas's method, ``multivariate_normal`` ``mean + z @
(sqrt(s) * Vt)`` from the SVD of ``cov`` (NumPy's default method),
``dirichlet`` normalized gammas, ``multinomial`` counts of drawn indices,
``vonmises`` and ``zipf`` NumPy's rejection methods (each round proposes a
batch on the device and keeps the accepted ones: counting them reads, so
these two wait).
The distributions are NumPy's; the numbers are not (module note of
``_generator.py``). Parameters may be arrays; they broadcast with ``size``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from autopar.arrays import _draws as dr
from autopar.arrays import _dtypes
from autopar.arrays._array import NDArray
from autopar.arrays._creation import asarray
from autopar.arrays._elementwise import call


def _params(op: str, device: Any, **named: Any) -> dict[str, Any]:
    out = {}
    for name, v in named.items():
        out[name] = dr._param(op, name, v, device)
    return out


def _positive(op: str, **named: Any) -> None:
    for name, v in named.items():
        if dr._is_number(v) and not v > 0:
            raise ValueError(f"{op}: {name}={v!r} must be positive")


def _uniform(src: dr.Source, op: str, shape: tuple[int, ...], device: Any) -> Any:
    return src.draw(op, "uniform", shape, dr._float_dtype(op, None), 0.0, 1.0, device=device)


def _exp(src: dr.Source, op: str, shape: tuple[int, ...], device: Any) -> Any:
    return src.draw(op, "exponential", shape, dr._float_dtype(op, None), device=device)


def _normal(src: dr.Source, op: str, shape: tuple[int, ...], device: Any) -> Any:
    return src.draw(op, "normal", shape, dr._float_dtype(op, None), 0.0, 1.0, device=device)


def standard_gamma(src: dr.Source, op: str, shape: Any, size: Any, device: Any = None) -> Any:
    _positive(op, shape=shape)
    k = shape if type(shape) is NDArray else asarray(np.asarray(shape, dtype=float), dtype="float64", device=device)
    out_shape = dr._broadcast(op, dr._size(op, size), k)
    return src.draw(op, "gamma", out_shape, dr._float_dtype(op, None), params=(k,))


def gamma(src: dr.Source, op: str, shape: Any, scale: Any, size: Any, device: Any = None) -> Any:
    _positive(op, scale=scale)
    return dr._scaled(standard_gamma(src, op, shape, _joint(op, size, device, shape, scale), device), 0.0,
                      dr._param(op, "scale", scale, device))  # fmt: skip


def _joint(op: str, size: Any, device: Any, *params: Any) -> tuple[int, ...]:
    """The result shape: ``size``, or the parameters' broadcast shape."""
    return dr._broadcast(op, dr._size(op, size), *[dr._param(op, "p", p, device) for p in params])


def beta(src: dr.Source, op: str, a: Any, b: Any, size: Any, device: Any = None) -> Any:
    _positive(op, a=a, b=b)
    shape = _joint(op, size, device, a, b)
    x, y = standard_gamma(src, op, a, shape, device), standard_gamma(src, op, b, shape, device)
    return x / (x + y)


def chisquare(src: dr.Source, op: str, df: Any, size: Any, device: Any = None) -> Any:
    _positive(op, df=df)
    half = df / 2.0 if type(df) is NDArray else np.asarray(df, dtype=float) / 2.0
    return standard_gamma(src, op, half, size, device) * 2.0


def f(src: dr.Source, op: str, dfnum: Any, dfden: Any, size: Any, device: Any = None) -> Any:
    shape = _joint(op, size, device, dfnum, dfden)
    p = _params(op, device, dfnum=dfnum, dfden=dfden)
    return (chisquare(src, op, dfnum, shape, device) / p["dfnum"]) / (chisquare(src, op, dfden, shape, device) / p["dfden"])


def standard_t(src: dr.Source, op: str, df: Any, size: Any, device: Any = None) -> Any:
    shape = _joint(op, size, device, df)
    d = dr._param(op, "df", df, device)
    return _normal(src, op, shape, device) / call("sqrt", chisquare(src, op, df, shape, device) / d)


def negative_binomial(src: dr.Source, op: str, n: Any, p: Any, size: Any, device: Any = None) -> Any:
    if dr._is_number(p) and not 0 < p <= 1:
        raise ValueError(f"{op}: p={p!r} must be within (0, 1]")
    shape = _joint(op, size, device, n, p)
    q = dr._param(op, "p", p, device)
    rates = standard_gamma(src, op, n, shape, device) * ((1 - q) / q)
    return dr.poisson_draw(src, op, rates.astype(_dtypes.float64), None, device)


def geometric(src: dr.Source, op: str, p: Any, size: Any, device: Any = None) -> Any:
    if dr._is_number(p) and not 0 < p <= 1:
        raise ValueError(f"{op}: p={p!r} must be within (0, 1]")
    shape = _joint(op, size, device, p)
    q = dr._param(op, "p", p, device)
    rate = -call("log1p", -q) if type(q) is NDArray else -math.log1p(-q) if q < 1 else math.inf
    trials = call("ceil", _exp(src, op, shape, device) / rate)
    return call("maximum", trials, 1).astype(_dtypes.int64)


def standard_cauchy(src: dr.Source, op: str, size: Any, device: Any = None) -> Any:
    u = _uniform(src, op, dr._size(op, size) or (), device)
    return call("tan", (u - 0.5) * math.pi)


def laplace(src: dr.Source, op: str, loc: Any, scale: Any, size: Any, device: Any = None) -> Any:
    shape = _joint(op, size, device, loc, scale)
    p = _params(op, device, loc=loc, scale=scale)
    return dr._scaled(_exp(src, op, shape, device) - _exp(src, op, shape, device), p["loc"], p["scale"])


def logistic(src: dr.Source, op: str, loc: Any, scale: Any, size: Any, device: Any = None) -> Any:
    shape = _joint(op, size, device, loc, scale)
    p = _params(op, device, loc=loc, scale=scale)
    u = _uniform(src, op, shape, device)
    tiny = float(np.finfo(np.dtype(u.dtype.name)).tiny)
    u = call("maximum", u, tiny)  # [0, 1) -> (0, 1): no -inf
    return dr._scaled(call("log", u / (1 - u)), p["loc"], p["scale"])


def gumbel(src: dr.Source, op: str, loc: Any, scale: Any, size: Any, device: Any = None) -> Any:
    shape = _joint(op, size, device, loc, scale)
    p = _params(op, device, loc=loc, scale=scale)
    return dr._scaled(-call("log", _exp(src, op, shape, device)), p["loc"], p["scale"])


def weibull(src: dr.Source, op: str, a: Any, size: Any, device: Any = None) -> Any:
    shape = _joint(op, size, device, a)
    return call("pow", _exp(src, op, shape, device), 1.0 / dr._param(op, "a", a, device))


def pareto(src: dr.Source, op: str, a: Any, size: Any, device: Any = None) -> Any:
    _positive(op, a=a)
    shape = _joint(op, size, device, a)
    return call("expm1", _exp(src, op, shape, device) / dr._param(op, "a", a, device))


def rayleigh(src: dr.Source, op: str, scale: Any, size: Any, device: Any = None) -> Any:
    shape = _joint(op, size, device, scale)
    return call("sqrt", _exp(src, op, shape, device) * 2.0) * dr._param(op, "scale", scale, device)


def power(src: dr.Source, op: str, a: Any, size: Any, device: Any = None) -> Any:
    _positive(op, a=a)
    shape = _joint(op, size, device, a)
    return call("pow", -call("expm1", -_exp(src, op, shape, device)), 1.0 / dr._param(op, "a", a, device))


def triangular(src: dr.Source, op: str, left: Any, mode: Any, right: Any, size: Any, device: Any = None) -> Any:
    if all(dr._is_number(v) for v in (left, mode, right)) and not left <= mode <= right and left < right:
        raise ValueError(f"{op}: need left <= mode <= right and left < right; got {left}, {mode}, {right}")
    shape = _joint(op, size, device, left, mode, right)
    p = _params(op, device, left=left, mode=mode, right=right)
    lo, c, hi = p["left"], p["mode"], p["right"]
    u = _uniform(src, op, shape, device)
    cut = (c - lo) / (hi - lo)
    below = lo + call("sqrt", u * (hi - lo) * (c - lo))
    above = hi - call("sqrt", (1 - u) * (hi - lo) * (hi - c))
    from autopar.arrays._searching import where

    return where(call("less", u, cut), below, above)


def wald(src: dr.Source, op: str, mean: Any, scale: Any, size: Any, device: Any = None) -> Any:
    _positive(op, mean=mean, scale=scale)
    shape = _joint(op, size, device, mean, scale)
    p = _params(op, device, mean=mean, scale=scale)
    mu, lam = p["mean"], p["scale"]
    y = _normal(src, op, shape, device) ** 2
    x = mu + mu * mu * y / (2 * lam) - mu / (2 * lam) * call("sqrt", 4 * mu * lam * y + mu * mu * y * y)
    from autopar.arrays._searching import where

    return where(call("less_equal", _uniform(src, op, shape, device), mu / (mu + x)), x, mu * mu / x)


def multivariate_normal(src: dr.Source, op: str, mean: Any, cov: Any, size: Any, method: str = "svd",
                        device: Any = None) -> Any:  # fmt: skip
    from autopar.arrays import _linalg
    from autopar.arrays._manipulation import _array_like

    m = _array_like(mean) if type(mean) is NDArray else asarray(np.asarray(mean, dtype=float), dtype="float64", device=device)
    c = _array_like(cov) if type(cov) is NDArray else asarray(np.asarray(cov, dtype=float), dtype="float64", device=m.device)
    n = m.shape[-1] if m.ndim else 0
    if m.ndim != 1 or c.shape != (n, n):
        raise ValueError(f"{op}: mean must be 1-D (n,) and cov (n, n); got shapes {m.shape} and {c.shape}")
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(f"{op}: method={method!r}; expected 'svd', 'eigh' or 'cholesky'")
    shape = (dr._size(op, size) or ()) + (n,)
    z = src.draw(op, "normal", shape, _dtypes.to_float(c.dtype), 0.0, 1.0, device=m.device)
    if method == "cholesky":
        factor = _linalg.cholesky(c).mT
    elif method == "eigh":
        w, v = _linalg.eigh(c)
        factor = (v * call("sqrt", call("maximum", w, 0.0))).mT
    else:
        _, s, vt = _linalg.svd(c)
        factor = call("sqrt", s)[:, None] * vt
    return z @ factor + m


def dirichlet(src: dr.Source, op: str, alpha: Any, size: Any, device: Any = None) -> Any:
    from autopar.arrays._reductions import sum as sum_

    a = alpha if type(alpha) is NDArray else asarray(np.asarray(alpha, dtype=float), dtype="float64", device=device)
    if a.ndim != 1:
        raise ValueError(f"{op}: alpha must be 1-D; got shape {a.shape}")
    g = standard_gamma(src, op, a, (dr._size(op, size) or ()) + a.shape, device)
    return g / sum_(g, axis=-1, keepdims=True)


def multinomial(src: dr.Source, op: str, n: Any, pvals: Any, size: Any, device: Any = None) -> Any:
    from autopar.arrays._creation import arange, zeros
    from autopar.arrays._manipulation import reshape
    from autopar.arrays._ufunc import UFUNCS

    if not dr._is_number(n) or isinstance(n, (float, np.floating)) or n < 0:
        raise TypeError(f"{op}: n={n!r}; expected a non-negative int (arrays of n are not supported)")
    p = pvals if type(pvals) is NDArray else asarray(np.asarray(pvals, dtype=float), dtype="float64", device=device)
    if p.ndim != 1:
        raise ValueError(f"{op}: pvals must be 1-D; got shape {p.shape}")
    outer = dr._size(op, size) or ()
    rows = math.prod(outer)
    k = p.shape[0]
    counts = zeros((rows, k), dtype="int64", device=p.device)
    if n and rows:
        picks = src.draw(op, "multinomial", (rows, int(n)), _dtypes.int64, True, params=(p,))
        which = reshape(arange(rows, device=p.device), (rows, 1)) + picks * 0
        UFUNCS["add"].at(counts, (which, picks), 1)
    return reshape(counts, outer + (k,))


def noncentral_chisquare(src: dr.Source, op: str, df: Any, nonc: Any, size: Any, device: Any = None) -> Any:
    """A Poisson mixture of chi-squares: ``chisquare(df + 2 K)``, ``K ~ Poisson(nonc / 2)``."""
    _positive(op, df=df)
    if dr._is_number(nonc) and nonc < 0:
        raise ValueError(f"{op}: nonc={nonc!r} must be non-negative")
    shape = _joint(op, size, device, df, nonc)
    lam = dr._param(op, "nonc", nonc, device)
    k = dr.poisson_draw(src, op, (lam / 2.0) if type(lam) is NDArray else lam / 2.0, shape, device)
    half = k.astype(_dtypes.float64) + dr._param(op, "df", df, device) / 2.0
    return standard_gamma(src, op, half, shape, device) * 2.0


def noncentral_f(src: dr.Source, op: str, dfnum: Any, dfden: Any, nonc: Any, size: Any, device: Any = None) -> Any:
    shape = _joint(op, size, device, dfnum, dfden, nonc)
    p = _params(op, device, dfnum=dfnum, dfden=dfden)
    num = noncentral_chisquare(src, op, dfnum, nonc, shape, device) / p["dfnum"]
    return num / (chisquare(src, op, dfden, shape, device) / p["dfden"])


def hypergeometric(src: dr.Source, op: str, ngood: Any, nbad: Any, nsample: Any, size: Any, device: Any = None) -> Any:
    """Good items among ``nsample`` drawn without replacement: the first ``nsample`` of a random order."""
    from autopar.arrays._reductions import sum as sum_
    from autopar.arrays._searching import argsort

    for name, v in (("ngood", ngood), ("nbad", nbad), ("nsample", nsample)):
        if not dr._is_number(v) or isinstance(v, (float, np.floating)) or v < 0:
            raise TypeError(f"{op}: {name}={v!r}; expected a non-negative int (arrays are not supported)")
    total = int(ngood) + int(nbad)
    if not 1 <= int(nsample) <= total:
        raise ValueError(f"{op}: nsample={nsample} must be within [1, ngood + nbad = {total}]")
    outer = dr._size(op, size) or ()
    rows = math.prod(outer)
    if rows * total > 50_000_000:
        raise ValueError(f"{op}: {rows} draws from {total} items would sort {rows * total} keys; draw fewer at a time")
    keys = _uniform(src, op, (rows, total), device)
    first = argsort(keys, axis=-1)[:, : int(nsample)]
    good = sum_(call("less", first, int(ngood)), axis=-1)
    from autopar.arrays._manipulation import reshape

    return reshape(good.astype(_dtypes.int64), outer)


def logseries(src: dr.Source, op: str, p: Any, size: Any, device: Any = None) -> Any:
    """Kemp's method (NumPy's): 1 when ``V >= p``, else from ``q = 1 - (1 - p)**U``."""
    from autopar.arrays._searching import where

    if dr._is_number(p) and not 0 <= p < 1:
        raise ValueError(f"{op}: p={p!r} must be within [0, 1)")
    shape = _joint(op, size, device, p)
    prob = dr._param(op, "p", p, device)
    r = call("log1p", -prob) if type(prob) is NDArray else math.log1p(-prob)
    v = _uniform(src, op, shape, device)
    q = -call("expm1", r * _uniform(src, op, shape, device))
    tiny = float(np.finfo(np.dtype(v.dtype.name)).tiny)
    deep = call("floor", 1 + call("log", call("maximum", v, tiny)) / call("log", call("maximum", q, tiny)))
    out = where(call("less_equal", v, q * q), call("maximum", deep, 1), where(call("greater_equal", v, q), 1, 2))
    return where(call("greater_equal", v, prob), 1, out).astype(_dtypes.int64)


def _rejection(src: dr.Source, op: str, size: Any, device: Any, propose: Any) -> Any:
    """Draws by rejection: ``propose(n) -> (candidates, accepted)`` for ``n`` at a time, until enough are
    accepted. Counting the accepted reads them, so these draws wait (one round, rarely two)."""
    from autopar.arrays._manipulation import concat, reshape

    shape = dr._size(op, size) or ()
    need = math.prod(shape)
    kept: list[Any] = []
    while need > 0:
        values, accepted = propose(need + need // 4 + 16)
        good = values[accepted]  # a mask index: its length is the data's, so this waits
        take = min(need, good.shape[0])
        kept.append(good[:take])
        need -= take
    if not kept:
        return reshape(propose(1)[0][:0], shape)
    return reshape(concat(kept), shape)


def vonmises(src: dr.Source, op: str, mu: Any, kappa: Any, size: Any, device: Any = None) -> Any:
    """Best and Fisher's rejection method (NumPy's), for number parameters."""
    from autopar.arrays._searching import where

    if not (dr._is_number(mu) and dr._is_number(kappa)):
        raise TypeError(f"{op}: mu={mu!r}, kappa={kappa!r}: expected numbers (arrays are not supported here)")
    mu, kappa = float(mu), float(kappa)
    if kappa < 0:
        raise ValueError(f"{op}: kappa={kappa} must be non-negative")
    if kappa < 1e-8:  # the uniform distribution on the circle
        return (_uniform(src, op, dr._size(op, size) or (), device) * 2 - 1) * math.pi + 0 * mu
    s = 0.5 / kappa
    r = s + math.sqrt(1 + s * s)

    def propose(n: int) -> tuple[Any, Any]:
        z = call("cos", _uniform(src, op, (n,), device) * math.pi)
        w = (1 + r * z) / (r + z)
        y = kappa * (r - w)
        v = _uniform(src, op, (n,), device)
        ok = call("logical_or", call("greater_equal", y * (2 - y) - v, 0),
                  call("greater_equal", call("log", y / call("maximum", v, 1e-300)) + 1 - y, 0))  # fmt: skip
        angle = call("acos", call("minimum", call("maximum", w, -1.0), 1.0))
        angle = where(call("less", _uniform(src, op, (n,), device), 0.5), -angle, angle) + mu
        wrapped = call("remainder", angle + math.pi, 2 * math.pi) - math.pi  # into [-pi, pi)
        return wrapped, ok

    return _rejection(src, op, size, device, propose)


def zipf(src: dr.Source, op: str, a: Any, size: Any, device: Any = None) -> Any:
    """NumPy's rejection method for the Zipf distribution (``a > 1``), for a number parameter."""
    if not dr._is_number(a) or not a > 1:
        raise ValueError(f"{op}: a={a!r} must be a number above 1")
    am1 = float(a) - 1.0
    b = 2.0**am1

    def propose(n: int) -> tuple[Any, Any]:
        u = 1.0 - _uniform(src, op, (n,), device)
        v = _uniform(src, op, (n,), device)
        x = call("floor", call("pow", u, -1.0 / am1))
        t = call("pow", 1.0 + 1.0 / call("maximum", x, 1.0), am1)
        ok = call("logical_and", call("logical_and", call("greater_equal", x, 1), call("less", x, 2.0**62)),
                  call("less_equal", v * x * (t - 1) / (b - 1), t / b))  # fmt: skip
        return call("minimum", x, 2.0**62).astype(_dtypes.int64), ok

    return _rejection(src, op, size, device, propose)
