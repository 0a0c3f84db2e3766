"""Baselines for remote devices: what plain Ray actors do on a local 2-node cluster.

Remote devices (the contract on many machines) are judged against plain Ray measured in the
same run: driver overhead per remote op <= 2x one plain actor call, a 64 MB
copy between nodes <= 1.5x a plain actor-to-actor handoff, and the chapter's
50 products with one device per node at both / max(T1, T2) <= 1.15. This
module measures the plain side, and next to it the same work written as
autopar array code on the cluster's devices (``node0/cpu:0``,
``node1/cpu:0``), so each target has its figure:

| figure                     | plain Ray                                   | autopar arrays on remote devices        |
|----------------------------|---------------------------------------------|-----------------------------------------|
| call round trip            | ``ray.get(actor.ping.remote())``            | ``(x + 1).wait_to_read()``, 16 elements |
| pipelined calls            | N calls submitted, then one ``ray.get``      | N ``x + 1`` ops, then ``waitall``       |
| 64 MB across nodes         | ``b.take.remote(a.give.remote())``          | ``x.to("node1/cpu:0")``, x on node0     |
| 50 products, one per node  | one actor per node, one call per product    | ``x @ x`` on ``node0/cpu:0``, ``node1/cpu:0`` |

Every figure is the median of ``repeats`` runs (the products: the best of
``trials``, as in ``chapter.py``), in one process on one cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from autopar.benchmarks import Figure, median_of, timed



class PlainActor:
    """A plain Ray actor: what a user would write without autopar."""

    def __init__(self, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.held: Any = None
        self.x: Any = None
        self.results: list[Any] = []

    def ping(self) -> None:
        return None

    def give(self, nbytes: int) -> Any:
        if self.held is None or self.held.nbytes != nbytes:
            self.held = np.ones(nbytes // 4, dtype=np.float32)
        return self.held

    def take(self, data: Any) -> int:
        self.held = data  # keeps the object-store buffer; no copy
        return int(data.nbytes)

    def release(self) -> None:
        self.held = None

    def setup(self, size: int) -> None:
        import torch

        self.x = torch.rand(size, size)
        self.results = []

    def product(self) -> None:
        self.results.append(self.x @ self.x)

    def drop(self) -> None:
        self.results = []


def product_seconds(size: int) -> float:
    """One float32 product of ``size`` x ``size`` on one thread, here (best of 3)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        x = torch.rand(size, size)
        x @ x
        return min(timed(lambda: x @ x) for _ in range(3))
    finally:
        torch.set_num_threads(threads)


def product_size(at_least_s: float = 0.025) -> int:
    """The smallest multiple of 64 whose one-thread product takes ``at_least_s`` here."""
    size = 512
    while product_seconds(size) < at_least_s and size < 4096:
        size += 128
    return size


def _plain_actors(ray: Any, node_ids: list[str]) -> list[Any]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    cls = ray.remote(PlainActor)
    return [cls.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote(1)
            for n in node_ids]


