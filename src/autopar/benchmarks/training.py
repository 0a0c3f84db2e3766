"""d2l's multi-device training experiment with autopar: what ``autopar train`` and the training
figures of ``autopar bench`` run.

The loop is d2l's ``train_batch``, written with autopar (``docs/guide.md``
shows it): split the batch over the devices, forward and loss on each inside
``autograd.record()``, then ``DataParallel.step`` -- backward on each device,
each gradient summed across devices as soon as it is ready, SGD. Nothing in
a step waits. The loop reads values only to keep the pipeline bounded: after
pushing step ``k`` it waits for the statistics of step ``k - LOOKAHEAD``
(loss and correct predictions, one small op per device and step), so the
engine always holds the next steps' work while the progress bar stays true
to what has run. The statistics are pushed before the step's backward, so
they run right after its forward: the wait ends, and the driver pushes the
next step (holding the GIL), early in a backward of long kernels -- not at
its end, where the lanes hand the first layers' gradients to the sums, the
update and the next forward, each hand-over needing the GIL. An epoch's time runs from its first push to the end of its
last step; its samples/s is its samples over that time.

Parameters start from the plain-PyTorch reference model of the same seed
(``autopar.nn.models``): the DDP baseline starts from the same numbers.
"""

from __future__ import annotations

import time
from statistics import median
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

LOOKAHEAD = 2  # steps pushed ahead of the last one waited for
BATCH_PER_DEVICE = {"lenet": 128, "resnet18": 32}


@dataclass
class EpochStats:
    epoch: int
    steps: int
    samples: int
    seconds: float
    train_loss: float
    train_acc: float
    test_acc: float

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else 0.0


@dataclass
class RunResult:
    """One training run: its devices, and one record per epoch."""

    model: str
    devices: list[Any]
    batch_per_device: int
    epochs: list[EpochStats] = field(default_factory=list)
    profile: Any = None  # a Profile of a few steps of the last epoch, when asked for
    # d2l's learning curve: (epoch, train loss so far in the epoch, train accuracy so far), five points an epoch
    curve: list[tuple[float, float, float]] = field(default_factory=list)

    @property
    def samples_per_s(self) -> float:
        """Over every epoch but the first when there are several (the first pays for warm-up)."""
        timed = self.epochs[1:] if len(self.epochs) > 1 else self.epochs
        return sum(e.samples for e in timed) / sum(e.seconds for e in timed)


def training_devices() -> tuple[list[Any], str]:
    """Every GPU when there are two or more; else the CPU split into two devices."""
    import autopar as ap

    if ap.num_gpus() >= 2:
        return [ap.gpu(i) for i in range(ap.num_gpus())], "GPUs"
    ap.set_cpu_devices(2)
    return [ap.cpu(0), ap.cpu(1)], "no two GPUs here: the cores are split into two CPU devices"


def _batch_stats(logits: Any, labels: Any, loss: Any) -> Any:
    import torch

    n = labels.shape[0]
    return torch.stack([loss.reshape(()) * n, (logits.argmax(1) == labels).sum().to(loss.dtype)])


class Trainer:
    """One model's replicas on ``devices``, trained by :meth:`epoch`."""

    def __init__(self, model_name: str, devices: Sequence[Any], lr: float, seed: int = 0) -> None:
        from autopar import parallel
        from autopar.nn import models

        self.devices = list(devices)
        self.model = models.build(model_name, seed, device=self.devices[0])
        self.replicas = parallel.replicate(self.model.params, self.devices)
        self.buffers = [self.model.buffers if d == self.devices[0] else self.model.buffers_on(d) for d in self.devices]
        self.step_fn = parallel.DataParallel(self.replicas, parallel.sgd(lr))

    def step(self, images: Any, labels: Any, sync: bool = True) -> list[Any]:
        """One data-parallel step on a global batch; returns each device's (loss * n, correct) array."""
        import autopar as ap
        from autopar import autograd, parallel
        from autopar.nn import functional as F

        xs, ys = parallel.split_and_load(images, self.devices), parallel.split_and_load(labels, self.devices)
        with autograd.record():
            logits = [self.model(x, p, b, True) for x, p, b in zip(xs, self.replicas, self.buffers)]
            losses = [F.cross_entropy(out, y) for out, y in zip(logits, ys)]
        # pushed before backward, so each runs right after its forward: the loop's wait for it then
        # ends (and the next step's pushes hold the GIL) early in backward, not in the critical
        # hand-overs at its end (first layers' sums, update, next forward)
        stats = [ap.call(_batch_stats, out.detach(), y, loss.detach(), shape=(2,), name="batch stats")
                 for out, y, loss in zip(logits, ys, losses)]  # fmt: skip
        self.step_fn.step(losses, sync=sync)
        return stats

    def run_steps(self, batches: Iterable[Any], on_step: Callable[[int, list[Any]], None] | None = None,
                  sync: bool = True) -> list[Any]:  # fmt: skip
        """Push the steps of ``batches``, keeping ``LOOKAHEAD`` steps in flight; returns every step's stats."""
        stats: list[Any] = []
        for i, (images, labels) in enumerate(batches):
            stats.append(self.step(images, labels, sync))
            if i >= LOOKAHEAD:
                stats[i - LOOKAHEAD][-1].wait_to_read()
                if on_step is not None:
                    on_step(i - LOOKAHEAD, stats[i - LOOKAHEAD])
        for s in stats:
            s[-1].wait_to_read()
        import autopar as ap

        ap.waitall()
        return stats

    def accuracy(self, images: Any, labels: Any, batch: int) -> float:
        """Test accuracy, each device classifying its share of every batch with its own replica."""
        import numpy as np

        import autopar as ap
        from autopar import parallel

        correct = []
        n = len(self.devices)
        with ap.no_grad():
            for start in range(0, len(images) - len(images) % n, batch * n):
                xs = parallel.split_and_load(images[start:start + batch * n], self.devices)
                ys = parallel.split_and_load(labels[start:start + batch * n], self.devices)
                for x, y, p, b in zip(xs, ys, self.replicas, self.buffers):
                    correct.append((ap.argmax(self.model(x, p, b, False), axis=1) == y).sum())
        total = sum(int(c.item()) for c in correct)
        return total / float(len(images) - len(images) % n) if correct else float(np.nan)


