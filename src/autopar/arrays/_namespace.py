"""Every public array name, bound to its implementation (what ``autopar.<name>`` serves).

``autopar`` itself is the Array API namespace (``x.__array_namespace__()``
returns it); this module gathers the standard's names, NumPy's beyond them
(``_numpy.py``), and the PyTorch/MXNet spellings, from the modules that
define them. ``autopar/arrays/__init__.py`` lists the same names without
importing torch; a test checks that the two agree.
"""

from __future__ import annotations

import math

from autopar.arrays import _dtypes, _numpy, fft, linalg, npx, random  # noqa: F401
from autopar.arrays import _nn, _updates  # noqa: F401  (their table entries: nn ops, optimizer updates)
from autopar.arrays import _methods  # noqa: F401  (attaches the array's methods and operators)
from autopar.arrays import _ufunc
from autopar.arrays._histogram import histogram, histogram2d, histogram_bin_edges, histogramdd  # noqa: F401
from autopar.arrays._arrange import (  # noqa: F401
    block,
    choose,
    mask_indices,
    place,
    put_along_axis,
    putmask,
    resize,
    trim_zeros,
)
from autopar.arrays._functional import (  # noqa: F401
    apply_along_axis,
    apply_over_axes,
    fromfunction,
    fromiter,
    ndenumerate,
    ndindex,
    piecewise,
)
from autopar.arrays._index_tricks import broadcast, c_, index_exp, mgrid, ogrid, r_, s_  # noqa: F401
from autopar.arrays._numpy_methods import flatiter  # noqa: F401
from autopar.arrays._insert import insert  # noqa: F401
from autopar.arrays._keys import ix_, lexsort  # noqa: F401
from autopar.arrays._numeric_misc import (  # noqa: F401
    asarray_chkfinite,
    asfortranarray,
    bitwise_count,
    einsum_path,
    isfortran,
    packbits,
    real_if_close,
    require,
    sort_complex,
    spacing,
    unpackbits,
    unwrap,
)
from autopar.arrays._poly import (  # noqa: F401
    gradient,
    interp,
    poly,
    polyadd,
    polyder,
    polydiv,
    polyfit,
    polyint,
    polymul,
    polysub,
    polyval,
    roots,
    vander,
)
from autopar.arrays._poly1d import poly1d  # noqa: F401
from autopar.arrays._windows import bartlett, blackman, hamming, hanning, kaiser  # noqa: F401
from autopar.arrays._signal import convolve, correlate  # noqa: F401
from autopar.arrays._array import NDArray
from autopar.arrays._call import call  # noqa: F401
from autopar.arrays._creation import (  # noqa: F401
    arange,
    array,
    asarray,
    astype,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_torch,
    full,
    full_like,
    identity,
    linspace,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from autopar.arrays._elementwise import FUNCTIONS as _EW
from autopar.arrays._elementwise import clip  # noqa: F401
from autopar.arrays._indexing import take, take_along_axis  # noqa: F401
from autopar.arrays._dtypes import get_default_dtype, set_default_dtype  # noqa: F401
from autopar.arrays._info import (  # noqa: F401
    __array_namespace_info__,
    can_cast,
    finfo,
    iinfo,
    isdtype,
    issubdtype,
    promote_types,
    result_type,
)
from autopar.arrays._manipulation import (  # noqa: F401
    broadcast_arrays,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    matrix_transpose,
    meshgrid,
    moveaxis,
    permute_dims,
    ravel,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    swapaxes,
    tile,
    transpose,
    unstack,
)
from autopar.arrays._products import (  # noqa: F401
    cross,
    diagonal_np as diagonal,
    dot,
    einsum,
    inner,
    kron,
    matmul,
    mm,
    outer,
    tensordot,
    vecdot,
)
from autopar.arrays._numpy import *  # noqa: F401,F403 - NumPy's names beyond the standard
from autopar.arrays._numpy_shapes import *  # noqa: F401,F403
from autopar.arrays._numpy import divmod_ as divmod  # noqa: A001
from autopar.arrays._random import rand, randn  # noqa: F401
from autopar.arrays._reductions import (  # noqa: F401
    all,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    cumulative_prod,
    cumulative_sum,
    logsumexp,
    max,
    mean,
    min,
    nansum,
    prod,
    std,
    sum,
    var,
)
from autopar.arrays._searching import (  # noqa: F401
    argsort,
    argwhere,
    flatnonzero,
    isin,
    nonzero,
    searchsorted,
    sort,
    unique,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
    where,
)

__array_api_version__ = "2023.12"

ndarray = NDArray

# dtypes: autopar objects, equal to x.dtype and to their NumPy names
bool = _dtypes.bool_  # noqa: A001 - the standard's name
bool_ = _dtypes.bool_
int8, int16, int32, int64 = _dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64
uint8, uint16, uint32, uint64 = _dtypes.uint8, _dtypes.uint16, _dtypes.uint32, _dtypes.uint64
float16, bfloat16, float32, float64 = _dtypes.float16, _dtypes.bfloat16, _dtypes.float32, _dtypes.float64
complex64, complex128 = _dtypes.complex64, _dtypes.complex128
half, single, double = float16, float32, float64
dtype = _dtypes.as_dtype

# constants
e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None
euler_gamma = 0.5772156649015329

# elementwise functions of the standard and NumPy's
globals().update(_EW)
round = _numpy.around  # noqa: A001 - the standard's round(x), and NumPy's decimals= and out=

# NumPy's ufunc objects (np.add.at, np.maximum.accumulate): callable as the functions above
globals().update(_ufunc.UFUNCS)
ufunc = _ufunc.ufunc
