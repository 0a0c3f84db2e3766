"""PyTorch ``DistributedDataParallel`` on this machine: the baseline for autopar's training.

    python bench/ddp_baseline.py [--model lenet|resnet18|all] [--quick] [--json out.json]

What runs: ``world`` processes (2) of one intra-op thread each, a gloo process
group over 127.0.0.1, each process training a replica of a reference model
(:mod:`autopar.benchmarks.reference_models`) wrapped in DDP with its default
settings (25 MB buckets, buffers broadcast at each forward), on its shard of
each global batch of the synthetic Fashion-MNIST-shaped data
(:mod:`autopar.datasets`), with plain SGD. Each step is d2l's: forward,
cross-entropy, backward (DDP sums the gradients in buckets while backward
runs), update.

What is measured, interleaved in each of ``repeats`` rounds so that load
drifting on a shared machine hits every figure alike:

1. *single*: rank 0 alone trains a plain (non-DDP) copy of the model on its
   shard -- one process, one thread, the per-device batch: the single-device
   reference -- while the other ranks wait in a barrier (asleep);
2. *ddp*: every rank takes DDP steps;
3. *no_sync*: the same steps inside ``no_sync()``: no gradient traffic.

Each is ``steps`` steps timed after a barrier, the slowest rank counting, after
``warmup`` untimed steps of each kind; the figures are medians over rounds:
samples/s of 1 x 1 (``batch / step``) and of DDP (``world * batch / step``),
their ratio, and DDP step / no_sync step (1.00: gradient traffic fully hidden
behind backward). Last, one flat ``all_reduce`` of a tensor as large as all
the model's gradients together, timed ``allreduce_repeats`` times.

How the processes are kept safe: the parent owns the rendezvous, a
``TCPStore`` it binds to port 0 on 127.0.0.1 before any worker starts -- the
kernel picks a free port and no one can take it in between, unlike probing for
a free port and releasing it. Gloo binds its own connections the same way
(``GLOO_SOCKET_IFNAME`` names the loopback interface). Workers are spawned
(not forked: torch's threads do not survive a fork), send back either a result
or their traceback, and the parent waits on their pipes and exit sentinels
until one deadline; on any failure, timeout or interrupt every worker is
terminated, then killed, and joined with a timeout. Gloo's own timeout is the
same deadline, so a rank whose peer died fails instead of waiting forever.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from autopar.benchmarks import Figure

DISTINCT_BATCHES = 8  # global batches cycled through; the data's content does not change the speed


@dataclass(frozen=True)
class DDPConfig:
    """One baseline run. :meth:`for_model` gives the defaults of the data-parallel training figures."""

    model: str = "lenet"
    batch_per_device: int = 128
    world: int = 2
    steps: int = 30
    warmup: int = 5
    repeats: int = 5
    allreduce_repeats: int = 10
    lr: float = 0.1
    seed: int = 0
    timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.world < 2:
            raise ValueError(f"DDPConfig: world={self.world}; DDP needs at least 2 processes")
        for name in ("batch_per_device", "steps", "repeats", "allreduce_repeats", "warmup"):
            value, least = getattr(self, name), 0 if name == "warmup" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"DDPConfig: {name}={value!r}; expected a whole number >= {least}")
        if not self.timeout_s > 0:
            raise ValueError(f"DDPConfig: timeout_s={self.timeout_s!r}; expected seconds > 0")

    @classmethod
    def for_model(cls, model: str, quick: bool = False, **changes: Any) -> DDPConfig:
        """LeNet at batch 128 per device, ResNet-18 at 32; ``quick``: few steps (seconds, for tests and CI)."""
        from autopar.benchmarks.reference_models import MODELS

        if model not in MODELS:
            raise ValueError(f"ddp baseline: model {model!r}; expected one of {', '.join(MODELS)}")
        if model == "lenet":
            base = cls(model, 128, steps=3, warmup=1, repeats=1, allreduce_repeats=2) if quick else cls(model, 128)
        else:
            base = cls(model, 32, steps=1, warmup=1, repeats=1, allreduce_repeats=1) if quick else \
                cls(model, 32, steps=4, warmup=2, repeats=3, allreduce_repeats=5)
        return dataclasses.replace(base, **changes)


@dataclass
class DDPResult:
    """Seconds per step of each round (the slowest rank), seconds per flat allreduce."""

    config: DDPConfig
    parameters: int
    single_step_s: list[float]
    ddp_step_s: list[float]
    nosync_step_s: list[float]
    allreduce_s: list[float]
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    torch_version: str = ""

    @property
    def single_samples_per_s(self) -> float:
        return self.config.batch_per_device / statistics.median(self.single_step_s)

    @property
    def ddp_samples_per_s(self) -> float:
        return self.config.world * self.config.batch_per_device / statistics.median(self.ddp_step_s)

    @property
    def speedup(self) -> float:
        """DDP samples/s over 1 x 1 samples/s (``world``: perfect scaling)."""
        return self.ddp_samples_per_s / self.single_samples_per_s

    @property
    def sync_ratio(self) -> float:
        """DDP step / no_sync step: 1.00 means the gradient traffic was hidden."""
        return statistics.median(self.ddp_step_s) / statistics.median(self.nosync_step_s)

    @property
    def allreduce_ms(self) -> float:
        return statistics.median(self.allreduce_s) * 1e3

    def figures(self) -> list[Figure]:
        """The figures as ``autopar bench`` reports them."""
        c, world = self.config, self.config.world
        name = f"{c.model}, batch {c.batch_per_device}/device"
        per_s = [c.batch_per_device / s for s in self.single_step_s]
        ddp_per_s = [world * c.batch_per_device / s for s in self.ddp_step_s]
        return [
            Figure(f"{name}: 1 process x 1 thread", self.single_samples_per_s, per_s, unit="samples/s"),
            Figure(f"{name}: DDP {world} x 1", self.ddp_samples_per_s, ddp_per_s, unit="samples/s",
                   note=f"{self.speedup:.2f}x 1 x 1"),
            Figure(f"{name}: DDP step / no_sync step", self.sync_ratio,
                   [d / n for d, n in zip(self.ddp_step_s, self.nosync_step_s)], unit="ratio",
                   note="1.00: gradient traffic hidden"),
            Figure(f"{name}: one flat allreduce of all gradients", self.allreduce_ms,
                   [s * 1e3 for s in self.allreduce_s], unit="ms", note=f"{self.parameters:,} float32"),
        ]

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.update(single_samples_per_s=self.single_samples_per_s, ddp_samples_per_s=self.ddp_samples_per_s,
                   speedup=self.speedup, sync_ratio=self.sync_ratio, allreduce_ms=self.allreduce_ms)
        return out


def global_batches(config: DDPConfig, count: int = DISTINCT_BATCHES) -> list[tuple[np.ndarray, np.ndarray]]:
    """The first ``count`` global batches (``world * batch_per_device`` rows) every run trains on.

    Rank ``r`` takes rows ``r * batch_per_device`` up to the next rank's, as
    ``split_and_load`` splits a batch along axis 0."""
    from autopar.datasets import synthetic_fashion_mnist

    size = config.world * config.batch_per_device
    data = synthetic_fashion_mnist(config.seed, n_train=count * size, n_test=0)
    return list(data.train_iter(size, seed=config.seed))


def _loopback_interface() -> str | None:
    for _, name in socket.if_nameindex():
        if name.startswith("lo"):
            return name
    return None


# --- inside a worker process ---------------------------------------------

def _train_step(model: Any, optimizer: Any, x: Any, y: Any) -> None:
    import torch.nn.functional as F

    optimizer.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()


class _Worker:
    """One rank's state: its shard of the batches, the DDP replica and, on rank 0, the single-device copy."""

    def __init__(self, rank: int, config: DDPConfig) -> None:
        import torch
        from torch.nn.parallel import DistributedDataParallel

        from autopar.benchmarks.reference_models import build

        self.rank, self.config = rank, config
        lo, hi = rank * config.batch_per_device, (rank + 1) * config.batch_per_device
        self.shards = [(torch.from_numpy(x[lo:hi]), torch.from_numpy(y[lo:hi])) for x, y in global_batches(config)]
        self.replica = build(config.model, config.seed)
        self.ddp = DistributedDataParallel(self.replica)
        self.optimizer = torch.optim.SGD(self.ddp.parameters(), lr=config.lr)

    def run(self, model: Any, optimizer: Any, steps: int) -> float:
        start = time.perf_counter()
        for i in range(steps):
            _train_step(model, optimizer, *self.shards[i % len(self.shards)])
        return time.perf_counter() - start

    def ddp_steps(self, steps: int, sync: bool) -> float:
        if sync:
            return self.run(self.ddp, self.optimizer, steps)
        with self.ddp.no_sync():
            return self.run(self.ddp, self.optimizer, steps)


