"""The dispatcher's lean paths, the interpreter slot, and what they must not change.

Oracles: NumPy (values, bit for bit where IEEE arithmetic fixes them), torch's
meta kernels (shapes), and the general path of the dispatcher itself only
where a test forces one side onto it.
"""

from __future__ import annotations

import itertools
import operator
import threading
from typing import Any

import numpy as np
import pytest
import torch

import autopar as ap
from autopar.arrays import _dispatch, _eager, _interpreters, _plan
from autopar.arrays._table import TABLE

from _helpers import run_python

# -- a cached Python number keeps the precision of the array it meets ----------------------------------

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
          "complex64", "complex128"]  # fmt: skip
NUMBERS = [True, 3, 2**40 + 1, 0.1, 1 / 3, 1e-8, complex(0.1, 1 / 3)]  # most not exact in float32
OPS = [operator.add, operator.mul, operator.eq]


def _values(dtype: str) -> np.ndarray:
    if dtype == "bool":
        return np.array([True, False, True])
    if dtype[0] in "iu":
        return np.array([0, 1, 5, 7], dtype=dtype)
    return np.array([0.5, 1.25, -3.0, 1e-3, 0.1], dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_repeated_number_keeps_the_precision_of_the_array_it_meets(dtype: str) -> None:
    """The second and third ``x op s`` with the same number object (a cached 0-d tensor) equal the first
    and NumPy's, computed in the result's dtype; so do ``s op x`` and ``x += s`` (float64 once lost it)."""
    base = _values(dtype)
    for number, op in itertools.product(NUMBERS, OPS):
        x = ap.asarray(base)
        try:
            first = op(x, number)
        except (TypeError, OverflowError):  # the rules refuse it (an int too big for int8, ...): every time
            with pytest.raises((TypeError, OverflowError)):
                op(x, number)
            continue
        compute = (x + number).dtype if op is operator.eq else first.dtype  # the dtype both meet in
        want = op(base.astype(compute.name), np.asarray(number, dtype=compute.name))
        for got in (first, op(x, number), op(x, number), op(number, x), op(number, x)):
            assert got.dtype.name == str(want.dtype), (dtype, number, op)
            np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{op.__name__}({dtype}, {number!r})")
    if dtype.startswith(("float", "complex")):  # in place, the number taking the target's dtype
        x, x_np = ap.asarray(base), base.copy()
        for _ in range(3):
            x += 0.1
            x_np += np.asarray(0.1, dtype=dtype)
        np.testing.assert_array_equal(x.numpy(), x_np)


def test_the_issue_example_keeps_every_bit() -> None:
    x = ap.asarray([1.0, 2.0], dtype="float64")
    assert [(x + 0.1).tolist() for _ in range(3)] == [[1.1, 2.1]] * 3


# -- the lean paths give what the general path gives ---------------------------------------------------


def test_the_operators_take_the_lean_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """x + y, x + 1, 1 - x, x += y, x += 1 on whole arrays never reach the general runner (the mutation
    caught: a lean path that never applies, which only a benchmark would notice otherwise)."""
    x, y = ap.ones(8), ap.arange(8.0)
    for warm in (x + y, x + 1, 1 - x, x * 2):
        warm.wait_to_read()

    def general(*args: Any) -> Any:
        raise AssertionError("the general path ran")

    monkeypatch.setattr(_eager, "bind", general)
    monkeypatch.setattr(_eager, "bind_into", general)
    z = x + y
    z += 1
    z -= y
    w = 1 - z
    assert w.tolist() == [-1.0] * 8


# torch's own elementwise kernels of two arrays that answer a new tensor, lean without taking numbers
# fmod is not here: its kernel repairs the NaNs of torch's vectorized CPU fmod (arrays/_fmod.py), so it is not torch's own.
TWO_ARRAY_LEAN = ["maximum", "minimum", "fmax", "fmin", "atan2", "copysign", "hypot", "logaddexp", "logaddexp2",
                  "nextafter", "float_power", "heaviside", "logical_and", "logical_or", "logical_xor"]  # fmt: skip
_PAIRS = [("float32", "float32", (5,), (5,)), ("float64", "float32", (3, 1), (4,)), ("int32", "int64", (5,), (5,)),
          ("uint8", "int16", (2, 5), (5,)), ("bool", "bool", (5,), (1,)), ("float32", "int64", (5,), (5,))]  # fmt: skip


def _special_values(dtype: str, shape: tuple[int, ...], rng: Any) -> np.ndarray:
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    if dtype[0] in "iu":
        return rng.integers(0 if dtype[0] == "u" else -5, 6, n).astype(dtype).reshape(shape)
    pool = np.array([0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 1e-30, 3.0], dtype=dtype)
    return rng.choice(pool, n).reshape(shape)


def _outcome(x: Any) -> Any:
    try:
        return x.numpy()
    except Exception as error:  # noqa: BLE001 - the failure's type and message are the outcome
        return type(error), str(error)


@pytest.mark.parametrize("name", TWO_ARRAY_LEAN)
def test_two_array_functions_take_the_lean_path_and_give_the_general_paths_values(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The general path (``_dispatch.eager_bind``) is the oracle, bit for bit (NaN where NaN), dtype and
    shape; the lean call must not reach the general runner."""
    fn = getattr(ap, name)  # loads the op table
    entry, rng, checked = TABLE[name], np.random.default_rng(7), 0
    for da, db, sa, sb in _PAIRS:
        a, b = ap.asarray(_special_values(da, sa, rng)), ap.asarray(_special_values(db, sb, rng))
        try:
            p = _plan.plan(entry, (a, b), {})
        except TypeError:  # a dtype the op does not take: the same error on every path
            continue
        assert p.lean == _plan.ARRAYS or da != "float32", (name, da, db)  # else torch's kernel declined
        with monkeypatch.context() as m:
            if p.lean:
                m.setattr(_eager, "bind", lambda *args: pytest.fail("the general path ran"))
            lean = fn(a, b)
        general = _dispatch.eager_bind(entry, p, (a, b), {})
        assert (lean.dtype, lean.shape) == (general.dtype, general.shape)
        got, want = _outcome(lean), _outcome(general)  # torch's kernel may fail (int fmod by 0): both alike
        if isinstance(want, np.ndarray):
            np.testing.assert_array_equal(got, want)
        else:
            assert got == want, (name, da, db)
        checked += bool(p.lean)
    assert checked >= 2, f"{name}: too few dtype pairs on the lean path"


@pytest.mark.parametrize("seed", range(4))
def test_random_operator_programs_match_numpy(seed: int) -> None:
    """Whole arrays, views, broadcasting, numbers on either side, in-place updates, mixed dtypes:
    exactly NumPy's values (IEEE add/sub/mul/div agree bit for bit)."""
    rng = np.random.default_rng(seed)
    ops = [operator.add, operator.sub, operator.mul, operator.truediv]
    inplace = [operator.iadd, operator.isub, operator.imul, operator.itruediv]
    dtype = ["float32", "float64"][seed % 2]
    arrays = [rng.standard_normal(6).astype(dtype) for _ in range(3)] + [rng.standard_normal((2, 6)).astype(dtype)]
    ours = [ap.asarray(a) for a in arrays]
    with np.errstate(all="ignore"):  # divisions by zero give inf and nan on both sides
        _run_program(rng, ops, inplace, dtype, arrays, ours)
    for o, a in zip(ours, arrays):
        np.testing.assert_array_equal(o.numpy(), a)


def _run_program(rng: Any, ops: list[Any], inplace: list[Any], dtype: str, arrays: list[Any], ours: list[Any]) -> None:
    for _ in range(60):
        i, j = rng.integers(len(arrays), size=2)
        op = ops[rng.integers(len(ops))]
        kind = rng.integers(5)
        if kind == 0:  # array op array (maybe broadcast)
            got, want = op(ours[i], ours[j]), op(arrays[i], arrays[j])
        elif kind == 1:  # array op number, the same number object again and again
            number = [0.1, 3, 2.5][rng.integers(3)]
            got, want = op(ours[i], number), op(arrays[i], np.asarray(number, dtype=dtype))
        elif kind == 2:  # number op array
            got, want = op(1.5, ours[i]), op(np.asarray(1.5, dtype=dtype), arrays[i])
        elif kind == 3:  # a view (general path) op a whole array
            got, want = op(ours[i][::-1], ours[j]), op(arrays[i][::-1], arrays[j])
        else:  # in place, the other operand an array of the same shape or a number (x += x too)
            k = i if rng.integers(3) == 0 else j
            fits = arrays[k].shape[-1:] == arrays[i].shape[-1:] and arrays[k].ndim <= arrays[i].ndim
            other_ours = ours[k] if fits else 2.0
            other_np = arrays[k].copy() if fits else np.asarray(2.0, dtype=dtype)
            iop = inplace[rng.integers(len(inplace))]
            ours[i] = iop(ours[i], other_ours)
            arrays[i] = iop(arrays[i], other_np)
            continue
        if got.shape == want.shape and got.size < 40:  # keep them small: replace one operand
            ours[i], arrays[i] = got, want


def test_in_place_with_outside_memory_that_overlaps_copies_as_numpy_does() -> None:
    # two arrays sharing memory they do not own (from_torch): the in-place kernel would read what it
    # writes; the general path computes first, then writes
    t = torch.arange(8.0)
    a, b = ap.from_torch(t[:6]), ap.from_torch(t[2:])
    a += b
    want = np.arange(8.0)
    want[:6] = want[:6] + want[2:]
    np.testing.assert_array_equal(t.numpy(), want)
    x = ap.arange(4.0)
    x += x  # the same storage: torch's in-place kernel handles it
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_an_in_place_operator_keeps_its_rules_on_the_lean_path() -> None:
    f = ap.ones(3)
    f += 1  # warm: the plan exists
    with pytest.raises(TypeError, match="same_kind"):
        i = ap.arange(3)
        i += 0.5
    with pytest.raises(ValueError, match="cannot be broadcast"):
        f += ap.ones((2, 3))
    g = ap.ones(3, dtype="float64")
    g += ap.arange(3, dtype="int32")  # a cast of the other operand
    assert g.tolist() == [1.0, 2.0, 3.0]


# -- the interpreter slot (where capture will trace) ---------------------------------------------------


class Recorder:
    """A tracing interpreter that notes each call, then runs it as eager execution would."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def bind(self, entry: Any, plan: Any, args: Any, static: Any, **options: Any) -> Any:
        self.calls.append((entry.name, plan.out_shapes))
        return _dispatch.eager_bind(entry, plan, args, static, **options)

    def bind_into(self, entry: Any, plan: Any, target: Any, args: Any, static: Any, **options: Any) -> Any:
        self.calls.append((options["what"], plan.out_shapes))
        return _dispatch.eager_bind_into(entry, plan, target, args, static, options["what"], options["casting"],
                                         options["device"], options["lane"])  # fmt: skip


def test_an_active_interpreter_gets_every_call_of_its_thread_after_planning() -> None:
    x = ap.arange(4.0)
    recorder = Recorder()
    other: list[Any] = []
    with _interpreters.interpreting(recorder):
        y = x * 2 + 1
        y += x
        total = y.sum()
        thread = threading.Thread(target=lambda: other.append((x + 1).tolist()))  # another thread: eager
        thread.start()
        thread.join()
    after = x + 1  # the block is over: eager again
    assert [name for name, _ in recorder.calls] == ["multiply", "add", "add (in place)", "sum"]
    assert recorder.calls[0][1] == ((4,),) and recorder.calls[-1][1] == ((),)
    assert y.tolist() == [1.0, 4.0, 7.0, 10.0] and total.item() == 22.0
    assert other == [[1.0, 2.0, 3.0, 4.0]] and after.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert _interpreters.active == 0 and _interpreters.current() is None


# -- shape rules that spare torch's heavy meta kernels -------------------------------------------------


def _meta(entry: Any, shapes: tuple[Any, ...], static: dict[str, Any]) -> Any:
    from autopar.arrays import _infer

    dtypes = tuple(torch.int64 if entry.name == "cross_entropy" and i == 1 and len(s) < len(shapes[0]) else torch.float32
                   for i, s in enumerate(shapes))  # fmt: skip
    try:
        return _infer.shapes(entry, shapes, dtypes, static)
    except (ValueError, IndexError, TypeError, RuntimeError):
        return "error"


def test_nn_shape_rules_agree_with_torchs_meta_kernels_or_defer_to_them() -> None:
    ap.zeros(1)  # the table is complete
    answered = 0
    conv = TABLE["conv2d"]
    for n, c, h, o, k, s, p, d, g in itertools.product((2,), (2, 4), (1, 5, 8), (2, 4), (1, 3), (1, 2), (0, 1, 2), (1, 2),
                                                       (1, 2)):  # fmt: skip
        shapes: tuple[Any, ...] = ((n, c, h, h + 1), (o, c // g, k, k))
        static = {"stride": (s, s), "padding": (p, p), "dilation": (d, d), "groups": g}
        rule = conv.shape(conv.name, shapes, static)
        if rule is not None:
            answered += 1
            assert rule == _meta(conv, shapes, static), (shapes, static)
    for name in ("max_pool2d", "avg_pool2d"):
        pool = TABLE[name]
        for h, k, s, p, ceil in itertools.product((1, 4, 7), (1, 2, 3), (1, 2), (0, 1), (False, True)):
            static = {"kernel_size": (k, k), "stride": (s, s), "padding": (p, p), "ceil_mode": ceil}
            if name == "max_pool2d":
                static["dilation"] = (1, 1)
            else:
                static.update(count_include_pad=True, divisor_override=None)
            rule = pool.shape(name, ((2, 3, h, h + 2),), static)
            if rule is not None:
                answered += 1
                assert rule == _meta(pool, ((2, 3, h, h + 2),), static), (name, h, static)
    linear = TABLE["linear"]
    for x, w, b in [((5, 3), (4, 3), (4,)), ((3,), (4, 3), None), ((2, 5, 3), (4, 3), (4,)), ((5, 3), (4, 2), None)]:
        shapes = (x, w) if b is None else (x, w, b)
        rule = linear.shape("linear", shapes, {})
        assert rule is None or rule == _meta(linear, shapes, {})
        answered += rule is not None
    ce = TABLE["cross_entropy"]
    for reduction in ("none", "mean", "sum"):
        static = {"ignore_index": -100, "reduction": reduction, "label_smoothing": 0.0}
        for shapes in [((5, 3), (5,)), ((5, 3), (5, 3)), ((5, 3), (5,), (3,)), ((5, 3), (4,))]:
            rule = ce.shape("cross_entropy", shapes, static)
            assert rule is None or rule == _meta(ce, shapes, static)
            answered += rule is not None
    assert answered > 300  # the common calls are answered, not all deferred


def test_a_first_training_step_imports_nothing_heavy_for_shapes() -> None:
    """torch's meta kernels of conv2d, linear and cross_entropy import sympy and torch._dynamo on first use
    (about 1 s); the LeNet step of ``autopar train`` must not reach them."""
    done = run_python("""
import sys
import numpy as np
import autopar as ap
from autopar.benchmarks import training
trainer = training.Trainer("lenet", [ap.cpu(0)], lr=0.1)
images, labels = np.zeros((8, 1, 28, 28), np.float32), np.zeros(8, np.int64)
trainer.run_steps([(images, labels)] * 2)
print(sorted(m for m in ("sympy", "torch._dynamo", "torch._inductor") if m in sys.modules))
""", timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "[]", done.stdout


def test_plans_of_lean_calls_say_what_the_kernel_needs() -> None:
    x, i = ap.ones(4), ap.arange(4)
    add, mul = TABLE["add"], TABLE["multiply"]
    assert _plan.plan(add, (x, x), {}).exact and _plan.plan(add, (x, 1.0), {}).inplace is torch.Tensor.add_
    assert not _plan.plan(add, (x, i), {}).exact  # the int array is cast to float32 first
    assert _plan.plan(mul, (2, x), {}).lean == _plan.NUMBER_ARRAY
    assert _plan.plan(add, (i, 0.5), {}).inplace is None  # the result is float32, not the target's int64


def test_reshape_of_a_whole_array_is_a_view_as_numpy_gives() -> None:
    """The fast way (a whole C-contiguous storage, nothing recorded) against NumPy: values, shapes, and
    writes through the result reaching the source -- also for a tensor whose size-1 dimension has an odd
    stride (contiguous to torch) and for empty arrays."""
    odd = torch.arange(3.0).as_strided((3, 1), (1, 5))
    assert odd.is_contiguous()
    for source, shape in [(np.arange(12.0), (3, 4)), (np.arange(12.0), (2, -1)), (np.arange(6.0), (6,)),
                          (np.zeros((0, 3)), (3, 0)), (odd, (1, 3)), (odd, (3, 1))]:  # fmt: skip
        x = ap.from_torch(source) if isinstance(source, torch.Tensor) else ap.asarray(source)
        x_np = x.numpy().copy()
        y, y_np = ap.reshape(x, shape), x_np.reshape(shape)
        assert y.shape == y_np.shape and y._storage is x._storage
        np.testing.assert_array_equal(y.numpy(), y_np)
        if y.size:
            y[(0,) * y.ndim] = 100.0
            y_np[(0,) * y_np.ndim] = 100.0
            np.testing.assert_array_equal(x.numpy(), x_np)
