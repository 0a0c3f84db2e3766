"""SPEC §4 through arrays: failures flow, block nothing, show no garbage."""

from __future__ import annotations

import numpy as np
import pytest

import autopar as ap


@pytest.fixture(autouse=True, params=["threaded", "naive"])
def _engine(request):  # type: ignore[no-untyped-def]
    ap.engine.set_engine(request.param)
    yield
    try:
        ap.waitall()
    except Exception:
        pass
    ap.engine.set_engine("threaded")


class Broken(ArithmeticError):
    pass


def explode(t):  # type: ignore[no-untyped-def]
    raise Broken("the kernel broke")


def test_call_error_is_raised_by_every_read_with_its_type_and_the_op_name() -> None:
    x = ap.ones((2, 2))
    bad = ap.call(explode, x, shape=(2, 2), name="explode")
    readers = [bad.numpy, bad[0, 0].item, bad.tolist, bad.wait_to_read, lambda: float(bad[0, 0]), lambda: repr(bad),
               lambda: np.asarray(bad), lambda: bad.to(ap.cpu(0), non_blocking=False).numpy()]
    for read in readers:
        with pytest.raises(Broken, match=r"the kernel broke \[in autopar operation 'explode' on cpu:0\]"):
            read()
    ap.waitall()  # observed by reads: not raised again


def test_failure_flows_through_chains_and_in_place_updates() -> None:
    x = ap.ones(3)
    bad = ap.call(explode, x, shape=(3,))
    y = (bad + 1) * 2
    z = ap.zeros(3)
    z += y  # z is written by an op that reads a failed array: z fails too
    w = z.sum()
    for arr in (y, z, w):
        with pytest.raises(Broken):
            arr.numpy()
    z2 = z.copyto(ap.cpu(0))
    with pytest.raises(Broken):
        z2.numpy()


def test_unrelated_work_is_unaffected() -> None:
    x = ap.ones(3)
    ap.call(explode, x, shape=(3,))
    good = (x + 1).sum()
    assert good.item() == 6.0
    with pytest.raises(Broken):
        ap.waitall()  # the unobserved failure, once
    ap.waitall()
    assert (x * 3).tolist() == [3.0, 3.0, 3.0]


def test_declared_shape_is_checked_when_the_function_runs() -> None:
    x = ap.ones(3)
    wrong = ap.call(lambda t: t.sum(), x, shape=(3,), name="summer")
    with pytest.raises(ValueError, match="summer returned shape \\(\\), but shape=\\(3,\\) was declared"):
        wrong.numpy()


def test_reading_a_pending_array_inside_call_raises_instead_of_deadlocking() -> None:
    x = ap.ones(3)
    y = x + 1

    def peek(t):  # type: ignore[no-untyped-def]
        return t + y.numpy()[0]

    out = ap.call(peek, x, shape=(3,), name="peek")
    with pytest.raises(ap.BlockingCallError, match="inside engine operation 'peek'"):
        out.numpy()


def test_failed_view_and_base_share_the_failure() -> None:
    bad = ap.call(explode, ap.ones((2, 3)), shape=(2, 3))
    row = bad[1]
    with pytest.raises(Broken):
        row.numpy()
    with pytest.raises(Broken):
        bad.T.numpy()


def test_synchronize_raises_an_unobserved_array_failure() -> None:
    ap.call(explode, ap.ones(2), shape=(2,))
    with pytest.raises(Broken):
        ap.synchronize()
    ap.synchronize()