def _slowest(values: list[float]) -> list[float]:
    """Element-wise maximum over the ranks (every rank calls it)."""
    import torch
    import torch.distributed as dist

    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return [float(v) for v in tensor]


def _measure(rank: int, config: DDPConfig) -> dict[str, Any] | None:
    import torch
    import torch.distributed as dist

    from autopar.benchmarks.reference_models import build

    w = _Worker(rank, config)
    single = build(config.model, config.seed) if rank == 0 else None
    single_opt = torch.optim.SGD(single.parameters(), lr=config.lr) if single is not None else None
    if single is not None:
        w.run(single, single_opt, config.warmup)
    w.ddp_steps(config.warmup, sync=True)
    w.ddp_steps(config.warmup, sync=False)
    times: dict[str, list[float]] = {"single": [], "ddp": [], "nosync": [], "allreduce": []}
    for _ in range(config.repeats):
        dist.barrier()
        if single is not None:
            times["single"].append(w.run(single, single_opt, config.steps) / config.steps)
        for kind, sync in (("ddp", True), ("nosync", False)):
            dist.barrier()
            times[kind].append(w.ddp_steps(config.steps, sync) / config.steps)
    flat = torch.cat([p.grad.reshape(-1) for p in w.replica.parameters() if p.grad is not None])
    for _ in range(config.allreduce_repeats):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(flat)
        times["allreduce"].append(time.perf_counter() - start)
    for kind in ("ddp", "nosync", "allreduce"):
        times[kind] = _slowest(times[kind])
    if rank != 0:
        return None
    return {**times, "parameters": int(flat.numel()), "torch": torch.__version__}


