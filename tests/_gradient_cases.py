"""One gradient case per differentiable entry of the op table: inputs, and the same function
written with autopar and with torch (the oracle: torch autograd on torch's own spelling).

A case is ``Case(draw_inputs, ours, theirs)``: ``draw_inputs(data)`` draws the float64
inputs that require grad, or ``(inputs, keywords)`` when the case draws arguments too;
``ours(*arrays, **keywords)`` and ``theirs(*tensors, **keywords)`` return a result or a tuple of them. ``test_gradients.py`` checks that ``ours`` records the entry the case is named
after, and that every differentiable entry has a case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as TF
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import autopar as ap
import autopar.nn.functional as F

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
MATRICES = hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=4)


def values(data: Any, shape: Any, lo: float = -2.0, hi: float = 2.0, complex_: bool = False) -> np.ndarray:
    floats = st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    x = data.draw(hnp.arrays(np.float64, shape, elements=floats))
    if complex_:
        x = x + 1j * data.draw(hnp.arrays(np.float64, shape, elements=floats))
    return x


@dataclass
class Case:
    draw: Callable[[Any], Any]  # the inputs, or (the inputs, keywords for both spellings)
    ours: Callable[..., Any]
    theirs: Callable[..., Any]


def one(lo: float = -2.0, hi: float = 2.0, shapes: Any = SHAPES, complex_: bool = False) -> Callable[[Any], list[np.ndarray]]:
    return lambda data: [values(data, data.draw(shapes), lo, hi, complex_)]


def two(lo: float = -2.0, hi: float = 2.0, lo2: float | None = None, hi2: float | None = None) -> Callable[[Any], list[np.ndarray]]:
    def draw(data: Any) -> list[np.ndarray]:
        s1, s2 = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)).input_shapes
        return [values(data, s1, lo, hi), values(data, s2, lo if lo2 is None else lo2, hi if hi2 is None else hi2)]

    return draw


def fixed(*shapes: tuple[int, ...], lo: float = -2.0, hi: float = 2.0, complex_: bool = False) -> Callable[[Any], list[np.ndarray]]:
    return lambda data: [values(data, s, lo, hi, complex_) for s in shapes]


def square(max_n: int = 4) -> Callable[[Any], list[np.ndarray]]:
    """One n x n matrix, n drawn."""
    return lambda data: [values(data, (n, n)) for n in [data.draw(st.integers(1, max_n), label="n")]]


CASES: dict[str, Case] = {}

# -- elementwise ----------------------------------------------------------------------------------------

UNARY = {
    "acos": (-0.9, 0.9), "asin": (-0.9, 0.9), "atanh": (-0.9, 0.9), "acosh": (1.1, 3.0), "log": (0.2, 3.0),
    "log2": (0.2, 3.0), "log10": (0.2, 3.0), "sqrt": (0.2, 3.0), "rsqrt": (0.2, 3.0), "reciprocal": (0.2, 3.0),
    "log1p": (-0.5, 3.0), "tan": (-1.2, 1.2), "cbrt": (0.2, 3.0), "asinh": (-2, 2), "atan": (-2, 2), "cos": (-2, 2),
    "cosh": (-2, 2), "exp": (-2, 2), "expm1": (-2, 2), "sin": (-2, 2), "sinh": (-2, 2), "tanh": (-2, 2),
    "exp2": (-2, 2), "sigmoid": (-2, 2), "sinc": (-2, 2), "rad2deg": (-2, 2), "deg2rad": (-2, 2), "erf": (-2, 2),
    "abs": (-2, 2), "negative": (-2, 2), "positive": (-2, 2), "square": (-2, 2), "sign": (-2, 2), "ceil": (-2, 2),
    "floor": (-2, 2), "trunc": (-2, 2), "round": (-2, 2), "relu": (-2, 2),
}  # fmt: skip
TORCH_UNARY = {"negative": torch.neg, "cbrt": lambda t: t.pow(1.0 / 3.0), "relu": torch.relu, "square": torch.square}
for _name, (_lo, _hi) in UNARY.items():
    CASES[_name] = Case(one(_lo, _hi), getattr(ap, _name), TORCH_UNARY.get(_name) or getattr(torch, _name))

# complex inputs for the ops that read complex numbers
CASES["conj"] = Case(one(complex_=True), ap.conj, torch.conj_physical)
CASES["real"] = Case(one(complex_=True), ap.real, torch.real)
CASES["imag"] = Case(one(complex_=True), ap.imag, torch.imag)
CASES["angle"] = Case(one(complex_=True), ap.angle, torch.angle)
CASES["i0"] = Case(one(), ap.i0, torch.i0)

BINARY = {
    "add": (torch.add, (-2, 2, None, None)), "subtract": (torch.sub, (-2, 2, None, None)),
    "multiply": (torch.mul, (-2, 2, None, None)), "divide": (torch.div, (-2, 2, 0.5, 2.0)),
    "remainder": (torch.remainder, (-3, 3, 0.5, 2.0)), "pow": (torch.pow, (0.5, 2.0, -2.0, 2.0)),
    "atan2": (torch.atan2, (-2, 2, 0.5, 2.0)), "copysign": (torch.copysign, (-2, 2, None, None)),
    "hypot": (torch.hypot, (0.5, 2.0, None, None)), "logaddexp": (torch.logaddexp, (-2, 2, None, None)),
    "logaddexp2": (torch.logaddexp2, (-2, 2, None, None)), "nextafter": (torch.nextafter, (-2, 2, None, None)),
    "fmod": (torch.fmod, (-3, 3, 0.5, 2.0)), "float_power": (torch.float_power, (0.5, 2.0, -2.0, 2.0)),
    "ldexp": (torch.ldexp, (-2, 2, -2.0, 2.0)), "fmax": (torch.fmax, (-2, 2, None, None)),
    "fmin": (torch.fmin, (-2, 2, None, None)), "maximum": (torch.maximum, (-2, 2, None, None)),
    "minimum": (torch.minimum, (-2, 2, None, None)),
}  # fmt: skip
for _name, (_fn, _range) in BINARY.items():
    CASES[_name] = Case(two(*_range), getattr(ap, _name), _fn)


def _zeros_like_inputs(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch has no derivative of floor_divide: the true one is 0 almost everywhere."""
    return torch.floor_divide(a.detach(), b.detach()) + 0.0 * (a + b)


