"""The array layer: ``NDArray``, the op table and its one dispatcher, on PyTorch kernels.

Layout (each module one idea; see each module's design note):

| module              | holds                                                                  |
|---------------------|------------------------------------------------------------------------|
| ``_table.py``       | ``OpDef`` and ``TABLE``: every op defined once                          |
| ``_dispatch.py``    | the one path: validate -> infer -> an interpreter; the lean paths       |
| ``_eager.py``       | the eager interpreter's general path: allocate, run, push               |
| ``_plan.py``        | step 2, cached: result dtypes/shapes, kernel dtypes, work, per signature |
| ``_infer.py``       | result shapes from torch meta tensors                                   |
| ``_interpreters.py`` | interpreters registered from above: a thread's tracing one, the cluster's |
| ``_dtypes.py``      | dtype objects, promotion, Python-scalar rules, NumPy mode (the default float) |
| ``_views.py``       | storages and NumPy views (negative strides included)                     |
| ``_array.py``       | the ``NDArray`` type: attributes, reading values, making arrays and views |
| ``_elementwise.py``, ``_reductions.py``, ``_products.py``, ``_manipulation.py``, ``_indexing.py``, ``_searching.py``, ``_creation.py``, ``_copy.py``, ``_random.py``, ``_linalg.py``, ``_fft.py``, ``_call.py``, ``_nn.py`` (neural-network ops), ``_updates.py`` (optimizer updates) | op families: table entries and the functions that call them |
| ``_autograd.py``    | gradients: the records the dispatcher makes, the modes (design note)    |
| ``_backward.py``    | the backward pass: one engine op per recorded op                        |
| ``_operators.py``   | the array's operators (``+``, ``+=``, ``[]`` ...), ``T``, ``mT``         |
| ``_grad_methods.py`` | ``attach_grad``, ``requires_grad_``, ``grad``, ``backward``, ``detach`` |
| ``_methods.py``     | the array's named methods; attaches them, the operators and the gradient methods to ``NDArray`` |
| ``_numpy.py``, ``_numpy_shapes.py``, ``_padding.py`` | NumPy's names beyond the standard         |
| ``_keywords.py``    | NumPy's ``out=``/``where=``/``dtype=``/``initial=``, as compositions of ops |
| ``_ufunc.py``       | NumPy's ufunc objects: ``reduce``, ``accumulate``, ``outer``, ``at``       |
| ``_histogram.py``, ``_signal.py``, ``_keys.py``, ``_insert.py``, ``_poly.py``, ``_poly1d.py``, ``_windows.py``, ``_arrange.py``, ``_numeric_misc.py``, ``_index_tricks.py``, ``_functional.py``, ``_linalg_numpy.py`` | NumPy's histograms, convolve/correlate, lexsort/ix_, insert, polynomials, windows, placing, misc helpers, ``r_``/``mgrid``, function-taking functions, ``linalg`` beyond the standard |
| ``_numpy_methods.py`` | NumPy's array methods and attributes beyond ``_methods.py`` (attached with them) |
| ``_draws.py``, ``_generator.py``, ``_distributions.py``, ``_distributions_api.py`` | random draws (one entry), ``default_rng``/``Generator``, NumPy's distributions |
| ``_info.py``        | ``finfo``/``iinfo``/``isdtype``/``result_type``/``can_cast``, namespace info |
| ``random.py``, ``linalg.py``, ``fft.py``, ``npx.py`` | the public sub-namespaces                         |
| ``_namespace.py``   | every public name bound to its implementation                           |

Imports go one way (a test checks that the graph is acyclic): the op
modules import the array type and the dispatcher, never the other way
round; ``_methods`` sits above them all and gives ``NDArray`` its methods
when imported, so every way in from above (``_namespace``, ``nn``,
``parallel``) imports it first. Nothing here imports the cluster: it
registers its remote interpreter in ``_interpreters``.

This package's ``__init__`` does not import torch: it lists the public names
(``autopar`` serves them lazily, so ``import autopar`` stays cheap) and
loads ``_namespace`` on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    'NDArray', '__array_api_version__', '__array_namespace_info__', 'abs', 'absolute', 'acos', 'acosh', 'add',
    'all', 'allclose', 'amax', 'amin', 'angle', 'any', 'append', 'arange', 'arccos', 'arccosh', 'arcsin',
    'arcsinh', 'arctan', 'arctan2', 'arctanh', 'argmax', 'argmin', 'argpartition', 'argsort', 'argwhere',
    'around', 'array', 'array_equal', 'array_equiv', 'array_split', 'asanyarray', 'asarray',
    'ascontiguousarray', 'asin', 'asinh', 'astype', 'atan', 'atan2', 'atanh', 'atleast_1d', 'atleast_2d',
    'atleast_3d', 'average', 'bfloat16', 'bincount', 'bitwise_and', 'bitwise_invert', 'bitwise_left_shift',
    'bitwise_not', 'bitwise_or', 'bitwise_right_shift', 'bitwise_xor', 'bool', 'bool_', 'broadcast_arrays',
    'broadcast_shapes', 'broadcast_to', 'call', 'can_cast', 'cbrt', 'ceil', 'clip', 'column_stack',
    'complex128', 'complex64', 'compress', 'concat', 'concatenate', 'conj', 'conjugate', 'copy', 'copysign',
    'copyto', 'corrcoef', 'cos', 'cosh', 'count_nonzero', 'cov', 'cross', 'cumprod', 'cumsum',
    'cumulative_prod', 'cumulative_sum', 'deg2rad', 'degrees', 'delete', 'diag', 'diag_indices',
    'diag_indices_from', 'diagflat', 'diagonal', 'diff', 'digitize', 'divide', 'divmod', 'dot', 'double',
    'dsplit', 'dstack', 'dtype', 'e', 'ediff1d', 'einsum', 'empty', 'empty_like', 'equal', 'erf',
    'euler_gamma', 'exp', 'exp2', 'expand_dims', 'expm1', 'extract', 'eye', 'fabs', 'fft', 'fill_diagonal',
    'finfo', 'fix', 'flatnonzero', 'flip', 'fliplr', 'flipud', 'float16', 'float32', 'float64', 'float_power',
    'floor', 'floor_divide', 'fmax', 'fmin', 'fmod', 'frexp', 'from_dlpack', 'from_torch', 'full',
    'full_like', 'gcd', 'geomspace', 'get_default_dtype', 'greater', 'greater_equal', 'half', 'heaviside', 'hsplit', 'hstack',
    'hypot', 'i0', 'identity', 'iinfo', 'imag', 'indices', 'inf', 'inner', 'int16', 'int32', 'int64', 'int8',
    'int_', 'intersect1d', 'intp', 'invert', 'isclose', 'iscomplex', 'iscomplexobj', 'isdtype', 'isfinite',
    'isin', 'isinf', 'isnan', 'isneginf', 'isposinf', 'isreal', 'isrealobj', 'isscalar', 'issubdtype',
    'iterable', 'kron', 'lcm', 'ldexp', 'left_shift', 'less', 'less_equal', 'linalg', 'linspace', 'log',
    'log10', 'log1p', 'log2', 'logaddexp', 'logaddexp2', 'logical_and', 'logical_not', 'logical_or',
    'logical_xor', 'logspace', 'logsumexp', 'matmul', 'matrix_transpose', 'matvec', 'max', 'maximum',
    'may_share_memory', 'mean', 'median', 'meshgrid', 'min', 'minimum', 'mm', 'mod', 'modf', 'moveaxis',
    'multiply', 'nan', 'nan_to_num', 'nanargmax', 'nanargmin', 'nancumprod', 'nancumsum', 'nanmax', 'nanmean',
    'nanmedian', 'nanmin', 'nanpercentile', 'nanprod', 'nanquantile', 'nanstd', 'nansum', 'nanvar', 'ndarray',
    'ndim', 'negative', 'newaxis', 'nextafter', 'nonzero', 'not_equal', 'npx', 'ones', 'ones_like', 'outer',
    'pad', 'partition', 'percentile', 'permute_dims', 'pi', 'positive', 'pow', 'power', 'prod',
    'promote_types', 'ptp', 'put', 'quantile', 'rad2deg', 'radians', 'rand', 'randn', 'random', 'ravel',
    'ravel_multi_index', 'real', 'reciprocal', 'relu', 'remainder', 'repeat', 'reshape', 'result_type',
    'right_shift', 'rint', 'roll', 'rollaxis', 'rot90', 'round', 'row_stack', 'rsqrt', 'searchsorted',
    'select', 'set_default_dtype', 'setdiff1d', 'setxor1d', 'shape', 'shares_memory', 'sigmoid', 'sign', 'signbit', 'sin', 'sinc',
    'single', 'sinh', 'size', 'sort', 'split', 'sqrt', 'square', 'squeeze', 'stack', 'std', 'subtract', 'sum',
    'swapaxes', 'take', 'take_along_axis', 'tan', 'tanh', 'tensordot', 'tile', 'trace', 'transpose',
    'trapezoid', 'tri', 'tril', 'tril_indices', 'tril_indices_from', 'triu', 'triu_indices',
    'triu_indices_from', 'true_divide', 'trunc', 'uint', 'uint16', 'uint32', 'uint64', 'uint8', 'union1d',
    'unique', 'unique_all', 'unique_counts', 'unique_inverse', 'unique_values', 'unravel_index', 'unstack',
    'var', 'vdot', 'vecdot', 'vecmat', 'vsplit', 'vstack', 'where', 'zeros', 'zeros_like'
]


# NumPy names for NumPy programs: ufunc objects, histograms, signals, sorting by keys, index grids
__all__ += [
    'ufunc', 'histogram', 'histogram2d', 'histogramdd', 'histogram_bin_edges', 'convolve', 'correlate', 'lexsort', 'ix_',
    'gradient', 'interp', 'polyfit', 'polyval', 'vander', 'insert', 'bartlett', 'blackman', 'hamming', 'hanning',
    'kaiser', 'poly', 'poly1d', 'polyadd', 'polyder', 'polydiv', 'polyint', 'polymul', 'polysub', 'roots',
    'block', 'choose', 'mask_indices', 'place', 'put_along_axis', 'putmask', 'resize', 'trim_zeros',
    'asarray_chkfinite', 'asfortranarray', 'bitwise_count', 'einsum_path', 'isfortran', 'packbits', 'real_if_close',
    'require', 'sort_complex', 'spacing', 'unpackbits', 'unwrap', 'apply_along_axis', 'apply_over_axes',
    'fromfunction', 'fromiter', 'piecewise', 'c_', 'index_exp', 'mgrid', 'ogrid', 'r_', 's_', 'ndindex', 'ndenumerate',
    'broadcast', 'flatiter',
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from autopar.arrays import _namespace

        return getattr(_namespace, name)
    raise AttributeError(f"module 'autopar.arrays' has no attribute {name!r}")
