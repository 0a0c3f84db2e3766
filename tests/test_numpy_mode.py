"""``import autopar.numpy as np``: NumPy's dtypes (float64 default, NumPy 2 promotion) on autopar's op table,
while ``import autopar`` keeps float32; the switches; LinAlgError at the call. Oracle: NumPy itself."""

from __future__ import annotations

import threading

import numpy
import pytest

import autopar as ap
import autopar.numpy as np
from autopar import npx


def test_the_issues_examples_give_numpys_answers() -> None:
    data = [0.5, 1.25, -3.0, 1e-3]
    assert np.array(data).sum().item() == numpy.array(data).sum()
    assert np.array(data).dtype == numpy.float64
    for make in (lambda m: m.zeros(3), lambda m: m.ones((2, 2)), lambda m: m.linspace(0, 1, 5),
                 lambda m: m.eye(2), lambda m: m.full(2, 0.5), lambda m: m.arange(0.0, 1.0, 0.25),
                 lambda m: m.asarray(1.5), lambda m: m.arange(4) / 3, lambda m: m.random.rand(3)):  # fmt: skip
        assert make(np).dtype == make(numpy).dtype == numpy.float64
        assert make(ap).dtype == ap.float32  # the deep-learning namespace keeps its default


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")  # torch, for fft of float16
@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "float16", "float32"])
def test_dtype_rules_of_numpy_2_on_arrays_made_here(dtype: str) -> None:
    """Arrays made in autopar.numpy carry the mode: operators and methods keep NumPy's rules."""
    ref = numpy.ones(3, dtype=dtype)
    x = np.ones(3, dtype=dtype)
    cases = [
        (lambda m, a: m.sqrt(a)), (lambda m, a: m.exp(a)), (lambda m, a: a / a), (lambda m, a: a.mean()),
        (lambda m, a: a + 1.5), (lambda m, a: 1.5 * a), (lambda m, a: a.std()), (lambda m, a: m.fft.fft(a)),
        (lambda m, a: (a > 0).mean()), (lambda m, a: m.arctan2(a, a)), (lambda m, a: m.cumsum(a)),
    ]  # fmt: skip
    if dtype == "bool":
        cases = cases[:2] + cases[3:4] + cases[8:9]
    for case in cases:
        assert case(np, x).dtype == case(numpy, ref).dtype


def test_results_keep_the_mode_and_autopar_functions_follow_it() -> None:
    x = np.arange(6)  # made in NumPy mode
    y = x[1:].reshape(1, 5)  # a view of it
    assert (y / 2).dtype == numpy.float64 and ap.sqrt(y).dtype == numpy.float64
    z = ap.arange(6)  # made by autopar: deep learning's defaults
    assert (z / 2).dtype == ap.float32 and ap.sqrt(z).dtype == ap.float32
    assert (z / x).dtype == (x / z).dtype == numpy.float64  # any operand made in NumPy mode
    assert np.sqrt(z).dtype == numpy.float64  # called through autopar.numpy
    assert (z / 2).dtype == ap.float32  # the plan of z / 2 did not leak from NumPy mode


def test_the_mode_is_per_thread() -> None:
    seen: list[object] = []

    def other() -> None:
        seen.append(ap.zeros(1).dtype)

    def inside(n: int) -> object:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        return ap.zeros(n)

    from autopar.numpy._mode import in_numpy_mode

    assert in_numpy_mode(inside)(1).dtype == numpy.float64
    assert seen == [ap.float32]
    assert ap.zeros(1).dtype == ap.float32


def test_the_mode_nests_with_objects_that_keep_deep_learnings() -> None:
    """Inside an object that keeps deep learning's mode (a Generator made by autopar: _dtypes.in_mode(False)),
    an autopar.numpy call is in NumPy mode again, and an op on an array made in NumPy mode plans by its
    rules; each restores the thread's setting after."""
    from autopar.arrays import _dtypes

    seen = {}

    def inside() -> None:
        seen["np"] = np.zeros(1).dtype
        seen["op"] = (np.arange(3) / 2 + ap.arange(3)).dtype  # planned in NumPy mode, then back
        seen["ap"] = ap.zeros(1).dtype

    _dtypes.in_mode(True, _dtypes.in_mode, False, inside)
    assert seen == {"np": numpy.float64, "op": numpy.float64, "ap": ap.float32}
    assert "on" not in _dtypes.numpy_mode.__dict__