def train(model_name: str, devices: Sequence[Any], data: Any, *, epochs: int, steps: int | None, lr: float,
          batch_per_device: int | None = None, test_samples: int | None = None, seed: int = 0,
          progress: bool | None = None, profile_steps: int = 0,
          report: Callable[[EpochStats], None] | None = None) -> RunResult:  # fmt: skip
    """Train ``model_name`` on ``devices`` for ``epochs`` (of ``steps`` steps, or whole); see the module docstring."""
    import numpy as np

    from autopar._progress import EpochBar

    batch = batch_per_device or BATCH_PER_DEVICE[model_name]
    trainer = Trainer(model_name, devices, lr, seed)
    result = RunResult(model_name, list(devices), batch)
    test_images = data.test_images if test_samples is None else data.test_images[:test_samples]
    test_labels = data.test_labels if test_samples is None else data.test_labels[:test_samples]
    batches = data.train_iter(batch * len(devices), seed=seed)
    per_epoch = len(batches) if steps is None else min(steps, len(batches))
    for epoch in range(1, epochs + 1):
        bar = EpochBar(islice(iter(batches), per_epoch), epoch, epochs, total=per_epoch, enabled=progress)
        shown = {"loss": 0.0}

        def on_step(i: int, step_stats: list[Any]) -> None:
            if bar._bar is not None and i % 10 == 0:
                loss = float(step_stats[0][0].item()) / (batch)
                shown["loss"] = loss
                bar.show(loss=round(loss, 4))

        start = time.perf_counter()
        if profile_steps and epoch == epochs:
            stats = _profiled(trainer, bar, per_epoch, profile_steps, result, on_step)
        else:
            stats = trainer.run_steps(bar, on_step)
        seconds = time.perf_counter() - start
        per_step = [np.sum([s.numpy() for s in step], axis=0) for step in stats]
        totals = np.sum(per_step, axis=0) if stats else np.zeros(2)
        samples = len(stats) * batch * len(devices)
        result.curve += _curve_points(per_step, epoch, batch * len(devices))
        record = EpochStats(epoch, len(stats), samples, seconds, totals[0] / max(samples, 1), totals[1] / max(samples, 1),
                            trainer.accuracy(test_images, test_labels, batch))  # fmt: skip
        result.epochs.append(record)
        if report is not None:
            report(record)
    return result


def _curve_points(per_step: list[Any], epoch: int, batch: int, points: int = 5) -> list[tuple[float, float, float]]:
    """d2l's points: after every fifth of the epoch, the loss and accuracy averaged over the epoch so far."""
    import numpy as np

    n = len(per_step)
    if not n:
        return []
    sums = np.cumsum(per_step, axis=0)
    marks = sorted({max(1, round(n * k / points)) for k in range(1, points + 1)})
    return [(epoch - 1 + i / n, float(sums[i - 1][0]) / (i * batch), float(sums[i - 1][1]) / (i * batch)) for i in marks]


def warm_up(model_name: str, devices: Sequence[Any], steps: int = 3, batch_per_device: int | None = None) -> None:
    """A few untimed steps on a throwaway model: threads started, plans cached, torch's kernels loaded."""
    import numpy as np

    per_device = batch_per_device or BATCH_PER_DEVICE[model_name]
    batch = per_device * len(devices)
    images = np.zeros((batch, 1, 28, 28), dtype=np.float32)
    labels = np.zeros(batch, dtype=np.int64)
    for run_devices in ([devices[0]], list(devices)):
        n = len(run_devices) * per_device
        Trainer(model_name, run_devices, 0.1).run_steps([(images[:n], labels[:n])] * steps)


