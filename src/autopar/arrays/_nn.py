"""Neural-network ops: table entries with ``torch.nn.functional``'s names and arguments.

``autopar.nn.functional`` serves these, ``autopar.npx`` their MXNet spellings
(``npx.convolution``, ``npx.pooling``, ...). Each op is one entry whose kernel
is torch's functional op, so its gradient is torch's (``_autograd.py``); the
result shapes come from torch's meta tensors, and bad arguments raise at the
call naming the op (``_infer``).

Two ops have state. ``batch_norm`` in training updates its running statistics
as torch does: its entry returns the normalised input *and* the new running
mean and variance (computed on copies: kernels never write their inputs), and
the function writes those into the arrays it was given -- an overwrite each,
ordered like any write. ``dropout`` draws its mask from the device's random
generator (``_random.py``): the op reads and writes the generator's var, so
its masks are reproducible after ``random.seed(n)`` and ordered with every
other draw on that device, on any engine.

``flatten``, ``relu``, ``softmax`` and ``log_softmax`` are the existing
entries (``reshape`` -- a view when it can be --, ``relu``, ``softmax``,
``log_softmax``); ``relu(x, inplace=True)`` writes through ``x``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from autopar.arrays import _dtypes, _random
from autopar.arrays._array import NDArray
from autopar.arrays._creation import asarray
from autopar.arrays._dispatch import bind, bind_into
from autopar.arrays._dtypes import DType
from autopar.arrays._elementwise import FUNCTIONS
from autopar.arrays._manipulation import normalize_axis, reshape
from autopar.arrays._table import TABLE, define, floating, promoting, same

Pair = tuple[int, int]
Shape = tuple[int, ...]


def _array(op: str, x: Any, what: str = "input") -> NDArray:
    if type(x) is NDArray:
        return x
    if isinstance(x, (bool, int, float)) or x is None:
        raise TypeError(f"{op}: {what} must be an array; got {x!r}")
    return asarray(x)


def _pair(op: str, name: str, value: Any, least: int = 0) -> Pair:
    items = (value, value) if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(items) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= least for v in items):
        raise ValueError(f"{op}: {name}={value!r}; expected an int >= {least} or a pair of them")
    return (int(items[0]), int(items[1]))


def _with_optional(*tensors: torch.Tensor, present: tuple[bool, ...]) -> list[torch.Tensor | None]:
    """The kernel's optional inputs, ``None`` where absent (arrays cannot be None)."""
    it = iter(tensors)
    return [next(it) if p else None for p in present]


# -- convolution, pooling, linear ----------------------------------------------------------------


def _conv2d(x: torch.Tensor, w: torch.Tensor, *b: torch.Tensor, stride: Pair, padding: Any, dilation: Pair,
            groups: int) -> torch.Tensor:  # fmt: skip
    return F.conv2d(x, w, b[0] if b else None, stride, padding, dilation, groups)


def _max_pool2d(x: torch.Tensor, kernel_size: Pair, stride: Pair, padding: Pair, dilation: Pair,
                ceil_mode: bool) -> torch.Tensor:  # fmt: skip
    return F.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)


def _avg_pool2d(x: torch.Tensor, kernel_size: Pair, stride: Pair, padding: Pair, ceil_mode: bool,
                count_include_pad: bool, divisor_override: int | None) -> torch.Tensor:  # fmt: skip
    return F.avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _linear(x: torch.Tensor, w: torch.Tensor, *b: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w, b[0] if b else None)


# Shape rules for the common, valid calls; None (anything else) lets torch's meta kernels answer, and
# raise. Not for speed: torch's meta kernels for these import sympy (conv) and torch._dynamo (linear's
# addmm) on first use, 0.3 and 0.7 s of a program's first step. Checked against the meta answers.


def _conv2d_shape(op: str, shapes: tuple[Shape, ...], static: dict[str, Any]) -> tuple[Shape, ...] | None:
    x, w = shapes[0], shapes[1]
    padding, groups = static["padding"], static["groups"]
    if len(x) not in (3, 4) or len(w) != 4 or isinstance(padding, str) or x[-3] != w[1] * groups or w[0] % groups:
        return None
    if len(shapes) == 3 and shapes[2] != (w[0],):
        return None
    size = _window(x[-2:], w[2:], static["stride"], padding, static["dilation"], False)
    return None if size is None or 0 in x else ((*x[:-3], w[0], *size),)