def _heaviside(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """torch has no derivative of heaviside: 0 in x, the chosen value where x == 0."""
    return torch.where(x.detach() == 0, v + 0.0 * x, torch.heaviside(x.detach(), v.detach()) + 0.0 * (x + v))


CASES["floor_divide"] = Case(two(-3, 3, 0.5, 2.0), ap.floor_divide, _zeros_like_inputs)
CASES["heaviside"] = Case(lambda d: [np.array([-1.0, 0.0, 2.0, 0.0]), values(d, (4,))], ap.heaviside, _heaviside)

# -- reductions and scans -----------------------------------------------------------------------------


def reduction(ours: Callable[..., Any], theirs: Callable[..., Any], lo: float = -2.0, hi: float = 2.0) -> Case:
    def draw(data: Any) -> list[np.ndarray]:
        return [values(data, data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)), lo, hi)]

    return Case(draw, lambda x: ours(x, axis=-1, keepdims=x.ndim > 1), lambda t: theirs(t, dim=-1, keepdim=t.dim() > 1))


CASES["sum"] = reduction(ap.sum, torch.sum)
CASES["prod"] = reduction(ap.prod, lambda t, dim, keepdim: torch.prod(t, dim, keepdim=keepdim), 0.5, 1.5)
CASES["nansum"] = reduction(ap.nansum, torch.nansum)
CASES["mean"] = reduction(ap.mean, torch.mean)
CASES["max"] = reduction(ap.max, torch.amax)
CASES["min"] = reduction(ap.min, torch.amin)
CASES["logsumexp"] = reduction(ap.logsumexp, torch.logsumexp)
def along_an_axis(lo: float = -2.0, hi: float = 2.0, min_side: int = 1) -> Callable[[Any], Any]:
    """An array of 1 to 3 dimensions and an axis of it (the keyword ``axis``)."""

    def draw(data: Any) -> tuple[list[np.ndarray], dict[str, Any]]:
        shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=min_side, max_side=4))
        return [values(data, shape, lo, hi)], {"axis": data.draw(st.integers(0, len(shape) - 1), label="axis")}

    return draw


