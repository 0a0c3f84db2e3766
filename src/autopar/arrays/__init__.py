"""The array layer: ``NDArray``, the op table and its one dispatcher, on PyTorch kernels.

Layout (each module one idea; see each module's design note):

| module              | holds                                                                  |
|---------------------|------------------------------------------------------------------------|
| ``_table.py``       | ``OpDef`` and ``TABLE``: every op defined once                          |
| ``_dispatch.py``    | the one path: validate -> infer -> allocate -> push                     |
| ``_infer.py``       | result shapes from torch meta tensors, cached                           |
| ``_dtypes.py``      | dtype objects, promotion, Python-scalar rules                            |
| ``_views.py``       | storages and NumPy views (negative strides included)                     |
| ``_array.py``       | the ``NDArray`` class and its operators; ``_methods.py`` its methods     |
| ``_elementwise.py``, ``_reductions.py``, ``_products.py``, ``_manipulation.py``, ``_indexing.py``, ``_searching.py``, ``_creation.py``, ``_copy.py``, ``_random.py``, ``_linalg.py``, ``_fft.py``, ``_call.py`` | op families: table entries and the functions that call them |
| ``_info.py``        | ``finfo``/``iinfo``/``isdtype``/``result_type``/``can_cast``, namespace info |
| ``random.py``, ``linalg.py``, ``fft.py``, ``npx.py`` | the public sub-namespaces                         |
| ``_namespace.py``   | every public name bound to its implementation                           |

This package's ``__init__`` does not import torch: it lists the public names
(``autopar`` serves them lazily, so ``import autopar`` stays cheap) and
loads ``_namespace`` on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    'NDArray', '__array_api_version__', '__array_namespace_info__', 'abs', 'acos', 'acosh', 'add', 'all',
    'any', 'arange', 'argmax', 'argmin', 'argsort', 'argwhere', 'array', 'asarray', 'asin', 'asinh', 'astype',
    'atan', 'atan2', 'atanh', 'bfloat16', 'bitwise_and', 'bitwise_invert', 'bitwise_left_shift', 'bitwise_or',
    'bitwise_right_shift', 'bitwise_xor', 'bool', 'bool_', 'broadcast_arrays', 'broadcast_to', 'call',
    'can_cast', 'cbrt', 'ceil', 'clip', 'complex128', 'complex64', 'concat', 'conj', 'copysign', 'cos',
    'cosh', 'count_nonzero', 'cross', 'cumprod', 'cumsum', 'cumulative_prod', 'cumulative_sum', 'deg2rad',
    'diagonal', 'divide', 'dot', 'double', 'dtype', 'e', 'einsum', 'empty', 'empty_like', 'equal', 'erf',
    'euler_gamma', 'exp', 'exp2', 'expand_dims', 'expm1', 'eye', 'fft', 'finfo', 'flatnonzero', 'flip',
    'float16', 'float32', 'float64', 'float_power', 'floor', 'floor_divide', 'fmax', 'fmin', 'fmod',
    'from_dlpack', 'from_torch', 'full', 'full_like', 'gcd', 'greater', 'greater_equal', 'half', 'heaviside',
    'hypot', 'identity', 'iinfo', 'imag', 'inf', 'inner', 'int16', 'int32', 'int64', 'int8', 'isdtype',
    'isfinite', 'isin', 'isinf', 'isnan', 'issubdtype', 'kron', 'lcm', 'ldexp', 'less', 'less_equal',
    'linalg', 'linspace', 'log', 'log10', 'log1p', 'log2', 'logaddexp', 'logaddexp2', 'logical_and',
    'logical_not', 'logical_or', 'logical_xor', 'logsumexp', 'matmul', 'matrix_transpose', 'max', 'maximum',
    'mean', 'meshgrid', 'min', 'minimum', 'mm', 'moveaxis', 'multiply', 'nan', 'nansum', 'ndarray',
    'negative', 'newaxis', 'nextafter', 'nonzero', 'not_equal', 'npx', 'ones', 'ones_like', 'outer',
    'permute_dims', 'pi', 'positive', 'pow', 'prod', 'promote_types', 'rad2deg', 'rand', 'randn', 'random',
    'ravel', 'real', 'reciprocal', 'relu', 'remainder', 'repeat', 'reshape', 'result_type', 'roll', 'round',
    'rsqrt', 'searchsorted', 'sigmoid', 'sign', 'signbit', 'sin', 'sinc', 'single', 'sinh', 'sort', 'sqrt',
    'square', 'squeeze', 'stack', 'std', 'subtract', 'sum', 'swapaxes', 'take', 'take_along_axis', 'tan',
    'tanh', 'tensordot', 'tile', 'transpose', 'tril', 'triu', 'trunc', 'uint16', 'uint32', 'uint64', 'uint8',
    'unique', 'unique_all', 'unique_counts', 'unique_inverse', 'unique_values', 'unstack', 'var', 'vecdot',
    'where', 'zeros', 'zeros_like'
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from autopar.arrays import _namespace

        return getattr(_namespace, name)
    raise AttributeError(f"module 'autopar.arrays' has no attribute {name!r}")