def _pool_shape(op: str, shapes: tuple[Shape, ...], static: dict[str, Any]) -> tuple[Shape, ...] | None:
    x, k, padding = shapes[0], static["kernel_size"], static["padding"]
    if len(x) not in (3, 4) or 0 in x or padding[0] > k[0] // 2 or padding[1] > k[1] // 2:
        return None
    size = _window(x[-2:], k, static["stride"], padding, static.get("dilation", (1, 1)), static["ceil_mode"])
    return None if size is None else ((*x[:-2], *size),)


def _window(size: Shape, kernel: Shape, stride: Pair, padding: Pair, dilation: Pair, ceil: bool) -> Shape | None:
    """torch's output size of a sliding window per dimension; None where it would be under 1."""
    out = []
    for n, k, s, p, d in zip(size, kernel, stride, padding, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        if span < 0:
            return None
        m = (span + (s - 1 if ceil else 0)) // s + 1
        if ceil and (m - 1) * s >= n + p:
            m -= 1
        out.append(m)
    return tuple(out)


def _linear_shape(op: str, shapes: tuple[Shape, ...], static: dict[str, Any]) -> tuple[Shape, ...] | None:
    x, w = shapes[0], shapes[1]
    if not x or len(w) != 2 or x[-1] != w[1] or len(shapes) == 3 and shapes[2] != (w[0],):
        return None
    return ((*x[:-1], w[0]),)


_FLOAT = promoting("real floating-point")
define("conv2d", _conv2d, _FLOAT, shape=_conv2d_shape)
define("max_pool2d", _max_pool2d, same("real floating-point"), shape=_pool_shape)
define("avg_pool2d", _avg_pool2d, same("real floating-point"), shape=_pool_shape)
define("adaptive_avg_pool2d", lambda x, output_size: F.adaptive_avg_pool2d(x, output_size), same("real floating-point"))
define("linear", _linear, _FLOAT, shape=_linear_shape)


def conv2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
           groups: int = 1) -> NDArray:  # fmt: skip
    """2-D convolution of ``input`` (N, C, H, W) or (C, H, W) with ``weight`` (O, C/groups, kH, kW), as torch's."""
    x, w = _array("conv2d", input), _array("conv2d", weight, "weight")
    pad = padding if padding in ("same", "valid") else _pair("conv2d", "padding", padding)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"conv2d: groups={groups!r}; expected an int >= 1")
    static = {"stride": _pair("conv2d", "stride", stride, 1), "padding": pad,
              "dilation": _pair("conv2d", "dilation", dilation, 1), "groups": groups}  # fmt: skip
    args = (x, w) if bias is None else (x, w, _array("conv2d", bias, "bias"))
    out: NDArray = bind(TABLE["conv2d"], args, static)
    return out


def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> NDArray:  # fmt: skip
    """2-D max pooling, as torch's (``stride`` defaults to ``kernel_size``)."""
    if return_indices:
        raise ValueError("max_pool2d: return_indices=True is not supported; autopar returns the values only")
    k = _pair("max_pool2d", "kernel_size", kernel_size, 1)
    static = {"kernel_size": k, "stride": k if stride is None else _pair("max_pool2d", "stride", stride, 1),
              "padding": _pair("max_pool2d", "padding", padding), "dilation": _pair("max_pool2d", "dilation", dilation, 1),
              "ceil_mode": bool(ceil_mode)}  # fmt: skip
    out: NDArray = bind(TABLE["max_pool2d"], (_array("max_pool2d", input),), static)
    return out


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> NDArray:  # fmt: skip
    """2-D average pooling, as torch's (``stride`` defaults to ``kernel_size``)."""
    k = _pair("avg_pool2d", "kernel_size", kernel_size, 1)
    static = {"kernel_size": k, "stride": k if stride is None else _pair("avg_pool2d", "stride", stride, 1),
              "padding": _pair("avg_pool2d", "padding", padding), "ceil_mode": bool(ceil_mode),
              "count_include_pad": bool(count_include_pad), "divisor_override": divisor_override}  # fmt: skip
    out: NDArray = bind(TABLE["avg_pool2d"], (_array("avg_pool2d", input),), static)
    return out


