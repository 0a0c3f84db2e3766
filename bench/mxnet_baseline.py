"""MXNet 1.9.1's d2l multi-device training on two CPU contexts: a reference for autopar train.

Needs its own venv, outside the repository (MXNet 1.9.1 needs numpy<1.24;
autopar and its tests never import this file or MXNet)::

    python3 -m venv ../mxvenv
    ../mxvenv/bin/pip install mxnet==1.9.1 "numpy<1.24"
    ../mxvenv/bin/python bench/mxnet_baseline.py [--steps 30] [--repeats 5] [--json out.json]
    ../mxvenv/bin/python bench/mxnet_baseline.py --overlap    # which operators run on both contexts at once

It runs the loop of d2l's "Training on Multiple GPUs" (from scratch) with
MXNet's own pieces -- ``gluon.utils.split_and_load``, ``autograd.record``,
one ``backward`` per device, an allreduce of every gradient (summed on the
first device, copied back), then SGD on every device -- for the same LeNet-5
(ReLU) as autopar's reference model, on the same synthetic
Fashion-MNIST-shaped batches (``autopar.datasets``, read from ``src/``),
batch 128 per device: once on ``mx.cpu(0)`` and once on ``mx.cpu(0)``,
``mx.cpu(1)``, interleaved in each round. MXNet's engine gives each CPU
context its own worker thread; ``OMP_NUM_THREADS`` is forced to 1 so each
operator uses one core (two contexts in OpenMP/BLAS at once with more threads
hang MXNet 1.9.1). The figures are medians of ``--repeats`` rounds of
``--steps`` steps after warm-up; "cores busy" (this process's CPU time over
wall time) shows whether the two contexts really ran side by side. A watchdog
ends the run after ``--timeout``.

What it shows here (2 cores, idle): the loop on two contexts is *slower* than
on one (about 0.9x), with 1.0-1.2 cores busy. ``--overlap`` finds why: the
same operators pushed to ``cpu(0)`` and ``cpu(1)`` at once overlap for an
elementwise ``exp`` (about 2 cores busy) but not for MKLDNN's convolution
(1.9x the time of one context, 1.0 core busy) and only partly for ``dot``.
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before MXNet loads OpenMP; see the docstring

import argparse  # noqa: E402
import faulthandler  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import mxnet as mx  # noqa: E402
import numpy  # noqa: E402
from mxnet import autograd, gluon, np, npx  # noqa: E402

from autopar.datasets import synthetic_fashion_mnist  # noqa: E402

npx.set_np()
LOSS = gluon.loss.SoftmaxCrossEntropyLoss()
SHAPES = [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400), (120,), (84, 120), (84,), (10, 84), (10,)]


def init_params(seed: int) -> list:
    """LeNet-5's parameters, Xavier-uniform weights and zero biases (as the torch reference), on the CPU."""
    rng = numpy.random.default_rng(seed)
    params = []
    for shape in SHAPES:
        if len(shape) == 1:
            params.append(np.zeros(shape))
            continue
        receptive = int(numpy.prod(shape[2:])) if len(shape) > 2 else 1
        bound = (6 / (shape[1] * receptive + shape[0] * receptive)) ** 0.5
        params.append(np.array(rng.uniform(-bound, bound, shape).astype(numpy.float32)))
    return params


def lenet(x, params):
    w1, b1, w2, b2, w3, b3, w4, b4, w5, b5 = params
    h = npx.relu(npx.convolution(x, w1, b1, kernel=(5, 5), pad=(2, 2), num_filter=6))
    h = npx.pooling(h, pool_type="avg", kernel=(2, 2), stride=(2, 2))
    h = npx.relu(npx.convolution(h, w2, b2, kernel=(5, 5), num_filter=16))
    h = npx.pooling(h, pool_type="avg", kernel=(2, 2), stride=(2, 2))
    h = npx.relu(npx.fully_connected(h, w3, b3, num_hidden=120, flatten=True))
    h = npx.relu(npx.fully_connected(h, w4, b4, num_hidden=84))
    return npx.fully_connected(h, w5, b5, num_hidden=10)


def get_params(params, device):
    copies = [p.copyto(device) for p in params]
    for p in copies:
        p.attach_grad()
    return copies


def allreduce(data):
    """d2l's: sum on the first device, then copy the sum back to the others."""
    for i in range(1, len(data)):
        data[0][:] += data[i].copyto(data[0].ctx)
    for i in range(1, len(data)):
        data[0].copyto(data[i])


def sgd(params, lr, batch_size):
    for p in params:
        p[:] = p - lr * p.grad / batch_size


def train_batch(x, y, device_params, devices, lr):
    x_shards = gluon.utils.split_and_load(x, devices)
    y_shards = gluon.utils.split_and_load(y, devices)
    with autograd.record():
        losses = [LOSS(lenet(xs, w), ys) for xs, ys, w in zip(x_shards, y_shards, device_params)]
    for loss in losses:
        loss.backward()
    for i in range(len(device_params[0])):
        allreduce([device_params[c][i].grad for c in range(len(devices))])
    for params in device_params:
        sgd(params, lr, x.shape[0])