CASES["var"] = Case(along_an_axis(min_side=2), lambda x, axis: ap.var(x, axis=axis, correction=1),
                    lambda t, axis: torch.var(t, dim=axis, correction=1))  # fmt: skip
CASES["std"] = Case(along_an_axis(min_side=2), lambda x, axis: ap.std(x, axis=axis), lambda t, axis: torch.std(t, dim=axis, correction=0))
CASES["cumulative_sum"] = Case(along_an_axis(), lambda x, axis: ap.cumulative_sum(x, axis=axis), lambda t, axis: torch.cumsum(t, axis))
CASES["cumulative_prod"] = Case(along_an_axis(0.5, 1.5), lambda x, axis: ap.cumulative_prod(x, axis=axis),
                                lambda t, axis: torch.cumprod(t, axis))  # fmt: skip

# -- products (drawn sizes; the inner dimensions agree) ----------------------------------------------------

_side = st.integers(1, 4)


def _matmul_draw(data: Any) -> list[np.ndarray]:
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    n, k, m = data.draw(_side), data.draw(_side), data.draw(_side)
    return [values(data, (*batch, n, k)), values(data, (k, m))]


def _sizes(*pattern: str) -> Callable[[Any], list[np.ndarray]]:
    """Shapes from letters, one drawn size per letter: ``_sizes("nk", "km")``."""

    def draw(data: Any) -> list[np.ndarray]:
        size = {c: data.draw(_side, label=c) for c in sorted(set("".join(pattern)))}
        return [values(data, tuple(size[c] for c in p)) for p in pattern]

    return draw


CASES["matmul"] = Case(_matmul_draw, ap.matmul, torch.matmul)
CASES["mm"] = Case(_sizes("nk", "km"), ap.mm, torch.mm)
CASES["dot"] = Case(_sizes("k", "k"), ap.dot, torch.dot)
CASES["vecdot"] = Case(_sizes("nk", "nk"), lambda a, b: ap.vecdot(a, b, axis=0), lambda a, b: torch.linalg.vecdot(a, b, dim=0))
CASES["tensordot"] = Case(_sizes("abc", "bcd"), lambda a, b: ap.tensordot(a, b, axes=2),
                          lambda a, b: torch.tensordot(a, b, dims=2))  # fmt: skip
CASES["outer"] = Case(_sizes("n", "m"), ap.outer, torch.outer)
CASES["inner"] = Case(_sizes("nk", "mk"), ap.inner, torch.inner)
CASES["kron"] = Case(_sizes("ab", "cd"), ap.kron, torch.kron)
CASES["cross"] = Case(fixed((2, 3), (2, 3)), ap.cross, lambda a, b: torch.linalg.cross(a, b))
CASES["einsum"] = Case(_sizes("ij", "jk"), lambda a, b: ap.einsum("ij,jk->ik", a, b), lambda a, b: torch.einsum("ij,jk->ik", a, b))
CASES["trace"] = Case(one(shapes=MATRICES), lambda a: ap.linalg.trace(a, offset=1), lambda a: torch.diagonal(a, 1).sum())
CASES["diagonal"] = Case(one(shapes=MATRICES), lambda a: ap.linalg.diagonal(a, offset=-1), lambda a: torch.diagonal(a, -1))

# -- manipulation, indexing, searching ---------------------------------------------------------------------

CASES["reshape"] = Case(one(shapes=hnp.array_shapes(min_dims=2, max_dims=2, min_side=2)),  # a.T: not contiguous
                        lambda a: ap.reshape(a.T, (-1,)), lambda a: a.T.reshape(-1))