def adaptive_avg_pool2d(input: Any, output_size: Any) -> NDArray:
    """Average pooling to ``output_size`` (an int, a pair; None keeps that dimension), as torch's."""
    size = output_size if isinstance(output_size, int) else tuple(output_size)
    out: NDArray = bind(TABLE["adaptive_avg_pool2d"], (_array("adaptive_avg_pool2d", input),), {"output_size": size})
    return out


def linear(input: Any, weight: Any, bias: Any = None) -> NDArray:
    """``input @ weight.T + bias``, as torch's."""
    x, w = _array("linear", input), _array("linear", weight, "weight")
    args = (x, w) if bias is None else (x, w, _array("linear", bias, "bias"))
    out: NDArray = bind(TABLE["linear"], args)
    return out


# -- activations, softmax, loss ---------------------------------------------------------------------


def relu(input: Any, inplace: bool = False) -> NDArray:
    x = _array("relu", input)
    if inplace:
        return bind_into(TABLE["relu"], x, (x,), what="relu (in place)")
    out: NDArray = FUNCTIONS["relu"](x)
    return out


def _softmax_dim(op: str, x: NDArray, dim: Any) -> int:
    if dim is None:  # torch's implicit choice (deprecated there)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return normalize_axis(op, dim, max(x.ndim, 1))


def softmax(input: Any, dim: Any = None, dtype: Any = None) -> NDArray:
    x = _array("softmax", input)
    x = x if dtype is None else x.astype(dtype)
    out: NDArray = bind(TABLE["softmax"], (x,), {"axis": _softmax_dim("softmax", x, dim)})
    return out


def log_softmax(input: Any, dim: Any = None, dtype: Any = None) -> NDArray:
    x = _array("log_softmax", input)
    x = x if dtype is None else x.astype(dtype)
    out: NDArray = bind(TABLE["log_softmax"], (x,), {"axis": _softmax_dim("log_softmax", x, dim)})
    return out


def _cross_entropy_dtypes(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
    x, target = dtypes[0], dtypes[1]
    _dtypes.check_category(op, x, "real floating-point", "input")
    if target.kind in "iu":  # class indices
        casts: list[DType | None] = [None, _dtypes.int64]
    else:  # class probabilities
        _dtypes.check_category(op, target, "real floating-point", "target")
        casts = [None, x]
    if len(dtypes) > 2:
        casts.append(x)  # weight
    return (x,), tuple(casts)


def _cross_entropy(x: torch.Tensor, target: torch.Tensor, *weight: torch.Tensor, ignore_index: int, reduction: str,
                   label_smoothing: float) -> torch.Tensor:  # fmt: skip
    return F.cross_entropy(x, target, weight[0] if weight else None, ignore_index=ignore_index, reduction=reduction,
                           label_smoothing=label_smoothing)  # fmt: skip


define("softmax", lambda t, axis: torch.softmax(t, dim=axis), floating("real numeric"))
define("log_softmax", lambda t, axis: torch.log_softmax(t, dim=axis), floating("real numeric"))
def _cross_entropy_shape(op: str, shapes: tuple[Shape, ...], static: dict[str, Any]) -> tuple[Shape, ...] | None:
    """(N, C) logits with (N,) class indices or (N, C) probabilities (and (C,) weights); else torch's meta
    kernel, which imports torch._dynamo on first use (module note above ``_conv2d_shape``)."""
    x, target = shapes[0], shapes[1]
    if len(x) != 2 or 0 in x or target not in (x[:1], x) or len(shapes) == 3 and shapes[2] != x[1:]:
        return None
    return (x[:1],) if static["reduction"] == "none" else ((),)


define("cross_entropy", _cross_entropy, _cross_entropy_dtypes, shape=_cross_entropy_shape)
_REDUCTIONS = ("mean", "sum", "none")


def cross_entropy(input: Any, target: Any, weight: Any = None, size_average: Any = None, ignore_index: int = -100,
                  reduce: Any = None, reduction: str = "mean", label_smoothing: float = 0.0) -> NDArray:  # fmt: skip
    """Softmax cross-entropy of logits ``input`` (N, C, ...) against class indices or probabilities, as torch's."""
    if size_average is not None or reduce is not None:
        raise ValueError("cross_entropy: size_average= and reduce= are deprecated in torch; use reduction=")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"cross_entropy: reduction={reduction!r}; expected one of {', '.join(_REDUCTIONS)}")
    if not 0.0 <= float(label_smoothing) <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing={label_smoothing!r}; expected a number in [0, 1]")
    x, t = _array("cross_entropy", input), _array("cross_entropy", target, "target")
    # torch's loss is not differentiable in the class weights: they are constants here
    args = (x, t) if weight is None else (x, t, _array("cross_entropy", weight, "weight").detach())
    static = {"ignore_index": int(ignore_index), "reduction": reduction, "label_smoothing": float(label_smoothing)}
    out: NDArray = bind(TABLE["cross_entropy"], args, static)
    return out