class Run:
    """Training on ``devices`` with its own parameters and batches of ``batch * len(devices)``."""

    def __init__(self, devices, batch, batches, seed, lr=0.1):
        self.devices, self.lr = devices, lr
        self.device_params = [get_params(init_params(seed), d) for d in devices]
        size = batch * len(devices)
        self.batches = [(np.array(x[:size]), np.array(y[:size])) for x, y in batches]

    def steps(self, n):
        """Seconds per step, and the cores this process kept busy meanwhile (CPU time / wall time)."""
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(n):
            x, y = self.batches[i % len(self.batches)]
            train_batch(x, y, self.device_params, self.devices, self.lr)
        npx.waitall()
        wall = time.perf_counter() - start
        return wall / n, (time.process_time() - cpu) / wall


def overlap():
    """Each operator alone on cpu(0), then on cpu(0) and cpu(1) at once: do the contexts run side by side?"""
    x = [np.random.uniform(size=(128, 6, 14, 14), ctx=mx.cpu(i)) for i in range(2)]
    w = [np.random.uniform(size=(16, 6, 5, 5), ctx=mx.cpu(i)) for i in range(2)]
    m = [np.random.uniform(size=(1000, 1000), ctx=mx.cpu(i)) for i in range(2)]
    work = {
        "convolution": lambda i: [npx.convolution(x[i], w[i], None, kernel=(5, 5), num_filter=16, no_bias=True)
                                  for _ in range(200)],
        "exp": lambda i: [np.exp(m[i]) for _ in range(100)],
        "dot": lambda i: [np.dot(m[i], m[i]) for _ in range(10)],
    }
    for name, push in work.items():
        push(0)
        push(1)
        npx.waitall()  # warm-up

        def timed(contexts):
            start, cpu = time.perf_counter(), time.process_time()
            for i in contexts:
                push(i)
            npx.waitall()
            wall = time.perf_counter() - start
            return wall, (time.process_time() - cpu) / wall

        (one, _), (both, cores) = timed([0]), timed([0, 1])
        print(f"  {name:<12} both / one context {both / one:.2f}  ({cores:.2f} cores busy with both; "
              "1.00 and 2 cores: side by side, 2.00 and 1 core: one after the other)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=128, help="samples per device")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600, help="seconds before the watchdog ends the run")
    parser.add_argument("--json")
    parser.add_argument("--overlap", action="store_true", help="only check which operators overlap across contexts")
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    if args.overlap:
        print(f"MXNet {mx.__version__}, OMP_NUM_THREADS=1: the same work pushed to cpu(0) alone, then to cpu(0) and cpu(1)")
        overlap()
        faulthandler.cancel_dump_traceback_later()
        return

    data = synthetic_fashion_mnist(args.seed, n_train=8 * 2 * args.batch, n_test=0)
    batches = list(data.train_iter(2 * args.batch, seed=args.seed))
    runs = {1: Run([mx.cpu(0)], args.batch, batches, args.seed),
            2: Run([mx.cpu(0), mx.cpu(1)], args.batch, batches, args.seed)}
    for run in runs.values():
        run.steps(args.warmup)
    load_before = os.getloadavg()
    step_s = {n: [] for n in runs}
    busy = {n: [] for n in runs}
    for _ in range(args.repeats):
        for n, run in runs.items():
            seconds, cores = run.steps(args.steps)
            step_s[n].append(seconds)
            busy[n].append(cores)
    per_s = {n: n * args.batch / statistics.median(s) for n, s in step_s.items()}
    cores = {n: statistics.median(b) for n, b in busy.items()}
    print(f"MXNet {mx.__version__} d2l multi-device training (split_and_load, record, backward per device, "
          f"allreduce, sgd), LeNet-5 (ReLU), batch {args.batch} per device, OMP_NUM_THREADS=1; "
          f"median of {args.repeats} rounds of {args.steps} steps")
    for n, label in ((1, "1 context  (cpu(0))        "), (2, "2 contexts (cpu(0), cpu(1))")):
        print(f"  {label}  {per_s[n]:10,.0f} samples/s ({statistics.median(step_s[n]) * 1e3:.1f} ms/step, "
              f"{cores[n]:.2f} cores busy)" + (f"   {per_s[2] / per_s[1]:.2f}x" if n == 2 else ""))
    print(f"  load average before/after    {load_before[0]:.2f} / {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"mxnet": mx.__version__, "batch_per_device": args.batch, "step_s": step_s,
                       "cores_busy": busy, "samples_per_s": per_s, "load_before": load_before}, fh, indent=2)
    faulthandler.cancel_dump_traceback_later()


if __name__ == "__main__":
    main()