CASES["concat"] = Case(_sizes("nk", "mk"), lambda a, b: ap.concat([a, b, a], axis=0), lambda a, b: torch.cat([a, b, a], 0))
CASES["stack"] = Case(_sizes("nk", "nk"), lambda a, b: ap.stack([a, b], axis=1), lambda a, b: torch.stack([a, b], 1))
def _broadcast_draw(data: Any) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    to = data.draw(hnp.broadcastable_shapes(shape, min_dims=len(shape), max_dims=4, max_side=3).map(
        lambda s: tuple(max(x, y) for x, y in zip(s, (1,) * (len(s) - len(shape)) + shape))))  # fmt: skip
    return [values(data, shape)], {"to": to}


CASES["broadcast_to"] = Case(_broadcast_draw, lambda a, to: ap.broadcast_to(a, to), lambda a, to: a.expand(to))

CASES["roll"] = Case(one(shapes=MATRICES), lambda a: ap.roll(a, 2, axis=1), lambda a: torch.roll(a, 2, 1))
CASES["repeat"] = Case(one(shapes=MATRICES), lambda a: ap.repeat(a, 2, axis=1), lambda a: torch.repeat_interleave(a, 2, 1))
CASES["repeat_by_array"] = Case(fixed((3,)), lambda a: ap.repeat(a, ap.asarray([1, 0, 2])),
                                lambda a: torch.repeat_interleave(a, torch.tensor([1, 0, 2])))  # fmt: skip
CASES["tile"] = Case(one(shapes=MATRICES), lambda a: ap.tile(a, (2, 1)), lambda a: a.tile(2, 1))
CASES["take"] = Case(fixed((4, 3)), lambda a: ap.take(a, ap.asarray([3, 0, 3]), axis=0), lambda a: a[[3, 0, 3]])
CASES["take_along_axis"] = Case(fixed((2, 3)), lambda a: ap.take_along_axis(a, ap.asarray([[2, 0], [1, 1]]), axis=1),
                                lambda a: torch.take_along_dim(a, torch.tensor([[2, 0], [1, 1]]), 1))  # fmt: skip
CASES["index"] = Case(fixed((4, 3)), lambda a: a[[0, 2, 2], 1:], lambda a: a[[0, 2, 2], 1:])
CASES["index_masked"] = Case(lambda d: [np.array([[1.0, -2.0, 3.0], [-1.0, 5.0, 0.5]])], lambda a: a[a > 0], lambda a: a[a > 0])
CASES["where"] = Case(two(), lambda a, b: ap.where(a > 0, a, b), lambda a, b: torch.where(a > 0, a, b))
CASES["sort"] = Case(along_an_axis(), lambda a, axis: ap.sort(a, axis=axis), lambda a, axis: torch.sort(a, axis).values)
CASES["astype"] = Case(one(), lambda a: ap.astype(a, "float32") * 2.0, lambda a: a.float() * 2.0)
CASES["copy"] = Case(one(), lambda a: a.copyto(ap.cpu(0)) * 2.0, lambda a: a.clone() * 2.0)
CASES["tril"] = Case(one(shapes=MATRICES), lambda a: ap.tril(a, k=1), lambda a: torch.tril(a, 1))
CASES["triu"] = Case(one(shapes=MATRICES), lambda a: ap.triu(a, k=-1), lambda a: torch.triu(a, -1))
CASES["diff"] = Case(fixed((3, 5)), lambda a: ap.diff(a, n=2, axis=1), lambda a: torch.diff(a, n=2, dim=1))
CASES["pad"] = Case(one(shapes=MATRICES), lambda a: ap.pad(a, ((1, 0), (2, 1))), lambda a: TF.pad(a, (2, 1, 1, 0)))
CASES["rot90"] = Case(one(shapes=MATRICES), lambda a: ap.rot90(a), lambda a: torch.rot90(a))
CASES["nan_to_num"] = Case(fixed((2, 3)), lambda a: ap.nan_to_num(a / a.sum()), lambda a: torch.nan_to_num(a / a.sum()))
CASES["quantile"] = Case(one(shapes=MATRICES), lambda a: ap.quantile(a, 0.3, axis=1), lambda a: torch.quantile(a, 0.3, dim=1))
CASES["nanquantile"] = Case(one(shapes=MATRICES), lambda a: ap.nanquantile(a, 0.6, axis=0), lambda a: torch.nanquantile(a, 0.6, dim=0))
CASES["cov"] = Case(fixed((3, 5)), ap.cov, torch.cov)
CASES["corrcoef"] = Case(fixed((3, 5)), ap.corrcoef, torch.corrcoef)
CASES["trapezoid"] = Case(one(shapes=MATRICES), lambda a: ap.trapezoid(a, dx=0.5), lambda a: torch.trapezoid(a, dx=0.5))
CASES["ufunc.accumulate"] = Case(fixed((3, 5)), lambda a: ap.maximum.accumulate(a, axis=1),
                                 lambda a: torch.cummax(a, 1).values)  # fmt: skip