def _profiled(trainer: Trainer, bar: Iterable[Any], steps: int, profile_steps: int, result: RunResult,
              on_step: Callable[[int, list[Any]], None]) -> list[Any]:  # fmt: skip
    """The epoch's steps, with ``profile_steps`` of them in the middle recorded by the profiler."""
    import autopar as ap

    batches = iter(bar)
    first = max(0, min(steps - profile_steps, steps // 2))
    stats = trainer.run_steps(islice(batches, first), on_step)
    with ap.profile() as prof:
        stats += trainer.run_steps(islice(batches, profile_steps), on_step)
    result.profile = prof
    return stats + trainer.run_steps(batches, on_step)


def plot_curves(results: Sequence[RunResult], path: str) -> None:
    """d2l's learning curves, one row per run: the train loss (left, its own axis) and the train and test
    accuracy (right, 0 to 1), five points an epoch."""
    from autopar.d2l._animator import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(len(results), 2, figsize=(9, 2.8 * len(results)), dpi=110, squeeze=False)
    for (loss_ax, acc_ax), r in zip(axes, results):
        xs = [p[0] for p in r.curve]
        loss_ax.plot(xs, [p[1] for p in r.curve], "-", marker=".", label="train loss")
        acc_ax.plot(xs, [p[2] for p in r.curve], "m--", marker=".", label="train acc")
        acc_ax.plot([e.epoch for e in r.epochs], [e.test_acc for e in r.epochs], "g-.", marker="o", label="test acc")
        for ax, ylabel in ((loss_ax, "loss"), (acc_ax, "accuracy")):
            ax.set_xlabel("epoch")
            ax.set_ylabel(ylabel)
            ax.set_xlim(0, max(len(r.epochs), 1))
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        acc_ax.set_ylim(0, 1)
        loss_ax.set_title(f"{r.model} on {', '.join(map(str, r.devices))}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


@dataclass
class StepTimes:
    """Seconds per step of each round, for the three autopar configurations measured side by side."""

    model: str
    batch_per_device: int
    devices: list[Any]
    one: list[float] = field(default_factory=list)
    many: list[float] = field(default_factory=list)
    nosync: list[float] = field(default_factory=list)
    one_cpu: list[float] = field(default_factory=list)  # the process's CPU seconds per step (every thread)
    many_cpu: list[float] = field(default_factory=list)

    def figures(self, ddp: Any = None) -> list[Any]:
        from autopar.benchmarks import Figure

        b, n = self.batch_per_device, len(self.devices)
        name = f"{self.model}, batch {b}/device"
        one = [b / s for s in self.one]
        many = [n * b / s for s in self.many]
        ratios = [m / o for m, o in zip(many, one)]
        sums = [s / q for s, q in zip(self.many, self.nosync)]
        out = [
            Figure(f"{name}: autopar 1 device", median(one), one, unit="samples/s"),
            Figure(f"{name}: autopar {n} devices", median(many), many, unit="samples/s"),
            Figure(f"{name}: autopar {n} devices / 1 device", median(ratios), ratios, unit="ratio", note="target >= 1.7"),
            Figure(f"{name}: autopar step / step without sums", median(sums), sums, unit="ratio", note="target <= 1.10"),
        ]
        if self.one_cpu and self.many_cpu:  # CPU time per sample: what a loaded machine changes least
            cost = [(m / (n * b)) / (o / b) for m, o in zip(self.many_cpu, self.one_cpu)]
            out.append(Figure(f"{name}: CPU per sample, {n} devices / 1 device", median(cost), cost, unit="ratio",
                              note=f"{n} free cores would allow about {n}/this"))  # fmt: skip
        if ddp is not None:
            theirs = median(ddp.ddp_step_s)
            out.append(Figure(f"{name}: autopar {n}-device step / DDP step", median(self.many) / theirs,
                              [s / theirs for s in self.many], unit="ratio", note="target <= 1.00"))  # fmt: skip
        return out


def measure(model_name: str, devices: Sequence[Any], steps: int, rounds: int, seed: int = 0) -> StepTimes:
    """Seconds per step, interleaved in each round: 1 device, all devices, all devices without the sums."""
    from autopar.benchmarks.ddp_baseline import DDPConfig, global_batches

    batch = BATCH_PER_DEVICE[model_name]
    n = len(devices)
    data = global_batches(DDPConfig(model_name, batch, world=max(n, 2), seed=seed))
    one = [(x[:batch], y[:batch]) for x, y in data]
    many = [(x[: n * batch], y[: n * batch]) for x, y in data]
    times = StepTimes(model_name, batch, list(devices))
    runs = [(Trainer(model_name, devices[:1], 0.1, seed), one, True, times.one),
            (Trainer(model_name, devices, 0.1, seed), many, True, times.many),
            (Trainer(model_name, devices, 0.1, seed), many, False, times.nosync)]  # fmt: skip
    for trainer, batches, sync, _ in runs:  # warm-up
        trainer.run_steps(batches[:2], sync=sync)
    cpu = {id(times.one): times.one_cpu, id(times.many): times.many_cpu}
    for _ in range(rounds):
        for trainer, batches, sync, into in runs:
            work = [batches[i % len(batches)] for i in range(steps)]
            start, start_cpu = time.perf_counter(), time.process_time()
            trainer.run_steps(work, sync=sync)
            into.append((time.perf_counter() - start) / steps)
            if id(into) in cpu:
                cpu[id(into)].append((time.process_time() - start_cpu) / steps)
    return times