# -- batch norm, dropout, flatten -----------------------------------------------------------------


def _batch_norm(x: torch.Tensor, *given: torch.Tensor, present: tuple[bool, ...], training: bool, momentum: float,
                eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    mean, var, weight, bias = _with_optional(*given, present=present)
    if mean is not None and var is not None:
        mean, var = mean.clone(), var.clone()  # torch updates them in place; kernels never write their inputs
    y = F.batch_norm(x, mean, var, weight, bias, training, momentum, eps)
    empty = x.new_empty((0,))
    return y, empty if mean is None else mean, empty if var is None else var


def _three(op: str, dtypes: tuple[DType, ...], static: dict[str, Any]) -> Any:
    (r,), casts = _FLOAT(op, dtypes, static)
    return (r, r, r), casts


define("batch_norm", _batch_norm, _three, nout=3)


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None, bias: Any = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> NDArray:  # fmt: skip
    """Batch normalisation over the channel axis 1, as torch's: in training the batch's statistics,
    and ``running_mean``/``running_var`` updated (``momentum``); else the running statistics."""
    x = _array("batch_norm", input)
    if momentum is None:
        raise ValueError("batch_norm: momentum=None (a cumulative average) is not supported; give a number")
    if (running_mean is None) != (running_var is None):
        raise ValueError("batch_norm: give both running_mean and running_var, or neither")
    if not training and running_mean is None:
        raise ValueError("batch_norm: training=False needs running_mean and running_var")
    optional = (running_mean, running_var, weight, bias)
    names = ("running_mean", "running_var", "weight", "bias")
    given = tuple(_array("batch_norm", a, n) for a, n in zip(optional, names) if a is not None)
    if running_mean is not None:  # statistics, not parameters: no gradient flows to them (as in torch)
        given = (given[0].detach(), given[1].detach(), *given[2:])
    static = {"present": tuple(a is not None for a in optional), "training": bool(training),
              "momentum": float(momentum), "eps": float(eps)}  # fmt: skip
    y, new_mean, new_var = bind(TABLE["batch_norm"], (x, *given), static)
    if training and running_mean is not None:
        from autopar.arrays._copy import copy_into

        copy_into(new_mean.detach(), given[0])
        copy_into(new_var.detach(), given[1])
    out: NDArray = y
    return out


def _dropout(x: torch.Tensor, p: float, device: str) -> torch.Tensor:
    if p == 1.0:
        return x * 0.0
    gen = _random._generators[device][1]
    keep = torch.empty(x.shape, dtype=x.dtype, device=x.device).bernoulli_(1.0 - p, generator=gen)
    return x * keep / (1.0 - p)


define("dropout", _dropout, same("real floating-point"))


def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> NDArray:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)`` when
    ``training``; the input itself otherwise. The mask comes from the device's generator."""
    x = _array("dropout", input)
    if not 0.0 <= float(p) <= 1.0 or isinstance(p, bool):
        raise ValueError(f"dropout: p={p!r}; expected a probability in [0, 1]")
    if not training or p == 0.0:
        return x
    var, _ = _random._generator(x.device)
    out: NDArray = bind(TABLE["dropout"], (x,), {"p": float(p), "device": str(x.device)}, state=(var,))
    if inplace:
        from autopar.arrays._copy import copy_into

        return copy_into(out, x)
    return out


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> NDArray:
    """Dimensions ``start_dim``..``end_dim`` merged into one (torch.flatten): a view when it can be."""
    x = _array("flatten", input)
    if x.ndim == 0:
        return reshape(x, (1,))
    start = normalize_axis("flatten", start_dim, x.ndim, "start_dim")
    end = normalize_axis("flatten", end_dim, x.ndim, "end_dim")
    if start > end:
        raise ValueError(f"flatten: start_dim={start_dim} comes after end_dim={end_dim}")
    shape = (*x.shape[:start], math.prod(x.shape[start : end + 1]), *x.shape[end + 1 :])
    return reshape(x, shape)