CASES["correlate"] = Case(fixed((7,), (3,)), lambda a, v: ap.convolve(a, v, "same"),
                          lambda a, v: TF.conv1d(a[None, None], v.flip(0)[None, None], padding=2)[0, 0, 1:8])  # fmt: skip
CASES["trapezoid_x"] = Case(fixed((2, 3), (3,)), lambda y, x: ap.trapezoid(y, x), lambda y, x: torch.trapezoid(y, x))
CASES["pad_index"] = Case(fixed((2, 3)), lambda a: ap.pad(a, ((1, 2), (2, 1)), mode="reflect"),
                          lambda a: a[[1, 0, 1, 0, 1]][:, [2, 1, 0, 1, 2, 1]])  # fmt: skip

# -- fft ------------------------------------------------------------------------------------------------------

for _name in ("fft", "ifft", "fftn", "ifftn"):
    CASES[f"fft.{_name}"] = Case(one(shapes=MATRICES, complex_=True), getattr(ap.fft, _name), getattr(torch.fft, _name))
for _name in ("rfft", "rfftn", "ihfft"):
    CASES[f"fft.{_name}"] = Case(one(shapes=MATRICES), getattr(ap.fft, _name), getattr(torch.fft, _name))
CASES["fft.irfft"] = Case(one(shapes=MATRICES, complex_=True), lambda z: ap.fft.irfft(z, n=6), lambda z: torch.fft.irfft(z, n=6))
CASES["fft.irfftn"] = Case(one(shapes=MATRICES, complex_=True), lambda z: ap.fft.irfftn(z, s=(3, 6)), lambda z: torch.fft.irfftn(z, s=(3, 6)))
CASES["fft.hfft"] = Case(one(shapes=MATRICES, complex_=True), lambda z: ap.fft.hfft(z, n=6), lambda z: torch.fft.hfft(z, n=6))
CASES["fft.fftshift"] = Case(one(shapes=MATRICES), ap.fft.fftshift, torch.fft.fftshift)
CASES["fft.ifftshift"] = Case(one(shapes=MATRICES), ap.fft.ifftshift, torch.fft.ifftshift)

# -- linalg (well-conditioned inputs built inside, the same way on both sides) ----------------------------------


def spd(lib: Any, b: Any) -> Any:
    return b @ b.T + 3.0 * (ap.eye(b.shape[0], dtype=b.dtype) if lib is ap else torch.eye(b.shape[0], dtype=b.dtype))


def sym(b: Any) -> Any:
    return (b + b.T) * 0.5


CASES["linalg.cholesky"] = Case(square(), lambda b: ap.linalg.cholesky(spd(ap, b)), lambda b: torch.linalg.cholesky(spd(torch, b)))
CASES["linalg.det"] = Case(square(), ap.linalg.det, torch.linalg.det)
CASES["linalg.slogdet"] = Case(square(), lambda b: ap.linalg.slogdet(spd(ap, b)).logabsdet,
                               lambda b: torch.linalg.slogdet(spd(torch, b)).logabsdet)  # fmt: skip
