"""autopar.capture at its edges, against eager execution: aliasing between arguments and closed-over
arrays, outside memory, the thread's default dtype and NumPy mode, arrays made inside, failed inputs,
random seeds, and what each part of a trace's bookkeeping protects -- each test here fails under a
small change of ``autopar._capture`` that tests/test_capture.py let through (replay unless said)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import autopar as ap


def test_the_default_dtype_is_part_of_the_signature() -> None:
    f = ap.capture(lambda x: (x + 1, ap.zeros(2)), mode="replay")
    x = ap.ones(2, dtype="float32")
    f(x)
    ap.set_default_dtype("float64")
    try:
        assert f(x)[1].dtype == ap.zeros(2).dtype == ap.float64
        assert f.traced == 2
    finally:
        ap.set_default_dtype("float32")
    assert f(x)[1].dtype == ap.float32 and f.traced == 2


def test_overlapping_outside_memory_is_not_written_in_place_by_a_replay() -> None:
    def add(x, y):  # type: ignore[no-untyped-def]
        x += y
        return x

    captured = ap.capture(add, mode="replay")
    captured(ap.ones(4), ap.ones(4))  # traced on autopar's own storages (torch's in-place kernel is safe)
    for _ in range(2):  # traced again on outside memory, then replayed
        mine, theirs = torch.arange(5.0), torch.arange(5.0)
        captured(ap.from_torch(mine[:4]), ap.from_torch(mine[1:]))  # two windows on one tensor
        add(ap.from_torch(theirs[:4]), ap.from_torch(theirs[1:]))
        ap.waitall()
        assert mine.tolist() == theirs.tolist() == [1.0, 3.0, 5.0, 7.0, 4.0]


W = ap.ones(3)  # a module-level array a function reaches by name


def _plus_w(x):  # type: ignore[no-untyped-def]
    return x + W


def test_an_argument_that_is_also_closed_over_is_told_apart_at_each_call() -> None:
    w = ap.ones(3)

    def scaled(x):  # type: ignore[no-untyped-def]
        x *= 2
        return x + w

    for fn, shared in ((scaled, w), (_plus_w, W)):
        captured = ap.capture(fn, mode="replay")
        captured(shared)  # traced with the closed-over array as the argument
        other, other_eager = ap.zeros(3), ap.zeros(3)
        np.testing.assert_array_equal(captured(other).numpy(), fn(other_eager).numpy())
        np.testing.assert_array_equal(other.numpy(), other_eager.numpy())
        # and back: traced apart, called with the closed-over array
        before = shared.numpy().copy()
        got = captured(shared)
        shared[...] = ap.asarray(before)
        np.testing.assert_array_equal(got.numpy(), fn(shared).numpy())


@pytest.mark.parametrize("make", ["asarray", "array", "torch", "empty"])
def test_an_array_made_from_data_inside_the_function_is_new_at_each_call(make: str) -> None:
    def fn(x):  # type: ignore[no-untyped-def]
        if make == "empty":
            t = ap.empty(3)
            t[...] = 1.0
        else:
            t = {"asarray": ap.asarray, "array": ap.array, "torch": ap.asarray}[make](
                torch.tensor([1.0, 2.0, 3.0]) if make == "torch" else [1.0, 2.0, 3.0])
        t += x
        return t, t * 1

    captured = ap.capture(fn, mode="replay")
    x = ap.ones(3)
    want = [a.tolist() for a in fn(x)]
    results = [captured(x) for _ in range(3)]
    for got in results:
        assert [a.tolist() for a in got] == want
    results[-1][0][...] = 100.0  # a result of one call is not another call's
    assert [a.tolist() for a in captured(x)] == want and [a.tolist() for a in results[0]] == want


def test_a_tensor_argument_is_refused_not_baked_into_the_trace() -> None:
    f = ap.capture(lambda x, t: x + ap.asarray(t), mode="replay")
    with pytest.raises(ap.CaptureError, match=r"torch.Tensor.*autopar.from_torch"):
        f(ap.ones(3), torch.ones(3))  # hashable (by identity), but its contents change under the trace
    assert f.traces == [] and f(ap.ones(3), 2.0).tolist() == [3.0] * 3


# -- each part of the signature, and the bookkeeping of reads and writes (mutation audit) ----------


def test_a_view_of_another_offset_traces_again() -> None:
    f = ap.capture(lambda x: x * 2, mode="replay")
    base = ap.arange(6.0).reshape(2, 3)
    assert f(base[0]).tolist() == [0.0, 2.0, 4.0]
    assert f(base[1]).tolist() == [6.0, 8.0, 10.0] and f.traced == 2


def test_traced_with_one_array_twice_then_called_with_two() -> None:
    def add(a, b):  # type: ignore[no-untyped-def]
        a += b
        return a * b

    f = ap.capture(add, mode="replay")
    x = ap.ones(3)
    f(x, x)
    a, b = ap.ones(3), ap.full(3, 2.0)
    assert f(a, b).tolist() == [6.0] * 3 and a.tolist() == [3.0] * 3 and f.traced == 2


class Broken(ArithmeticError):
    pass


def _explode(t):  # type: ignore[no-untyped-def]
    raise Broken("bad input")


def test_a_partial_write_into_a_failed_array_leaves_it_failed() -> None:
    def f(x):  # type: ignore[no-untyped-def]
        x[0] = 1.0  # reads the rest of x: a failure on x stays
        return x * 1

    captured = ap.capture(f, mode="replay")
    captured(ap.zeros(2))
    bad = ap.call(_explode, ap.zeros(2), shape=(2,))
    out = captured(bad)
    for failed in (out, bad):
        with pytest.raises(Broken, match="bad input"):
            failed.numpy()


def test_seeding_inside_the_function_before_the_first_draw_reseeds_at_each_call() -> None:
    from autopar.arrays import _random

    saved = dict(_random._generators)
    _random._generators.clear()  # no generator yet: the function's draw makes it, after its seed
    try:
        f = ap.capture(lambda: (ap.random.seed(1), ap.random.uniform(size=(3,)))[1], mode="replay")
        got = [f().tolist() for _ in range(3)]
        ap.random.seed(1)
        want = ap.random.uniform(size=(3,)).tolist()
        assert got == [want] * 3
    finally:
        ap.waitall()
        _random._generators.update(saved)


def test_a_whole_write_then_a_read_clears_a_failed_argument() -> None:
    def f(x, out):  # type: ignore[no-untyped-def]
        out[...] = x * 2  # reads nothing of out ...
        return out + 1  # ... so this reads what the function wrote, not the failed value

    captured = ap.capture(f, mode="replay")
    captured(ap.ones(2), ap.zeros(2))
    bad = ap.call(_explode, ap.zeros(2), shape=(2,))
    assert captured(ap.ones(2), bad).tolist() == [3.0, 3.0] and bad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("shift", ["x[1:] = x[:-1]", "x[:-1] = x[1:]", "x[::-1] = x", "x[...] = x.T"])
def test_a_write_from_an_overlapping_view_of_the_target(shift: str) -> None:
    namespace: dict = {}
    exec(f"def f(x):\n    {shift}\n    return x\n", namespace)
    f = namespace["f"]
    captured = ap.capture(f, mode="replay")
    for _ in range(2):
        got, want = ap.arange(9.0).reshape(3, 3), ap.arange(9.0).reshape(3, 3)
        np.testing.assert_array_equal(captured(got).numpy(), f(want).numpy())


def test_a_number_of_another_type_traces_again() -> None:
    f = ap.capture(lambda x, k: x * k, mode="replay")
    x = ap.arange(3, dtype="int32")
    assert f(x, 2).dtype == ap.int32
    got = f(x, 2.0)  # equal to 2 and hashed alike, but a float: float32 results, as eagerly
    assert got.dtype == (x * 2.0).dtype and got.dtype != ap.int32 and f.traced == 2


def test_compiled_a_closed_over_array_passed_as_the_argument_traces_again() -> None:
    pytest.importorskip("torch._inductor")
    from autopar._capture import _backends

    if _backends.compiler_available():
        pytest.skip(_backends.compiler_available())
    w = ap.ones(4)

    def f(x):  # type: ignore[no-untyped-def]
        x *= 2
        x += 1  # a compiled stage writes x functionally: w's slot would not see it
        return x + w, w * 3

    captured = ap.capture(f, mode="compile")
    captured(ap.zeros(4))
    captured(ap.zeros(4))
    got = captured(w)  # traced apart from w; now w is the argument too
    assert [a.tolist() for a in got] == [[6.0] * 4, [9.0] * 4] and w.tolist() == [3.0] * 4


def test_compiled_a_window_of_a_tensor_at_an_offset_runs_as_eagerly() -> None:
    pytest.importorskip("torch._inductor")
    from autopar._capture import _backends

    if _backends.compiler_available():
        pytest.skip(_backends.compiler_available())

    def f(x):  # type: ignore[no-untyped-def]
        x += 1
        return x * 2

    captured = ap.capture(f, mode="compile")
    start = torch.zeros(4)
    captured(ap.from_torch(start))
    captured(ap.from_torch(start))  # compiled on a tensor at offset 0
    window = torch.zeros(5)
    assert captured(ap.from_torch(window[1:])).tolist() == [2.0] * 4  # the same signature, at offset 1
    assert window.tolist() == [0.0, 1.0, 1.0, 1.0, 1.0]


def test_arrays_made_in_numpy_mode_keep_numpy_rules_through_a_capture() -> None:
    import autopar.numpy as anp

    f = ap.capture(lambda x: x * 0.5, mode="replay")
    f(ap.arange(3))  # traced on an array of deep learning's rules: float32
    assert f(anp.arange(3)).dtype == (anp.arange(3) * 0.5).dtype == ap.float64 and f.traced == 2
    g = ap.capture(lambda x: x + 1, mode="replay")
    x = anp.arange(3)
    for result in (g(x), g(x)):  # traced, replayed: a result made in NumPy mode keeps its rules
        assert (result * 0.5).dtype == ap.float64


def test_an_input_already_failed_fails_only_what_depends_on_it_as_step_by_step() -> None:
    """Step by step, ``y * 2`` of a good ``y`` is good though ``x`` failed; one captured op reading both
    would fail both, so a call whose input has a failure recorded runs step by step (and traces nothing)."""
    captured = ap.capture(lambda x, y: (x + 1, y * 2), mode="replay")
    captured(ap.ones(2), ap.ones(2))
    bad = ap.call(_explode, ap.zeros(2), shape=(2,))
    with pytest.raises(Broken, match="bad input"):
        bad.numpy()  # the failure is recorded before the call
    failed, good = captured(bad, ap.ones(2))
    assert good.tolist() == [2.0, 2.0]
    with pytest.raises(Broken, match="bad input"):
        failed.numpy()
    assert captured.traced == 1 and captured(ap.ones(2), ap.ones(2))[1].tolist() == [2.0, 2.0]