def _train(rank: int, config: DDPConfig) -> np.ndarray:
    """``config.steps`` synchronised DDP steps from the seeded initialisation; this rank's parameters, flat."""
    import torch

    w = _Worker(rank, config)
    w.ddp_steps(config.steps, sync=True)
    return torch.cat([p.detach().reshape(-1) for p in w.replica.parameters()]).numpy()


_TASKS: dict[str, Callable[[int, DDPConfig], Any]] = {"measure": _measure, "train": _train}


def _worker_main(rank: int, port: int, task: str, config: DDPConfig, conn: Connection) -> None:
    """A spawned rank: join the gloo group, run ``task``, send ``("ok", result)`` or ``("error", traceback)``."""
    try:
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
        import torch.distributed as dist

        interface = _loopback_interface()
        if interface is not None:
            os.environ["GLOO_SOCKET_IFNAME"] = interface
        timeout = timedelta(seconds=config.timeout_s)
        store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timeout)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=config.world, timeout=timeout)
        try:
            result = _TASKS[task](rank, config)
        finally:
            dist.destroy_process_group()
        conn.send(("ok", result))
    except BaseException:  # noqa: BLE001 -- every failure goes back to the parent, none dies silently
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


# --- in the parent ---------------------------------------------------------

def _run_workers(task: str, config: DDPConfig) -> list[Any]:
    """Spawn ``config.world`` ranks running ``task``; their results by rank. Nothing outlives the call."""
    import multiprocessing
    from multiprocessing.connection import wait

    import torch.distributed as dist

    context = multiprocessing.get_context("spawn")
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                          timeout=timedelta(seconds=config.timeout_s))
    pipes = [context.Pipe(duplex=False) for _ in range(config.world)]
    procs = [context.Process(target=_worker_main, args=(rank, store.port, task, config, send), daemon=True,
                             name=f"autopar-ddp-rank{rank}") for rank, (_, send) in enumerate(pipes)]
    results: list[Any] = [None] * config.world
    try:
        for proc in procs:
            proc.start()
        for _, send in pipes:
            send.close()  # the parent keeps only the reading ends: a dead rank's pipe then reads EOF
        waiting = {recv: rank for rank, (recv, _) in enumerate(pipes)}
        deadline = time.monotonic() + config.timeout_s
        while waiting:
            ready = wait(list(waiting), timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                ranks = ", ".join(str(r) for r in sorted(waiting.values()))
                raise TimeoutError(f"ddp baseline: no result from rank(s) {ranks} within timeout_s="
                                   f"{config.timeout_s:g}; the machine may be busy: raise timeout_s or take fewer steps")
            for conn in ready:
                rank = waiting.pop(conn)  # type: ignore[call-overload]
                try:
                    status, payload = pipes[rank][0].recv()
                except EOFError:
                    procs[rank].join(5)
                    raise ChildProcessError(f"ddp baseline: rank {rank} exited with code {procs[rank].exitcode} "
                                            "before sending a result") from None
                if status == "error":
                    raise ChildProcessError(f"ddp baseline: rank {rank} failed:\n{payload}")
                results[rank] = payload
        for proc in procs:
            proc.join(30)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        for proc in procs:
            if proc.pid is not None:
                proc.join(5)
                if proc.is_alive():
                    proc.kill()
                    proc.join(5)
        for recv, _ in pipes:
            recv.close()
        del store
    return results


def measure(config: DDPConfig) -> DDPResult:
    """Run the baseline described in the module docstring; returns at once only when every worker is gone."""
    load_before = os.getloadavg()
    out = _run_workers("measure", config)[0]
    return DDPResult(config, out["parameters"], out["single"], out["ddp"], out["nosync"], out["allreduce"],
                     load_before=load_before, load_after=os.getloadavg(), torch_version=out["torch"])


def train(config: DDPConfig) -> list[np.ndarray]:
    """Each rank's flat parameters after ``config.steps`` synchronised DDP steps on :func:`global_batches`.

    The oracle for data-parallel training: they equal one process trained on
    the whole global batches (gradients averaged, as DDP does)."""
    return _run_workers("train", config)


def report(results: list[DDPResult]) -> str:
    """The figures as text, one block per model: medians, and the best round (what an idle machine gives)."""
    lines = []
    for r in results:
        c = r.config
        per_s = [c.batch_per_device / s for s in r.single_step_s]
        ddp_per_s = [c.world * c.batch_per_device / s for s in r.ddp_step_s]
        lines += [
            f"{c.model} ({r.parameters:,} parameters), batch {c.batch_per_device} per device; "
            f"median of {c.repeats} rounds of {c.steps} steps after {c.warmup} warm-up (best round in brackets)",
            f"  1 process x 1 thread        {r.single_samples_per_s:10,.1f} samples/s ({max(per_s):,.1f}), "
            f"{statistics.median(r.single_step_s) * 1e3:.1f} ms/step",
            f"  DDP {c.world} x 1                   {r.ddp_samples_per_s:10,.1f} samples/s ({max(ddp_per_s):,.1f}), "
            f"{statistics.median(r.ddp_step_s) * 1e3:.1f} ms/step",
            f"  DDP / 1 x 1                 {r.speedup:10.2f}x",
            f"  DDP step / no_sync step     {r.sync_ratio:10.2f}   (1.00: gradient traffic hidden; "
            f"no_sync {statistics.median(r.nosync_step_s) * 1e3:.1f} ms/step)",
            f"  one flat allreduce          {r.allreduce_ms:10.1f} ms  ({r.parameters:,} float32)",
            f"  load average before/after   {r.load_before[0]:.2f} / {r.load_after[0]:.2f}",
        ]
    return "\n".join(lines)
