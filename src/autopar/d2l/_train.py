"""d2l's accuracy, evaluation and training functions, for PyTorch-style and Gluon-style networks.

Each takes either kind of network and does what the book's edition for it
does: ``nn.Module`` networks are evaluated in ``eval()`` mode and trained
with ``autopar.optim`` and ``nn.DataParallel``; Gluon blocks are
initialised on the devices and trained with ``gluon.Trainer``. The loops
read values only where the book shows them (the animator's points and the
summary), not after every batch, so the engine keeps a few batches in
flight: the numbers are the book's, the time is not spent waiting.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from autopar.arrays._array import NDArray


class Timer:
    """d2l's: ``start()``, ``stop()`` (returns and records the seconds), ``avg()``, ``sum()``, ``cumsum()``."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.start()

    def start(self) -> None:
        self.tik = time.perf_counter()

    def stop(self) -> float:
        self.times.append(time.perf_counter() - self.tik)
        return self.times[-1]

    def avg(self) -> float:
        return sum(self.times) / len(self.times)

    def sum(self) -> float:
        return sum(self.times)

    def cumsum(self) -> list[float]:
        out, total = [], 0.0
        for t in self.times:
            total += t
            out.append(total)
        return out


class Accumulator:
    """d2l's: sums over ``n`` variables; ``add`` reads the values it is given (waiting for arrays)."""

    def __init__(self, n: int) -> None:
        self.data = [0.0] * n

    def add(self, *args: Any) -> None:
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self) -> None:
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx: int) -> float:
        return self.data[idx]


def _correct(y_hat: NDArray, y: NDArray) -> NDArray:
    """The number of right predictions, as a 0-d array (pushed, not read)."""
    if y_hat.ndim > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    out: NDArray = (y_hat.astype(y.dtype) == y).astype("float32").sum()
    return out


def accuracy(y_hat: NDArray, y: NDArray) -> float:
    """d2l's: the number of correct predictions (a float; it waits for them)."""
    return float(_correct(y_hat, y))


def _first_device(net: Any) -> Any:
    from autopar.devices import cpu
    from autopar.gluon import Block
    from autopar.nn import Module

    if isinstance(net, Module):
        return next(iter(net.parameters())).device
    if isinstance(net, Block):
        return list(net.collect_params().values())[0].list_ctx()[0]
    return cpu()


def _eval_mode(net: Any) -> None:
    from autopar.nn import Module

    if isinstance(net, Module):
        net.eval()


def evaluate_accuracy(net: Any, data_iter: Iterable[Any]) -> float:
    """d2l's: accuracy of ``net`` on ``data_iter`` where the data is."""
    from autopar.arrays._autograd import no_grad

    _eval_mode(net)
    correct, count = [], 0
    with no_grad():
        for X, y in data_iter:
            correct.append(_correct(net(X), y))
            count += y.size
    return sum(float(c) for c in correct) / count


def evaluate_accuracy_gpu(net: Any, data_iter: Iterable[Any], device: Any = None) -> float:
    """d2l's: accuracy of ``net`` on ``data_iter``, each batch moved to ``device`` (default: the device
    of the network's first parameter)."""
    from autopar.arrays._autograd import no_grad

    _eval_mode(net)
    if not device:
        device = _first_device(net)
    correct, count = [], 0
    with no_grad():
        for X, y in data_iter:
            X = [x.to(device, non_blocking=True) for x in X] if isinstance(X, list) else X.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            correct.append(_correct(net(X), y))
            count += y.size
    return sum(float(c) for c in correct) / count


def split_batch(X: Any, y: Any, devices: Sequence[Any]) -> tuple[list[NDArray], list[NDArray]]:
    """d2l's: ``X`` and ``y`` split over ``devices`` (``gluon.utils.split_and_load``)."""
    from autopar.parallel import split_and_load

    if X.shape[0] != y.shape[0]:
        raise ValueError(f"split_batch: {X.shape[0]} samples but {y.shape[0]} labels")
    return split_and_load(X, devices), split_and_load(y, devices)


