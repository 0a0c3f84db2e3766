"""Every name of the Array API standard 2023.12 exists in autopar (and its array object's)."""

from __future__ import annotations

import autopar as ap

STANDARD_2023_12 = """
e inf nan newaxis pi
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like tril triu zeros
zeros_like
astype can_cast finfo iinfo isdtype result_type
bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128
abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert bitwise_or
bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1 floor floor_divide greater
greater_equal hypot imag isfinite isinf isnan less less_equal log log1p log2 log10 logaddexp logical_and logical_not
logical_or logical_xor maximum minimum multiply negative not_equal positive pow real remainder round sign signbit sin
sinh square sqrt subtract tan tanh trunc
take
matmul matrix_transpose tensordot vecdot
broadcast_arrays broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape roll squeeze stack tile
unstack
argmax argmin nonzero searchsorted where
unique_all unique_counts unique_inverse unique_values
argsort sort
cumulative_sum max mean min prod std sum var
all any
__array_namespace_info__
""".split()
LINALG = """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank matrix_transpose
outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm""".split()
FFT = "fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift ifftshift".split()
ARRAY = """dtype device mT ndim shape size T __abs__ __add__ __and__ __array_namespace__ __bool__ __complex__
__dlpack__ __dlpack_device__ __eq__ __float__ __floordiv__ __ge__ __getitem__ __gt__ __index__ __int__ __invert__
__le__ __lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__ __or__ __pos__ __pow__ __rshift__ __setitem__
__sub__ __truediv__ __xor__ to_device __radd__ __rsub__ __rmul__ __rtruediv__ __rfloordiv__ __rmod__ __rpow__
__rmatmul__ __rand__ __ror__ __rxor__ __rlshift__ __rrshift__ __iadd__ __isub__ __imul__ __itruediv__
__ifloordiv__ __imod__ __ipow__ __imatmul__ __iand__ __ior__ __ixor__ __ilshift__ __irshift__""".split()


def test_every_function_constant_and_dtype_of_the_standard_exists() -> None:
    missing = [n for n in STANDARD_2023_12 if not hasattr(ap, n)]
    assert missing == [] and ap.__array_api_version__ == "2023.12"
    assert [n for n in LINALG if not callable(getattr(ap.linalg, n, None))] == []
    assert [n for n in FFT if not callable(getattr(ap.fft, n, None))] == []


def test_every_attribute_and_method_of_the_array_object_exists() -> None:
    x = ap.ones((2, 2))
    assert [n for n in ARRAY if not hasattr(x, n)] == []
    assert x.__array_namespace__() is ap and x.to_device(ap.cpu(0)).tolist() == [[1.0, 1.0], [1.0, 1.0]]
