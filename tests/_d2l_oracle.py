"""Plain PyTorch twins of the book's chapter code: the oracles of test_d2l_chapters.py.

- :func:`write_fashion`: a tiny Fashion-MNIST-format dataset on disk (IDX files, gzipped).
- :func:`torch_twin`: a torch.nn copy of an autopar network (``autopar.nn`` or Gluon), with its weights.
- :func:`train_twin`: plain PyTorch SGD over the same batches, each batch computed as ``shards`` parts in
  turn (what data parallelism computes: batch norm sees each part alone), the loss the mean over all.
"""

from __future__ import annotations

import contextlib
import gzip
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
import torch.nn.functional as TF
from torch import nn as tnn


@contextlib.contextmanager
def two_cpu_devices() -> Iterator[list[Any]]:
    """The cores split into cpu:0 and cpu:1 for the block; one CPU device again after it (work finished)."""
    import autopar as ap

    ap.set_cpu_devices(2)
    try:
        yield [ap.cpu(0), ap.cpu(1)]
    finally:
        ap.waitall()
        ap.set_cpu_devices(1)


def write_fashion(root: str | os.PathLike[str], n_train: int = 16, n_test: int = 8, seed: int = 0) -> None:
    """``root/FashionMNIST/raw``: four gzipped IDX files of synthetic images (uint8) and labels."""
    from autopar.datasets import synthetic_fashion_mnist

    data = synthetic_fashion_mnist(seed, n_train=n_train, n_test=n_test)
    folder = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(folder, exist_ok=True)
    arrays = {"train-images-idx3-ubyte": data.train_images[:, 0], "train-labels-idx1-ubyte": data.train_labels,
              "t10k-images-idx3-ubyte": data.test_images[:, 0], "t10k-labels-idx1-ubyte": data.test_labels}
    for name, array in arrays.items():
        values = (array * 255).round().astype(np.uint8) if array.dtype == np.float32 else array.astype(np.uint8)
        header = bytes([0, 0, 0x08, values.ndim]) + np.asarray(values.shape, dtype=">u4").tobytes()
        with gzip.open(os.path.join(folder, name + ".gz"), "wb") as fh:
            fh.write(header + values.tobytes())


def numpy_of(array: Any) -> np.ndarray:
    return np.array(array.numpy(), copy=True)


class _Residual(tnn.Module):
    def __init__(self, conv1: Any, conv2: Any, conv3: Any, bn1: Any, bn2: Any) -> None:
        super().__init__()
        self.conv1, self.conv2, self.conv3, self.bn1, self.bn2 = conv1, conv2, conv3, bn1, bn2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = TF.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return TF.relu(y + (self.conv3(x) if self.conv3 is not None else x))


def _conv(weight: Any, bias: Any, stride: Any, padding: Any) -> tnn.Conv2d:
    w = numpy_of(weight)
    conv = tnn.Conv2d(w.shape[1], w.shape[0], w.shape[2:], stride=stride, padding=padding, bias=bias is not None)
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(w))
        if bias is not None:
            conv.bias.copy_(torch.from_numpy(numpy_of(bias)))
    return conv


def _bn(gamma: Any, beta: Any, mean: Any, var: Any, momentum: float, eps: float) -> tnn.BatchNorm2d:
    bn = tnn.BatchNorm2d(numpy_of(gamma).shape[0], eps=eps, momentum=momentum)
    with torch.no_grad():
        for target, source in ((bn.weight, gamma), (bn.bias, beta), (bn.running_mean, mean), (bn.running_var, var)):
            target.copy_(torch.from_numpy(numpy_of(source)))
    return bn


def _linear(weight: Any, bias: Any) -> tnn.Linear:
    w = numpy_of(weight)
    lin = tnn.Linear(w.shape[1], w.shape[0])
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(w))
        lin.bias.copy_(torch.from_numpy(numpy_of(bias)))
    return lin


def torch_twin(net: Any, device: Any = None) -> tnn.Module:
    """A torch.nn module computing what ``net`` computes, from its current weights (on ``device`` for Gluon)."""
    from autopar import gluon, nn
    from autopar.d2l import mxnet as d2l_mx
    from autopar.d2l import torch as d2l_pt
    from autopar.gluon import nn as gnn

    kind = type(net)
    if kind is nn.Sequential or kind is gnn.Sequential:
        return tnn.Sequential(*[torch_twin(m, device) for m in net])
    if kind is nn.Conv2d:
        return _conv(net.weight, net.bias, net.stride, net.padding)
    if kind is nn.BatchNorm2d:
        return _bn(net.weight, net.bias, net.running_mean, net.running_var, net.momentum, net.eps)
    if kind is nn.Linear:
        return _linear(net.weight, net.bias)
    if kind in (nn.ReLU, gnn.Activation):
        return tnn.ReLU()
    if kind is nn.AdaptiveAvgPool2d:
        return tnn.AdaptiveAvgPool2d(1)
    if kind is nn.Flatten:
        return tnn.Flatten()
    if kind is gnn.Conv2D:
        return _conv(net.weight.data(device), net.bias.data(device), net._strides, net._padding)
    if kind is gnn.BatchNorm:
        return _bn(*(p.data(device) for p in (net.gamma, net.beta, net.running_mean, net.running_var)),
                   1.0 - net._momentum, net._eps)  # fmt: skip
    if kind is gnn.GlobalAvgPool2D:
        return tnn.AdaptiveAvgPool2d(1)
    if kind is gnn.Dense:
        return tnn.Sequential(tnn.Flatten(), _linear(net.weight.data(device), net.bias.data(device)))
    if kind in (d2l_pt.Residual, d2l_mx.Residual):
        parts = [torch_twin(m, device) if m is not None else None for m in (net.conv1, net.conv2, net.conv3)]
        return _Residual(*parts, torch_twin(net.bn1, device), torch_twin(net.bn2, device))
    assert not isinstance(net, gluon.Block), f"no torch twin for {kind.__name__}"
    raise AssertionError(f"no torch twin for {kind.__name__}")


def train_twin(model: tnn.Module, batches: list[tuple[np.ndarray, np.ndarray]], lr: float, shards: int) -> tnn.Module:
    """Plain SGD on the mean cross-entropy; each batch's forward runs on ``shards`` parts in turn."""
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as autopar's CPU devices of the test: the same reductions in the same order
    try:
        for images, labels in batches:
            x, y = torch.from_numpy(images), torch.from_numpy(labels)
            logits = torch.cat([model(part) for part in x.chunk(shards)])
            loss = TF.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return model


def lenet(x: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
    """The from-scratch chapter's LeNet, in plain torch."""
    h = TF.avg_pool2d(TF.relu(TF.conv2d(x, params[0], params[1])), 2, 2)
    h = TF.avg_pool2d(TF.relu(TF.conv2d(h, params[2], params[3])), 2, 2)
    h = TF.relu(h.reshape(h.shape[0], -1) @ params[4] + params[5])
    return h @ params[6] + params[7]


def train_lenet(params: list[np.ndarray], batches: list[tuple[np.ndarray, np.ndarray]], lr: float) -> list[np.ndarray]:
    """The from-scratch chapter's training (summed loss, SGD by lr / batch size), in plain torch."""
    ps = [torch.from_numpy(p.copy()).requires_grad_() for p in params]
    for images, labels in batches:
        loss = TF.cross_entropy(lenet(torch.from_numpy(images), ps), torch.from_numpy(labels), reduction="sum")
        loss.backward()
        with torch.no_grad():
            for p in ps:
                p -= lr * p.grad / len(labels)
                p.grad.zero_()
    return [p.detach().numpy() for p in ps]
