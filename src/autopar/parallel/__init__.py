"""``autopar.parallel``: data parallelism on several devices (the contract on data parallelism).

    devices = autopar.try_all_gpus()             # or [cpu(0), cpu(1)] after set_cpu_devices(2)
    replicas = parallel.replicate(params, devices)
    trainer = parallel.DataParallel(replicas, parallel.sgd(lr=0.1))
    for X, y in batches:
        Xs, ys = parallel.split_and_load(X, devices), parallel.split_and_load(y, devices)
        with autograd.record():
            losses = [loss(net(x, p), t) for x, t, p in zip(Xs, ys, replicas)]
        trainer.step(losses)                     # returns at once

``split_and_load``, ``broadcast`` and ``allreduce`` move data on the copy
lanes (``_collectives.py``); ``DataParallel`` sums each gradient as soon as it
is ready on every device and updates with ``sgd`` or ``adam``: one engine op
per bucket of gradients and device for plain SGD, one per parameter otherwise
(``_step.py``, ``_optim.py``). On CPU devices of one process a sum is one op
that reads every device's memory, and with plain SGD updates every device too
(``_local.py``); buckets there hold ``SHARED_BUCKET_SIZE`` elements by
default, elsewhere ``BUCKET_SIZE``.
"""

from __future__ import annotations

from autopar.arrays import _methods  # noqa: F401  (arrays get their methods and operators)

from autopar.parallel._collectives import allreduce, broadcast, split_and_load
from autopar.parallel._adam import Adam, adam
from autopar.parallel._optim import SGD, Optimizer, sgd
from autopar.parallel._step import BUCKET_SIZE, SHARED_BUCKET_SIZE, DataParallel, replicate

__all__ = ["BUCKET_SIZE", "SHARED_BUCKET_SIZE", "SGD", "Adam", "DataParallel", "Optimizer", "adam", "allreduce",
           "broadcast", "replicate", "sgd", "split_and_load"]  # fmt: skip