CASES["linalg.inv"] = Case(square(), lambda b: ap.linalg.inv(spd(ap, b)), lambda b: torch.linalg.inv(spd(torch, b)))
CASES["linalg.solve"] = Case(_sizes("nn", "nk"), lambda b, y: ap.linalg.solve(spd(ap, b), y),
                             lambda b, y: torch.linalg.solve(spd(torch, b), y))  # fmt: skip
CASES["linalg.pinv"] = Case(fixed((3, 2)), ap.linalg.pinv, torch.linalg.pinv)
CASES["linalg.matrix_power"] = Case(square(), lambda b: ap.linalg.matrix_power(b, 3), lambda b: torch.linalg.matrix_power(b, 3))
CASES["linalg.eigvalsh"] = Case(square(), lambda b: ap.linalg.eigvalsh(sym(b)), lambda b: torch.linalg.eigvalsh(sym(b)))
CASES["linalg.eigh"] = Case(square(), lambda b: tuple((v * v if i else v) for i, v in enumerate(ap.linalg.eigh(sym(b)))),
                            lambda b: tuple((v * v if i else v) for i, v in enumerate(torch.linalg.eigh(sym(b)))))  # fmt: skip
CASES["linalg.qr"] = Case(fixed((4, 3)), lambda b: tuple(ap.linalg.qr(b)), lambda b: tuple(torch.linalg.qr(b)))
CASES["linalg.svd"] = Case(fixed((3, 3)), lambda b: tuple(u * u for u in ap.linalg.svd(spd(ap, b))),
                           lambda b: tuple(u * u for u in torch.linalg.svd(spd(torch, b))))  # fmt: skip
CASES["linalg.svdvals"] = Case(fixed((4, 3)), ap.linalg.svdvals, torch.linalg.svdvals)
CASES["linalg.vector_norm"] = Case(one(0.2, 2.0), lambda x: ap.linalg.vector_norm(x, ord=3), lambda x: torch.linalg.vector_norm(x, ord=3))
CASES["linalg.matrix_norm"] = Case(one(shapes=MATRICES), ap.linalg.matrix_norm, torch.linalg.matrix_norm)

# -- softmax and the nn ops -----------------------------------------------------------------------------------------

# The nn ops draw their shapes and arguments too: ``draw`` returns ``(inputs, keywords)``, and both spellings get
# the keywords. Shapes are drawn so that the op is defined (a kernel no larger than the padded input, ...).
_ints = st.integers


def _softmax_draw(data: Any) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    return [values(data, shape)], {"dim": data.draw(_ints(-len(shape), len(shape) - 1), label="dim")}


CASES["softmax"] = Case(_softmax_draw, lambda x, dim: F.softmax(x, dim=dim), lambda x, dim: torch.softmax(x, dim))
CASES["log_softmax"] = Case(_softmax_draw, lambda x, dim: ap.npx.log_softmax(x, axis=dim), lambda x, dim: torch.log_softmax(x, dim))


def _conv_draw(data: Any) -> tuple[list[np.ndarray], dict[str, Any]]:
    n, cin, cout = data.draw(_ints(1, 2)), data.draw(_ints(1, 3)), data.draw(_ints(1, 3))
    kh, kw, pad = data.draw(_ints(1, 3)), data.draw(_ints(1, 3)), data.draw(_ints(0, 1))
    h, w = kh - 2 * pad + data.draw(_ints(0, 3)), kw - 2 * pad + data.draw(_ints(0, 3))
    shapes = [(n, cin, max(h, 1), max(w, 1)), (cout, cin, kh, kw), (cout,)]
    keywords = {"stride": (data.draw(_ints(1, 2)), data.draw(_ints(1, 2))), "padding": pad}
    return [values(data, s) for s in shapes], keywords


CASES["conv2d"] = Case(_conv_draw, lambda x, w, b, **k: F.conv2d(x, w, b, **k), lambda x, w, b, **k: TF.conv2d(x, w, b, **k))


