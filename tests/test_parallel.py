"""Parallelism through arrays: two CPU devices side by side, pushes that return
at once, copies on copy lanes. Timing checks compare two runs in one process,
with generous margins."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

import autopar as ap
from _helpers import run_python


def products(x: ap.NDArray, n: int = 50) -> list[ap.NDArray]:
    return [x.dot(x) for _ in range(n)]


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def test_each_cpu_device_uses_its_share_of_the_cores(two_cpus) -> None:  # type: ignore[no-untyped-def]
    def threads(t: torch.Tensor) -> torch.Tensor:
        return torch.full((1,), torch.get_num_threads(), dtype=torch.int64)

    seen = [ap.call(threads, ap.ones(1, device=d), shape=(1,), dtype="int64").item() for d in two_cpus]
    from autopar.devices import cpu_threads

    assert seen == [cpu_threads(0), cpu_threads(1)]
    assert sum(seen) >= 2


SIDE_BY_SIDE = """
import time
import autopar as ap
ap.set_cpu_devices(2)
d0, d1 = ap.cpu(0), ap.cpu(1)

def products(x, n=50):
    return [x.dot(x) for _ in range(n)]

def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start

# Products of 480x480 (about 5 ms each on one thread): the driver's per-op cost stays a small share.
x0 = ap.random.uniform(size=(480, 480), device=d0)
x1 = ap.random.uniform(size=(480, 480), device=d1)
products(x0, 5), products(x1, 5)
ap.waitall()  # warm up both lanes
# Side by side at all: the share of the run in which both devices' lanes were busy at once. Lanes
# that ran one after the other give 0 whatever the machine's load; on a loaded machine the two
# workers still interleave.
with ap.profile() as prof:
    products(x0, 20), products(x1, 20)
    ap.waitall()
overlap = prof.summary().overlap_share
import os
busy = max(os.getloadavg()[0], 0.0) > len(os.sched_getaffinity(0))  # other processes want every core
best = 10.0
for _ in range(1 if busy else 8):  # faster too: the machine is shared, so the best of up to eight
    t0 = timed(lambda: (products(x0), ap.waitall()))
    t1 = timed(lambda: (products(x1), ap.waitall()))
    both = timed(lambda: (products(x0), products(x1), ap.waitall()))
    best = min(best, both / (t0 + t1))
    if best < 0.75:
        break
print(overlap, best, int(busy))
"""


@pytest.mark.skipif(len(__import__("os").sched_getaffinity(0)) < 2, reason="needs two cores")
def test_two_cpu_devices_run_side_by_side() -> None:
    # In a fresh interpreter: a timing figure of the engine alone, not of what earlier tests leave in
    # this process (an in-process node runtime once left it pinned to one core). One lane for both
    # devices gives about 1.0.
    done = run_python(SIDE_BY_SIDE, timeout=120)
    assert done.returncode == 0, done.stderr
    overlap, best, busy = map(float, done.stdout.split()[-3:])
    assert overlap > 0.5, f"both devices' lanes were busy at once for {overlap:.0%} of the run: one after the other"
    # One after the other gives about 1.0. The bound leaves room for a shared machine (0.87-0.99 were
    # seen under load with a bound of 0.85); the overlap above is what load cannot fake. A machine whose
    # load average exceeds its cores has no second core to give: there the speed is not judged.
    if not busy:
        assert best < 0.9, f"both together took {best:.2f} of the two apart: no parallelism"


def test_pushing_returns_long_before_the_work_finishes(two_cpus) -> None:  # type: ignore[no-untyped-def]
    x = ap.random.uniform(size=(400, 400), device=two_cpus[0])
    x.wait_to_read()
    shares = []
    for _ in range(3):  # the machine is shared: the best of three
        start = time.perf_counter()
        results = products(x)
        pushed = time.perf_counter() - start
        ap.waitall()
        shares.append(pushed / (time.perf_counter() - start))
    assert min(shares) < 0.25, shares
    np.testing.assert_allclose(results[-1].numpy(), x.numpy() @ x.numpy(), rtol=1e-4)


def test_copies_run_on_the_copy_lane_beside_compute(two_cpus) -> None:  # type: ignore[no-untyped-def]
    import threading

    from _helpers import within

    gate = threading.Event()
    x = ap.ones((4, 4), device=two_cpus[0])
    x.wait_to_read()
    try:
        blocker = ap.call(lambda t: (gate.wait(), t + 1)[1], x, shape=(4, 4))  # holds cpu:0's compute lane until set
        copied = x.copyto(two_cpus[1])
        # finished while the compute lane is held (a copy on the compute lane would wait forever: within fails)
        assert within(30, copied.numpy).sum() == 16
        other = x.to(two_cpus[0])
        assert other is x
    finally:
        gate.set()
    assert blocker.numpy().sum() == 32


def test_copyto_an_array_writes_into_it(two_cpus) -> None:  # type: ignore[no-untyped-def]
    src = ap.arange(6.0, device=two_cpus[0]).reshape(2, 3)
    dst = ap.zeros((2, 3), device=two_cpus[1])
    out = src.copyto(dst)
    assert out is dst and dst.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="source shape \\(2, 3\\) differs from the target array's \\(3,\\)"):
        src.copyto(ap.zeros(3))
    moved = src.to(two_cpus[1], non_blocking=True)
    assert moved.device == two_cpus[1] and moved.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_two_devices_calling_blas_at_once_with_omp_num_threads_set_do_not_hang() -> None:
    """MXNet 1.9.1 hangs here: two workers in BLAS at once with OMP_NUM_THREADS=2."""
    import os
    import subprocess
    import sys

    code = (
        "import autopar as ap\n"
        "ap.set_cpu_devices(2)\n"
        "xs = [ap.random.uniform(size=(256, 256), device=d) for d in (ap.cpu(0), ap.cpu(1))]\n"
        "ys = [x.dot(x) for _ in range(30) for x in xs]\n"
        "ap.waitall()\n"
        "print(round(float(ys[-1].sum()) > 0))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1"


def test_array_programs_from_several_threads_at_once(two_cpus) -> None:  # type: ignore[no-untyped-def]
    import threading

    results: dict[int, np.ndarray] = {}

    def program(t: int) -> None:
        device = two_cpus[t % 2]
        a = ap.full((150, 150), float(t), device=device)
        for _ in range(20):
            a = ap.tanh(a @ a / 150.0) + 1.0
            a[0] = float(t)
        results[t] = a.numpy()

    threads = [threading.Thread(target=program, args=(t,)) for t in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    ap.engine.set_engine("naive")
    try:
        for t in range(6):
            expected = ap.full((150, 150), float(t))
            for _ in range(20):
                expected = ap.tanh(expected @ expected / 150.0) + 1.0
                expected[0] = float(t)
            np.testing.assert_allclose(results[t], expected.numpy(), rtol=1e-5)
    finally:
        ap.engine.set_engine("threaded")


def test_arrays_dropped_while_pending_still_feed_their_readers(two_cpus) -> None:  # type: ignore[no-untyped-def]
    import gc

    total = ap.zeros((200, 200), device=two_cpus[0])
    for i in range(30):
        temp = ap.full((200, 200), float(i), device=two_cpus[0]) @ ap.ones((200, 200), device=two_cpus[0])
        total += temp.copyto(two_cpus[0])
        del temp
        gc.collect()
    assert total[0, 0].item() == 200.0 * sum(range(30))
