"""The layer API on GPUs: nn.DataParallel, Gluon's Trainer, the book's loaders and traffic. Skipped without CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import autopar as ap
from autopar import autograd, d2l, gluon, init, nn, optim

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
RNG = np.random.default_rng(9)


def test_try_gpu_names_gpus_first() -> None:
    assert ap.try_gpu(0) == ap.gpu(0) and ap.try_all_gpus()[0] == ap.gpu(0)


@two_gpus
def test_data_parallel_on_two_gpus_equals_torch_on_the_whole_batch() -> None:
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for p, q in zip(net.parameters(), model.parameters()):
            q.copy_(torch.from_numpy(p.numpy()))
    trainer = optim.SGD(net.parameters(), lr=0.5)  # made before the move: it follows the parameters to cuda:0
    dp = nn.DataParallel(net, device_ids=[ap.gpu(0), ap.gpu(1)])
    theirs = torch.optim.SGD(model.parameters(), lr=0.5)
    for _ in range(3):
        x, y = RNG.standard_normal((6, 4)).astype(np.float32), RNG.integers(0, 3, 6)
        trainer.zero_grad()
        nn.CrossEntropyLoss()(dp(ap.asarray(x).to(ap.gpu(0))), ap.asarray(y).to(ap.gpu(0))).backward()
        trainer.step()
        theirs.zero_grad()
        TF.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        theirs.step()
    for p, q in zip(net.parameters(), model.parameters()):
        assert p.device == ap.gpu(0)
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)


@two_gpus
def test_gluon_trainer_on_two_gpus_keeps_the_copies_equal() -> None:
    devices = [ap.gpu(0), ap.gpu(1)]
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.Dense(3))
    net.initialize(init=init.Xavier(), ctx=devices)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    with ap.profile() as prof:
        for _ in range(2):
            x, y = RNG.standard_normal((6, 4)).astype(np.float32), RNG.integers(0, 3, 6)
            xs, ys = gluon.utils.split_and_load(x, devices), gluon.utils.split_and_load(y, devices)
            with autograd.record():
                ls = [loss(net(a), b) for a, b in zip(xs, ys)]
            for l in ls:
                l.backward()
            trainer.step(6)
        ap.waitall()
    for p in net.collect_params().values():
        if p.grad_req != "null":
            np.testing.assert_allclose(p.data(devices[0]).numpy(), p.data(devices[1]).numpy(), rtol=1e-6)
    assert prof.summary().traffic_s > 0  # the gradient sums' copies between the GPUs, found as traffic


def test_the_books_loader_moves_to_the_gpu() -> None:
    train_iter, _ = d2l.loaders(ap.datasets.synthetic_fashion_mnist(n_train=16, n_test=8), batch_size=8)
    X, y = next(iter(train_iter))
    assert X.to(ap.gpu(0)).device == ap.gpu(0) and X.as_in_ctx(ap.gpu(0)).shape == (8, 1, 28, 28)