def evaluate_accuracy_gpus(net: Any, data_iter: Iterable[Any], split_f: Any = split_batch) -> float:
    """d2l's (Gluon): each batch split over the network's devices, each part classified on its device."""
    from autopar.arrays._autograd import no_grad

    _eval_mode(net)
    devices = list(net.collect_params().values())[0].list_ctx()
    correct, count = [], 0
    with no_grad():
        for features, labels in data_iter:
            X_shards, y_shards = split_f(features, labels, devices)
            correct += [_correct(net(X), y) for X, y in zip(X_shards, y_shards)]
            count += labels.size
    return sum(float(c) for c in correct) / count


def sgd(params: Iterable[Any], lr: float, batch_size: int) -> None:
    """d2l's minibatch SGD: ``param -= lr * grad / batch_size``, then the gradient is zeroed (pushed)."""
    from autopar.arrays._autograd import no_grad

    with no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad[...] = 0


def train_ch6(net: Any, train_iter: Any, test_iter: Any, num_epochs: int, lr: float, device: Any = None,
              animator: Any = None) -> Any:  # fmt: skip
    """d2l's ``train_ch6`` (both editions): Xavier init, SGD, cross-entropy, on one ``device``; returns the animator."""
    from autopar import init as initializers
    from autopar import nn
    from autopar.arrays._autograd import no_grad, record
    from autopar.d2l._animator import Animator
    from autopar.devices import try_gpu
    from autopar.engine import waitall
    from autopar.gluon import Block, Trainer
    from autopar.gluon.loss import SoftmaxCrossEntropyLoss
    from autopar.optim import SGD

    device = try_gpu() if device is None else device
    gluon_net = isinstance(net, Block)
    if gluon_net:
        net.initialize(force_reinit=True, ctx=device, init=initializers.Xavier())
        loss: Any = SoftmaxCrossEntropyLoss()
        trainer: Any = Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    else:
        net.apply(lambda m: nn.init.xavier_uniform_(m.weight) if type(m) in (nn.Linear, nn.Conv2d) else None)
        net.to(device)
        loss, trainer = nn.CrossEntropyLoss(), SGD(net.parameters(), lr=lr)
    print("training on", device)
    animator = animator or Animator(xlabel="epoch", xlim=[1, num_epochs], legend=["train loss", "train acc", "test acc"])
    timer, num_batches = Timer(), len(train_iter)
    train_l = train_acc = test_acc = float("nan")
    n = 0
    for epoch in range(num_epochs):
        sums: list[Any] = []
        if not gluon_net:
            net.train()
        timer.start()
        for i, (X, y) in enumerate(train_iter):
            X, y = X.to(device, non_blocking=True), y.to(device, non_blocking=True)
            if gluon_net:
                with record():
                    y_hat = net(X)
                    l = loss(y_hat, y)
                l.backward()
                trainer.step(X.shape[0])
                total = l.sum()
            else:
                trainer.zero_grad()
                y_hat = net(X)
                l = loss(y_hat, y)
                l.backward()
                trainer.step()
                total = l * X.shape[0]
            with no_grad():
                sums.append((total.detach(), _correct(y_hat.detach(), y), X.shape[0]))
            if (i + 1) % max(num_batches // 5, 1) == 0 or i == num_batches - 1:
                n = sum(s[2] for s in sums)
                train_l, train_acc = sum(float(s[0]) for s in sums) / n, sum(float(s[1]) for s in sums) / n
                animator.add(epoch + (i + 1) / num_batches, (train_l, train_acc, None))
        waitall()
        timer.stop()  # the epoch's wall time: everything it pushed has run
        test_acc = evaluate_accuracy_gpu(net, test_iter, device)
        animator.add(epoch + 1, (None, None, test_acc))
    print(f"loss {train_l:.3f}, train acc {train_acc:.3f}, test acc {test_acc:.3f}")
    print(f"{n * num_epochs / timer.sum():.1f} examples/sec on {device}")
    return animator


def train_batch_ch13(net: Any, X: Any, y: Any, loss: Any, trainer: Any, devices: Sequence[Any],
                     split_f: Any = split_batch) -> tuple[Any, Any]:  # fmt: skip
    """d2l's: one step; returns (sum of the losses, number correct), as arrays (not read)."""
    from autopar.arrays._autograd import no_grad, record
    from autopar.gluon import Trainer

    if isinstance(trainer, Trainer):
        X_shards, y_shards = split_f(X, y, devices)
        with record():
            preds = [net(x) for x in X_shards]
            ls = [loss(p, t) for p, t in zip(preds, y_shards)]
        for l in ls:
            l.backward()
        trainer.step(y.shape[0], ignore_stale_grad=True)
        with no_grad():
            here = devices[0]
            losses = [l.sum().detach().to(here, non_blocking=True) for l in ls]
            right = [_correct(p.detach(), t).to(here, non_blocking=True) for p, t in zip(preds, y_shards)]
            return sum(losses[1:], losses[0]), sum(right[1:], right[0])
    X = [x.to(devices[0], non_blocking=True) for x in X] if isinstance(X, list) else X.to(devices[0], non_blocking=True)
    y = y.to(devices[0], non_blocking=True)
    net.train()
    trainer.zero_grad()
    pred = net(X)
    l = loss(pred, y)
    l.sum().backward()
    trainer.step()
    with no_grad():
        return l.sum().detach(), _correct(pred.detach(), y)


def train_ch13(net: Any, train_iter: Any, test_iter: Any, loss: Any, trainer: Any, num_epochs: int,
               devices: Sequence[Any] | None = None, split_f: Any = split_batch) -> Any:  # fmt: skip
    """d2l's ``train_ch13`` (both editions): data-parallel training on ``devices`` (default: every device);
    returns the animator."""
    from autopar.d2l._animator import Animator
    from autopar.devices import try_all_gpus
    from autopar.engine import waitall
    from autopar.gluon import Trainer
    from autopar.nn import DataParallel

    devices = list(try_all_gpus() if devices is None else devices)
    gluon_net = isinstance(trainer, Trainer)
    timer, num_batches = Timer(), len(train_iter)
    animator = Animator(xlabel="epoch", xlim=[1, num_epochs], ylim=[0, 1], legend=["train loss", "train acc", "test acc"])
    if not gluon_net:
        net = DataParallel(net, device_ids=devices)
    for epoch in range(num_epochs):
        metric = Accumulator(4)
        pending: list[tuple[Any, ...]] = []
        timer.start()
        for i, (features, labels) in enumerate(train_iter):
            pending.append((*train_batch_ch13(net, features, labels, loss, trainer, devices, split_f),
                            labels.shape[0], labels.size))  # fmt: skip
            if (i + 1) % max(num_batches // 5, 1) == 0 or i == num_batches - 1:
                for step in pending:  # the values are read here, where the book shows them
                    metric.add(*step)
                pending.clear()
                animator.add(epoch + (i + 1) / num_batches, (metric[0] / metric[2], metric[1] / metric[3], None))
        waitall()
        timer.stop()
        test_acc = evaluate_accuracy_gpus(net, test_iter, split_f) if gluon_net else evaluate_accuracy_gpu(net, test_iter)
        animator.add(epoch + 1, (None, None, test_acc))
    print(f"loss {metric[0] / metric[2]:.3f}, train acc {metric[1] / metric[3]:.3f}, test acc {test_acc:.3f}")
    print(f"{metric[2] * num_epochs / timer.sum():.1f} examples/sec on {', '.join(map(str, devices))}")
    return animator
