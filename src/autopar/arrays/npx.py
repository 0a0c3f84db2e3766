"""``autopar.npx``: MXNet's ``npx`` spellings.

``npx.set_np()`` keeps NumPy's shapes and arrays (autopar has no other);
``set_np(dtype=True)`` makes float64 the default float, as in MXNet
(``autopar.set_default_dtype``), and ``reset_np()`` float32 again.
``waitall``, ``cpu``/``gpu``/``num_gpus`` are autopar's own. The operators
are the entries of ``autopar.nn.functional`` (``_nn.py``) under MXNet's names
and arguments: ``relu``, ``sigmoid``, ``softmax``, ``log_softmax``,
``activation``, ``convolution``, ``pooling``, ``fully_connected``,
``batch_norm`` (MXNet's momentum and ``fix_gamma``), ``dropout`` and
``batch_flatten``. ``dropout`` and ``batch_norm`` follow MXNet's train mode
(``autograd.record()`` enters it; ``autograd.is_training()``).
"""

from __future__ import annotations

from typing import Any

from autopar.arrays import _autograd, _dtypes, _nn
from autopar.arrays._elementwise import FUNCTIONS
from autopar.arrays._manipulation import _array_like, normalize_axis, reshape
from autopar.devices import cpu, gpu, num_gpus
from autopar.engine import waitall

relu = FUNCTIONS["relu"]
sigmoid = FUNCTIONS["sigmoid"]


def set_np(shape: bool = True, array: bool = True, dtype: bool = False) -> None:
    """MXNet's switch to NumPy semantics: ``dtype=True`` makes float64 the default float (NumPy's dtype
    rules, ``autopar.set_default_dtype("float64")``); ``dtype=False`` float32. Shapes and arrays are
    always NumPy's."""
    _dtypes.set_default_dtype("float64" if dtype else "float32")


def reset_np() -> None:
    """Back to the deep-learning default, float32."""
    _dtypes.set_default_dtype("float32")


def softmax(data: Any, axis: int = -1) -> Any:
    x = _array_like(data)
    return _nn.softmax(x, normalize_axis("softmax", axis, max(x.ndim, 1)))


def log_softmax(data: Any, axis: int = -1) -> Any:
    x = _array_like(data)
    return _nn.log_softmax(x, normalize_axis("log_softmax", axis, max(x.ndim, 1)))


def activation(data: Any, act_type: str = "relu") -> Any:
    """``act_type``: ``relu``, ``sigmoid``, ``tanh``, ``softrelu`` (log(1 + e^x)) or ``softsign``."""
    x = _array_like(data)
    if act_type == "relu":
        return relu(x)
    if act_type == "sigmoid":
        return sigmoid(x)
    if act_type == "tanh":
        return FUNCTIONS["tanh"](x)
    if act_type == "softrelu":
        return FUNCTIONS["logaddexp"](x, 0.0)
    if act_type == "softsign":
        return x / (FUNCTIONS["abs"](x) + 1.0)
    raise ValueError(f"activation: act_type={act_type!r}; expected relu, sigmoid, tanh, softrelu or softsign")


def _tuple(value: Any, default: int) -> Any:
    return default if value is None or value == () else value


def convolution(data: Any, weight: Any, bias: Any = None, kernel: Any = None, stride: Any = (), dilate: Any = (),
                pad: Any = (), num_filter: int | None = None, num_group: int = 1, no_bias: bool = False,
                layout: str | None = None) -> Any:  # fmt: skip
    """MXNet's 2-D ``Convolution`` (layout NCHW): ``kernel`` and ``num_filter`` are read from ``weight``."""
    if layout not in (None, "NCHW"):
        raise ValueError(f"convolution: layout={layout!r}; only NCHW is supported")
    w = _array_like(weight)
    if num_filter is not None and num_filter != w.shape[0]:
        raise ValueError(f"convolution: num_filter={num_filter} but weight has {w.shape[0]} filters")
    if kernel is not None and tuple(kernel) != tuple(w.shape[2:]):
        raise ValueError(f"convolution: kernel={tuple(kernel)} but weight's kernel is {tuple(w.shape[2:])}")
    return _nn.conv2d(data, w, None if no_bias else bias, _tuple(stride, 1), _tuple(pad, 0), _tuple(dilate, 1),
                      num_group)  # fmt: skip