def _pool_draw(data: Any) -> tuple[list[np.ndarray], dict[str, Any]]:
    k = data.draw(_ints(1, 3))
    pad = data.draw(_ints(0, k // 2))
    shape = (data.draw(_ints(1, 2)), data.draw(_ints(1, 3)), k + data.draw(_ints(0, 3)), k + data.draw(_ints(0, 3)))
    return [values(data, shape)], {"kernel_size": k, "stride": data.draw(_ints(1, 2)), "padding": pad}


CASES["max_pool2d"] = Case(_pool_draw, lambda x, **k: F.max_pool2d(x, **k), lambda x, **k: TF.max_pool2d(x, **k))
CASES["avg_pool2d"] = Case(_pool_draw, lambda x, **k: F.avg_pool2d(x, **k), lambda x, **k: TF.avg_pool2d(x, **k))


def _adaptive_draw(data: Any) -> tuple[list[np.ndarray], dict[str, Any]]:
    shape = (data.draw(_ints(1, 2)), data.draw(_ints(1, 3)), data.draw(_ints(1, 6)), data.draw(_ints(1, 6)))
    return [values(data, shape)], {"output_size": (data.draw(_ints(1, shape[2])), data.draw(_ints(1, shape[3])))}


CASES["adaptive_avg_pool2d"] = Case(_adaptive_draw, lambda x, output_size: F.adaptive_avg_pool2d(x, output_size),
                                    lambda x, output_size: TF.adaptive_avg_pool2d(x, output_size))  # fmt: skip


def _linear_draw(data: Any) -> list[np.ndarray]:
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    cin, cout = data.draw(_ints(1, 4)), data.draw(_ints(1, 4))
    return [values(data, s) for s in ((*batch, cin), (cout, cin), (cout,))]


CASES["linear"] = Case(_linear_draw, F.linear, TF.linear)


def _cross_entropy_draw(data: Any) -> tuple[list[np.ndarray], dict[str, Any]]:
    n, c = data.draw(_ints(1, 5)), data.draw(_ints(2, 5))
    classes = data.draw(hnp.arrays(np.int64, (n,), elements=_ints(0, c - 1)))
    weights = data.draw(hnp.arrays(np.float64, (c,), elements=st.floats(0.5, 2.0)))
    keywords = {"target": classes, "weight": weights, "label_smoothing": data.draw(st.sampled_from([0.0, 0.1]))}
    return [values(data, (n, c))], keywords  # the class weights are constants (torch: not differentiable)


CASES["cross_entropy"] = Case(
    _cross_entropy_draw,
    lambda x, target, weight, label_smoothing: F.cross_entropy(x, ap.asarray(target), ap.asarray(weight),
                                                               label_smoothing=label_smoothing),
    lambda x, target, weight, label_smoothing: TF.cross_entropy(x, torch.from_numpy(target), torch.from_numpy(weight),
                                                                label_smoothing=label_smoothing))  # fmt: skip


def _batch_norm_draw(data: Any) -> list[np.ndarray]:
    c = data.draw(_ints(1, 3))
    shape = (data.draw(_ints(2, 4)), c, *data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)))
    return [values(data, shape), values(data, (c,)), values(data, (c,))]


CASES["batch_norm"] = Case(_batch_norm_draw,
                           lambda x, w, b: F.batch_norm(x, ap.zeros(w.shape[0], dtype="float64"),
                                                        ap.ones(w.shape[0], dtype="float64"), w, b, training=True),
                           lambda x, w, b: TF.batch_norm(x, torch.zeros(w.shape[0], dtype=torch.float64),
                                                         torch.ones(w.shape[0], dtype=torch.float64), w, b, training=True))  # fmt: skip


def _dropout_oracle(x: torch.Tensor) -> torch.Tensor:
    """The mask is autopar's own draw: test_gradients checks dropout against its result instead."""
    raise NotImplementedError


CASES["dropout"] = Case(one(0.5, 2.0, hnp.array_shapes(min_dims=3, max_dims=3, min_side=4, max_side=6)),  # >= 64 elements
                        lambda x: F.dropout(x, 0.3), _dropout_oracle)