def _calls(submit: Callable[[], Any], wait: Callable[[Any], Any], n: int, repeats: int) -> tuple[Figure, Figure]:
    """Round trip (ms) and pipelined rate (calls/s) of one kind of call."""
    wait(submit())

    def round_trip() -> float:
        start = time.perf_counter()
        for _ in range(n // 4):
            wait(submit())
        return (time.perf_counter() - start) / (n // 4) * 1e3

    def pipelined() -> float:
        start = time.perf_counter()
        wait([submit() for _ in range(n)])
        return n / (time.perf_counter() - start)

    return (Figure("round trip", *median_of(repeats, round_trip), unit="ms"),
            Figure("pipelined", *median_of(repeats, pipelined), unit="calls/s"))


def _products(start: Callable[[int], list[Any]], wait: Callable[[list[Any]], Any], repeat: int,
              trials: int) -> tuple[float, float, float]:
    """T1, T2 and both for ``repeat`` products per node: ``start(i)`` submits node i's, returns refs."""
    wait(start(0) + start(1))  # warm up both
    best = [float("inf")] * 3
    for _ in range(trials):
        best[0] = min(best[0], timed(lambda: wait(start(0))))
        best[1] = min(best[1], timed(lambda: wait(start(1))))
        best[2] = min(best[2], timed(lambda: wait(start(0) + start(1))))
    return best[0], best[1], best[2]


def run(repeats: int = 5, calls: int = 2000, repeat: int = 50, trials: int = 3, size: int | None = None,
        report: Callable[[str], None] = lambda line: None) -> list[tuple[str, list[Figure]]]:
    """Start a local 2-node cluster (1 CPU each; object stores as --cluster local sizes them), measure, stop it;
    return titled sections of figures."""
    import autopar as ap
    import autopar.cluster
    from autopar.cluster._local import LocalCluster

    with LocalCluster(nodes=2, cpus=1) as cluster:
        autopar.cluster.connect(cluster.address)
        try:
            devices = [ap.Device("node0/cpu:0"), ap.Device("node1/cpu:0")]
            return measure(devices, repeats, calls, repeat, trials, size, report)
        finally:
            autopar.cluster.disconnect()


def measure(devices: list[Any], repeats: int = 5, calls: int = 2000, repeat: int = 50, trials: int = 3,
            size: int | None = None, report: Callable[[str], None] = lambda line: None,
            copy_mb: int = 64) -> list[tuple[str, list[Figure]]]:  # fmt: skip
    """Measure on the connected cluster, with ``devices``: one device on each of two nodes (copies of ``copy_mb`` MB)."""
    import ray

    import autopar as ap
    from autopar.cluster import _session

    size = size or product_size()
    devs = list(devices)
    plain = _plain_actors(ray, [_session.node(d.node).node.node_id for d in devs])
    try:
        return _measure(ap, ray, devs, plain, repeats, calls, repeat, trials, size, report, copy_mb * 2**20)
    finally:
        for actor in plain:
            ray.kill(actor)


def _measure(ap: Any, ray: Any, devs: list[Any], plain: list[Any], repeats: int, calls: int, repeat: int,
             trials: int, size: int, report: Callable[[str], None], nbytes: int) -> list[tuple[str, list[Figure]]]:  # fmt: skip
    sections: list[tuple[str, list[Figure]]] = []
    names = [str(d) for d in devs]
    report("calls")
    plain_rt, plain_pp = _calls(lambda: plain[1].ping.remote(), ray.get, calls, repeats)
    x = ap.ones(16, device=devs[1])

    def one_op() -> Any:
        return x + 1

    def wait_ops(ys: Any) -> None:
        if isinstance(ys, list):
            ap.waitall()
        else:
            ys.wait_to_read()

    ours_rt, ours_pp = _calls(one_op, wait_ops, calls, repeats)
    ours_rt.note = f"{ours_rt.value / plain_rt.value:.2f}x plain (target <= 2)"
    ours_pp.note = f"{plain_pp.value / ours_pp.value:.2f}x plain's time per call (target <= 2)"
    sections.append((f"ops on a node (plain Ray actor call vs autopar array op on {names[1]})", [
        _named(plain_rt, "plain actor round trip"), _named(ours_rt, "array op round trip"),
        _named(plain_pp, "plain actor pipelined"), _named(ours_pp, "array ops pipelined"),
    ]))

    mb = nbytes // 2**20
    report(f"{mb} MB from {devs[0].node} to {devs[1].node}")
    ray.get(plain[0].give.remote(nbytes))
    plain_move = Figure("plain actor-to-actor handoff", *median_of(
        repeats, lambda: timed(lambda: ray.get(plain[1].take.remote(plain[0].give.remote(nbytes)))) * 1e3),
        unit="ms")
    ray.get([a.release.remote() for a in plain])
    big = ap.ones(nbytes // 4, dtype="float32", device=devs[0])
    big.to(devs[1]).wait_to_read()
    ours_move = Figure(f"x.to('{names[1]}'), x on {names[0]}", *median_of(
        repeats, lambda: timed(lambda: big.to(devs[1]).wait_to_read()) * 1e3), unit="ms")
    del big
    ours_move.note = f"{ours_move.value / plain_move.value:.2f}x plain (target <= 1.5)"
    plain_move.note = f"{mb / (plain_move.value / 1e3):.0f} MiB/s"
    sections.append((f"{mb} MB from {devs[0].node} to {devs[1].node}", [plain_move, ours_move]))

    report(f"{repeat} products of {size}x{size} per node")
    ray.get([a.setup.remote(size) for a in plain])
    t1, t2, both = _products(lambda i: [plain[i].product.remote() for _ in range(repeat)], ray.get,
                             repeat, trials)
    ray.get([a.drop.remote() for a in plain])
    plain_ratio = Figure("plain actors: both / max(T1, T2)", both / max(t1, t2), [t1, t2, both], "ratio",
                         f"T1 {t1:.2f} s, T2 {t2:.2f} s, both {both:.2f} s")
    xs = [ap.random.uniform(size=(size, size), device=d) for d in devs]

    def start(i: int) -> list[Any]:
        return [xs[i] @ xs[i] for _ in range(repeat)]

    u1, u2, uboth = _products(start, lambda ys: ap.waitall(), repeat, trials)
    ours_ratio = Figure("autopar arrays: both / max(T1, T2)", uboth / max(u1, u2), [u1, u2, uboth], "ratio",
                        f"T1 {u1:.2f} s, T2 {u2:.2f} s, both {uboth:.2f} s (target <= 1.15)")
    sections.append((f"{repeat} products of {size}x{size} float32 on each node "
                     f"({product_seconds(size) * 1e3:.0f} ms each here, 1 thread)", [plain_ratio, ours_ratio]))
    return sections


def _named(figure: Figure, name: str) -> Figure:
    figure.name = name
    return figure