def pooling(data: Any, kernel: Any = (), stride: Any = (), pad: Any = (), pool_type: str = "max",
            global_pool: bool = False, pooling_convention: str = "valid", count_include_pad: bool = True) -> Any:  # fmt: skip
    """MXNet's 2-D ``Pooling``: ``max`` or ``avg``; ``stride`` defaults to 1, as in MXNet."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"pooling: pool_type={pool_type!r}; expected 'max' or 'avg'")
    if pooling_convention not in ("valid", "full"):
        raise ValueError(f"pooling: pooling_convention={pooling_convention!r}; expected 'valid' or 'full'")
    x = _array_like(data)
    if global_pool:
        if pool_type == "avg":
            return _nn.adaptive_avg_pool2d(x, 1)
        return _nn.max_pool2d(x, x.shape[-2:])
    ceil = pooling_convention == "full"
    if pool_type == "max":
        return _nn.max_pool2d(x, kernel, _tuple(stride, 1), _tuple(pad, 0), ceil_mode=ceil)
    return _nn.avg_pool2d(x, kernel, _tuple(stride, 1), _tuple(pad, 0), ceil, count_include_pad)


def fully_connected(x: Any, weight: Any, bias: Any = None, num_hidden: int | None = None, no_bias: bool = False,
                    flatten: bool = True) -> Any:  # fmt: skip
    """MXNet's ``FullyConnected``: ``x @ weight.T + bias``, ``x`` flattened to 2-D first when ``flatten``."""
    data = _array_like(x)
    w = _array_like(weight)
    if num_hidden is not None and num_hidden != w.shape[0]:
        raise ValueError(f"fully_connected: num_hidden={num_hidden} but weight has {w.shape[0]} rows")
    if flatten and data.ndim != 2:
        data = batch_flatten(data)
    return _nn.linear(data, w, None if no_bias else bias)


def batch_flatten(data: Any) -> Any:
    """(N, ...) to (N, rest): a view when it can be."""
    x = _array_like(data)
    return reshape(x, (x.shape[0], -1)) if x.ndim else reshape(x, (1, 1))


def batch_norm(x: Any, gamma: Any, beta: Any, running_mean: Any, running_var: Any, eps: float = 1e-3,
               momentum: float = 0.9, fix_gamma: bool = True, use_global_stats: bool = False, axis: int = 1) -> Any:  # fmt: skip
    """MXNet's ``BatchNorm``: running = momentum * running + (1 - momentum) * batch; ``fix_gamma`` uses
    a scale of 1; batch statistics in train mode unless ``use_global_stats``."""
    if axis != 1:
        raise ValueError(f"batch_norm: axis={axis}; only the channel axis 1 is supported")
    training = _autograd.is_training() and not use_global_stats
    return _nn.batch_norm(x, running_mean, running_var, None if fix_gamma else gamma, beta, training,
                          1.0 - momentum, eps)  # fmt: skip


def dropout(data: Any, p: float = 0.5, mode: str = "training", axes: Any = ()) -> Any:
    """MXNet's ``Dropout``: applied in train mode (``mode="training"``) or always (``"always"``)."""
    if mode not in ("training", "always"):
        raise ValueError(f"dropout: mode={mode!r}; expected 'training' or 'always'")
    if axes not in ((), None):
        raise ValueError("dropout: axes= (shared masks) is not supported")
    return _nn.dropout(data, p, mode == "always" or _autograd.is_training())


__all__ = ["activation", "batch_flatten", "batch_norm", "convolution", "cpu", "dropout", "fully_connected", "gpu",
           "log_softmax", "num_gpus", "pooling", "relu", "reset_np", "set_np", "sigmoid", "softmax", "waitall"]  # fmt: skip
