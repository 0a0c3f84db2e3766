"""``autopar.capture`` against what it replaces, each figure against its baseline in the same process.

- a loop of ``x += 2*y`` on 1,024 float32, 100 iterations per call, per
  iteration: captured (compile, and replay) against ``torch.compile`` of the
  same loop on torch tensors (target: at most 2x torch.compile);
- a LeNet training step (batch 128; forward, backward, SGD) captured on one
  CPU device (auto -- compiled --, replay, and fastest: whichever ran faster), against the
  same step ``torch.compile``'d (target: at most 1.1x) and in torch eager;
- the captured data-parallel step on two CPU devices against one (target:
  at least 1.8x the samples/s; alongside, what two threads of PyTorch eager
  get against one on the same machine), and against PyTorch DDP's eager step (two
  processes x 1 thread, ``ddp_baseline``; target: faster by at least the
  compile factor, torch eager over torch.compile measured above).

Each autopar run is paired with its baselines run just before it, and the
figure is the median over the pairs of the ratio (``per_op._paired``), so
load that comes and goes on a shared machine hits both sides alike.
torch.compile and capture's compile mode compile once, before the timed
runs (their compile time is reported apart). ``TORCHINDUCTOR_COMPILE_THREADS=1``
is set when unset: inductor's compile workers otherwise fork a pool as large
as the machine, which on a small shared machine takes longer than it saves.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from autopar.benchmarks import Figure
from autopar.benchmarks.per_op import _paired, _ratio_figure

TARGET_LOOP = 2.0  # captured loop: at most 2x torch.compile's time per iteration
TARGET_LENET = 1.1  # captured LeNet step: at most 1.1x the torch.compile'd step
TARGET_TWO_DEVICES = 1.8  # two CPU devices: at least 1.8x one device's samples/s

os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")


def _loop(x: Any, y: Any, n: int = 100) -> Any:
    for _ in range(n):
        x += 2 * y
    return x


def captured_loop(calls: int = 200, repeats: int = 7) -> list[Figure]:
    """Microseconds per iteration of ``x += 2*y`` (100 per call), captured and torch.compile'd."""
    import torch

    import autopar as ap

    xt, yt = torch.zeros(1024), torch.ones(1024)
    compiled = torch.compile(_loop, dynamic=False)
    x, y = ap.zeros(1024), ap.ones(1024)
    mine = {mode: ap.capture(_loop, mode=mode) for mode in ("compile", "replay")}
    start = time.perf_counter()
    for f in mine.values():
        for _ in range(3):
            f(x, y)
        ap.waitall()
    ours_compile_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(3):
        compiled(xt, yt)
    torch_compile_s = time.perf_counter() - start

    def timed(f: Any) -> Any:
        def run() -> float:
            start = time.perf_counter()
            for _ in range(calls):
                f(x, y)
            ap.waitall()
            return (time.perf_counter() - start) / calls / 100 * 1e6

        return run

    def with_torch() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            compiled(xt, yt)
        return (time.perf_counter() - start) / calls / 100 * 1e6

    def torch_eager() -> float:
        start = time.perf_counter()
        for _ in range(max(calls // 10, 1)):
            _loop(xt, yt)
        return (time.perf_counter() - start) / max(calls // 10, 1) / 100 * 1e6

    figures = []
    for mode, f in mine.items():
        runs, (base, eager) = _paired(repeats, timed(f), with_torch, torch_eager)
        fig = _ratio_figure(f"captured x += 2*y loop ({mode}), per iteration", runs, base, "torch.compile",
                            TARGET_LOOP if mode == "compile" else None)  # fmt: skip
        fig.note += f"; torch eager {statistics.median(eager):.2f} us; {f!r}"
        figures.append(fig)
    figures[0].note += f"; one-off: capture+compile {ours_compile_s:.1f} s, torch.compile {torch_compile_s:.1f} s"
    return figures


def _lenet_parts(batch: int, seed: int = 0) -> Any:
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, 1, 28, 28)).astype(np.float32), rng.integers(0, 10, batch)


def lenet_step(steps: int = 10, repeats: int = 5, batch: int = 128) -> tuple[list[Figure], float]:
    """ms per LeNet training step: captured on one CPU device (compile, replay) against the step
    torch.compile'd and in torch eager. Also returns torch eager / torch.compile (the compile factor)."""
    import torch

    import autopar as ap
    from autopar import autograd
    from autopar.benchmarks import reference_models
    from autopar.nn import functional as F, models

    images, labels = _lenet_parts(batch)
    model = reference_models.build("lenet", seed=0)
    xt, yt = torch.from_numpy(images), torch.from_numpy(labels)

    def torch_step(x: Any, y: Any) -> Any:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p.sub_(0.1 * p.grad)
                    p.grad = None
        return loss

    compiled = torch.compile(torch_step, dynamic=False)
    start = time.perf_counter()
    for _ in range(3):
        compiled(xt, yt)
    torch_compile_s = time.perf_counter() - start
    X, y = ap.asarray(images), ap.asarray(labels)
    mine = {}
    ours_compile_s = {}
    for mode in ("auto", "replay", "fastest"):
        net = models.build("lenet", 0)
        params = net.params
        for p in params:
            p.attach_grad()

        def step(X: Any, y: Any, net: Any = net, params: Any = params) -> Any:
            with autograd.record():
                loss = F.cross_entropy(net(X, params), y)
            loss.backward()
            for p in params:
                p -= 0.1 * p.grad
            return loss

        mine[mode] = ap.capture(step, mode=mode)
        start = time.perf_counter()
        for _ in range(3):
            mine[mode](X, y)
        ap.waitall()
        ours_compile_s[mode] = time.perf_counter() - start

    def timed(f: Any) -> Any:
        def run() -> float:
            start = time.perf_counter()
            for _ in range(steps):
                f(X, y)
            ap.waitall()
            return (time.perf_counter() - start) / steps * 1e3

        return run

    def torch_timed(f: Any) -> Any:
        def run() -> float:
            start = time.perf_counter()
            for _ in range(steps):
                f(xt, yt)
            return (time.perf_counter() - start) / steps * 1e3

        return run

    figures = []
    factor = 1.0
    for mode, f in mine.items():
        runs, (base, eager) = _paired(repeats, timed(f), torch_timed(compiled), torch_timed(torch_step))
        fig = _ratio_figure(f"LeNet step captured ({mode}), batch {batch}, 1 CPU device", runs, base,
                            "torch.compile'd step", TARGET_LENET if mode == "auto" else None, unit="ms")  # fmt: skip
        factor = statistics.median(e / b for e, b in zip(eager, base))
        fig.note += (f"; torch eager {statistics.median(eager):.2f} ms ({factor:.2f}x torch.compile); "
                     f"first 3 calls {ours_compile_s[mode]:.1f} s (torch.compile's {torch_compile_s:.1f} s); {f!r}")
        figures.append(fig)
    return figures, factor


def _torch_threads(steps: int, batch: int) -> Callable[[int], float]:
    """samples/s of PyTorch eager LeNet steps in ``n`` threads at once (1 intra-op thread each, a model
    each): what threads of this process can get from the machine, with no autopar around them."""
    import threading

    import torch

    from autopar.benchmarks import reference_models

    images, labels = _lenet_parts(batch)
    X, y = torch.from_numpy(images), torch.from_numpy(labels)
    models = [reference_models.build("lenet", seed=0) for _ in range(2)]

    def train(model: Any) -> None:
        torch.set_num_threads(1)
        for _ in range(steps):
            loss = torch.nn.functional.cross_entropy(model(X), y)
            grads = torch.autograd.grad(loss, list(model.parameters()))
            with torch.no_grad():
                torch._foreach_add_(list(model.parameters()), grads, alpha=-0.1)

    def run(n: int) -> float:
        threads = [threading.Thread(target=train, args=(m,)) for m in models[:n]]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return batch * n * steps / (time.perf_counter() - start)

    run(2)  # warm
    return run


def data_parallel(steps: int = 20, repeats: int = 5, batch_per_device: int = 128, ddp: bool = True,
                  compile_factor: float | None = None) -> list[Figure]:  # fmt: skip
    """samples/s of the captured data-parallel LeNet step on two CPU devices against one, and against DDP."""
    import autopar as ap
    from autopar import parallel
    from autopar.nn import functional as F, models

    ap.waitall()
    ap.set_cpu_devices(2)
    try:
        makers = {}
        for n in (1, 2):
            devices = [ap.cpu(i) for i in range(n)]
            images, labels = _lenet_parts(batch_per_device * n)
            X, y = ap.asarray(images), ap.asarray(labels)
            net = models.build("lenet", 0)
            replicas = parallel.replicate(net.params, devices)
            # the default capture mode: compiled where a compiler is available
            trainer = parallel.DataParallel(replicas, parallel.sgd(lr=0.1), capture=True)
            f = partial(trainer.step_batch, lambda p, x, t, net=net: F.cross_entropy(net(x, p), t))
            for _ in range(3):
                f(X, y)
            ap.waitall()

            def run(f: Any = f, X: Any = X, y: Any = y, n: int = n) -> float:
                start = time.perf_counter()
                for _ in range(steps):
                    f(X, y)
                ap.waitall()
                return batch_per_device * n * steps / (time.perf_counter() - start)

            makers[n] = (run, trainer)
        threads = _torch_threads(steps, batch_per_device)
        two, (one, torch_one, torch_two) = _paired(repeats, makers[2][0], makers[1][0], lambda: threads(1),
                                                   lambda: threads(2))  # fmt: skip
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)
    ratio = statistics.median(t / o for t, o in zip(two, one))
    fig = Figure(f"captured data-parallel LeNet step, 2 CPU devices (batch {batch_per_device}/device)",
                 statistics.median(two), two, unit="samples/s")  # fmt: skip
    fig.note = (f"{ratio:.2f}x one device ({statistics.median(one):.0f} samples/s); target >= {TARGET_TWO_DEVICES}x: "
                f"{'met' if ratio >= TARGET_TWO_DEVICES else 'NOT met'}; PyTorch eager in two threads here: "
                f"{statistics.median(t / o for t, o in zip(torch_two, torch_one)):.2f}x one thread; "
                f"{makers[2][1]._batch_step!r}")
    figures = [fig]
    if ddp:
        from autopar.benchmarks import ddp_baseline

        result = ddp_baseline.measure(ddp_baseline.DDPConfig.for_model("lenet", batch_per_device=batch_per_device,
                                                                       steps=steps, repeats=3))  # fmt: skip
        over = statistics.median(two) / result.ddp_samples_per_s
        want = compile_factor if compile_factor is not None else 1.0
        fig.note += (f"; {over:.2f}x PyTorch DDP 2 x 1 eager ({result.ddp_samples_per_s:.0f} samples/s); target >= "
                     f"{want:.2f}x (the compile factor): {'met' if over >= want else 'NOT met'}")
    return figures


def run(quick: bool = False) -> list[Figure]:
    """Every figure above; ``quick``: the loop only (the others compile LeNet and start DDP: minutes)."""
    if quick:
        return captured_loop(50, 2)
    lenet, factor = lenet_step()
    return captured_loop() + lenet + data_parallel(compile_factor=factor)