def test_switches_set_default_dtype_set_np_and_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    from autopar.arrays import _dtypes

    assert ap.get_default_dtype() == ap.float32
    try:
        ap.set_default_dtype("float64")
        made = ap.arange(3)
        assert ap.zeros(2).dtype == ap.float64 and (made / 2).dtype == ap.float64
        assert ap.get_default_dtype() == ap.float64
        npx.reset_np()
        assert ap.zeros(2).dtype == ap.float32 and (made / 2).dtype == ap.float64  # made in NumPy mode
        npx.set_np(dtype=True)
        assert ap.asarray([0.1]).dtype == ap.float64
        npx.set_np()
        assert ap.asarray([0.1]).dtype == ap.float32
        with pytest.raises(TypeError, match="float32 or float64"):
            ap.set_default_dtype("int32")
        monkeypatch.setenv("AUTOPAR_DEFAULT_DTYPE", "float64")
        _dtypes._read_default()
        assert ap.ones(1).dtype == ap.float64
        monkeypatch.setenv("AUTOPAR_DEFAULT_DTYPE", "half")
        with pytest.raises(ValueError, match="AUTOPAR_DEFAULT_DTYPE='half'"):
            _dtypes._read_default()
    finally:
        ap.set_default_dtype("float32")
    assert ap.zeros(2).dtype == ap.float32 and np.zeros(2).dtype == numpy.float64


@pytest.mark.parametrize("call", [
    lambda m: m.linalg.inv(m.zeros((3, 3))),
    lambda m: m.linalg.cholesky(m.asarray([[1.0, 2.0], [2.0, 1.0]])),
    lambda m: m.linalg.solve(m.asarray([[1.0, 2.0], [2.0, 4.0]]), m.asarray([1.0, 1.0])),
])  # fmt: skip
def test_linalg_error_is_raised_at_the_call_and_is_numpys(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(numpy.linalg.LinAlgError):
        call(numpy)
    with pytest.raises(numpy.linalg.LinAlgError) as info:
        call(np)  # at the call: nothing was read yet
    assert isinstance(info.value, np.linalg.LinAlgError) and np.linalg.LinAlgError is ap.linalg.LinAlgError
    assert isinstance(info.value, ap.AutoparError)
    result = call(ap)  # autopar: at the read, as every failure inside an op
    with pytest.raises(ap.linalg.LinAlgError):
        result.numpy()


def test_torchs_linalg_errors_are_linalg_error_in_autopar_too() -> None:
    """Every kernel that can fail on its matrix maps torch's error (here: a negative power of a singular one)."""
    result = ap.linalg.matrix_power(ap.zeros((2, 2)), -1)
    with pytest.raises(numpy.linalg.LinAlgError) as info:
        result.numpy()
    assert type(info.value) is ap.linalg.LinAlgError and "matrix_power" in str(info.value)


def test_names_keep_autopars_functions_and_signatures() -> None:
    import inspect

    assert inspect.signature(np.sum) == inspect.signature(ap.sum)
    assert np.sum.__name__ == "sum" and np.sum.__wrapped__ is ap.sum
    assert np.float64 is ap.float64 and np.ndarray is ap.ndarray and np.pi == numpy.pi
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        np.nope  # noqa: B018


def test_linspace_is_numpys_to_the_last_bit() -> None:
    """NumPy's formula (start + i * step, the last element stop): torch's counts from both ends."""
    import itertools

    for a, b, n, endpoint in itertools.product([-3, 0.1, 1e-3, -1e5], [3, 2.2, 1e6], [0, 1, 2, 7, 601], [True, False]):
        want = numpy.linspace(a, b, n, endpoint=endpoint)
        assert np.linspace(a, b, n, endpoint=endpoint).numpy().tobytes() == want.tobytes(), (a, b, n, endpoint)
        assert ap.linspace(a, b, n, endpoint=endpoint, dtype=ap.float64).numpy().tobytes() == want.tobytes()
        want32 = numpy.linspace(a, b, n, endpoint=endpoint, dtype=numpy.float32)
        assert ap.linspace(a, b, n, endpoint=endpoint).numpy().tobytes() == want32.tobytes()
        assert np.linspace(a, b, n, endpoint=endpoint, dtype=int).tolist() == \
            numpy.linspace(a, b, n, endpoint=endpoint, dtype=int).tolist()
    assert np.linspace(0, 1j, 3).tolist() == numpy.linspace(0, 1j, 3).tolist()
