"""autopar.nn.functional and the npx aliases: values against torch.nn.functional, running
statistics, dropout's generator, errors at the call (gradients: test_gradients.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import autopar as ap
import autopar.nn.functional as F
from autopar import autograd, npx

pytestmark = pytest.mark.usefixtures("eng")
RNG = np.random.default_rng(2)


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def close(ours: ap.NDArray, theirs: torch.Tensor, rtol: float = 1e-5) -> None:
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=1e-5)


def test_lenet_forward_equals_the_reference_model() -> None:
    """The reference model's own forward, run with autopar's nn.functional as its namespace."""
    from autopar.benchmarks.reference_models import build, lenet_forward

    model = build("lenet", seed=3)
    x = data(8, 1, 28, 28)
    ours = lenet_forward(ap.asarray(x), [ap.asarray(p.detach().numpy()) for p in model.parameters()], nnf=F)
    close(ours, model(torch.from_numpy(x)).detach())


def test_functional_values_equal_torch() -> None:
    x, w = data(2, 3, 8, 8), data(4, 3, 3, 3)
    close(F.conv2d(ap.asarray(x), ap.asarray(w), padding="same"), TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding="same"))
    close(F.max_pool2d(ap.asarray(x), 2, ceil_mode=True), TF.max_pool2d(torch.from_numpy(x), 2, ceil_mode=True))
    close(F.adaptive_avg_pool2d(ap.asarray(x), 1), TF.adaptive_avg_pool2d(torch.from_numpy(x), 1))
    logits, labels = data(6, 5), np.array([0, 4, 1, 1, 3, 2])
    close(F.cross_entropy(ap.asarray(logits), ap.asarray(labels), reduction="none"),
          TF.cross_entropy(torch.from_numpy(logits), torch.from_numpy(labels), reduction="none"))  # fmt: skip
    probs = np.abs(data(6, 5))
    probs /= probs.sum(1, keepdims=True)
    close(F.cross_entropy(ap.asarray(logits), ap.asarray(probs)),
          TF.cross_entropy(torch.from_numpy(logits), torch.from_numpy(probs)))  # fmt: skip
    close(F.log_softmax(ap.asarray(logits), dim=1), torch.log_softmax(torch.from_numpy(logits), 1))
    assert F.flatten(ap.asarray(x), 1).shape == (2, 192) and F.flatten(ap.asarray(x)).shape == (384,)


def test_batch_norm_updates_running_statistics_as_torch_does() -> None:
    x = data(5, 3, 4, 4)
    mean, var = ap.zeros(3), ap.ones(3)
    tmean, tvar = torch.zeros(3), torch.ones(3)
    gamma, beta = data(3), data(3)
    for _ in range(2):
        y = F.batch_norm(ap.asarray(x), mean, var, ap.asarray(gamma), ap.asarray(beta), training=True, momentum=0.2)
        ty = TF.batch_norm(torch.from_numpy(x), tmean, tvar, torch.from_numpy(gamma), torch.from_numpy(beta), True, 0.2)
        close(y, ty)
    close(mean, tmean)
    close(var, tvar)
    close(F.batch_norm(ap.asarray(x), mean, var), TF.batch_norm(torch.from_numpy(x), tmean, tvar))  # inference
    close(mean, tmean)  # unchanged by inference
    # MXNet's spelling: momentum is the share kept, and train mode comes from record()
    m, v = ap.zeros(3), ap.ones(3)
    with autograd.record():
        npx.batch_norm(ap.asarray(x), ap.ones(3), ap.zeros(3), m, v, momentum=0.8, eps=1e-5)
    tm = torch.zeros(3)
    TF.batch_norm(torch.from_numpy(x), tm, torch.ones(3), None, None, True, 0.2)
    close(m, tm)
    before = m.numpy()
    npx.batch_norm(ap.asarray(x), ap.ones(3), ap.zeros(3), m, v)  # predict mode: running statistics used, kept
    np.testing.assert_array_equal(m.numpy(), before)


def test_dropout_is_reproducible_and_ordered_with_other_draws() -> None:
    x = ap.ones(1000)

    def program() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ap.random.seed(7)
        a = F.dropout(x, 0.25)
        u = ap.random.uniform(size=3)
        b = F.dropout(x, 0.25)
        return a.numpy(), u.numpy(), b.numpy()

    first, second = program(), program()
    for one, two in zip(first, second):
        np.testing.assert_array_equal(one, two)
    a = first[0]
    assert set(np.unique(a)) == {0.0, np.float32(1 / 0.75)} and 150 < (a == 0).sum() < 350
    assert not np.array_equal(first[0], first[2])  # the generator moved on
    assert F.dropout(x, 0.5, training=False) is x
    with autograd.record():
        assert (npx.dropout(x) == 0).any().item()
    assert (npx.dropout(x) == 1).all().item()  # predict mode: nothing dropped


def test_npx_spellings() -> None:
    x, w, b = data(2, 3, 6, 6), data(4, 3, 3, 3), data(4)
    close(npx.convolution(ap.asarray(x), ap.asarray(w), ap.asarray(b), kernel=(3, 3), pad=(1, 1), num_filter=4),
          TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), padding=1))  # fmt: skip
    close(npx.pooling(ap.asarray(x), kernel=(2, 2), stride=(2, 2), pool_type="avg"), TF.avg_pool2d(torch.from_numpy(x), 2))
    close(npx.pooling(ap.asarray(x), kernel=(3, 3), pool_type="max"), TF.max_pool2d(torch.from_numpy(x), 3, stride=1))
    close(npx.pooling(ap.asarray(x), global_pool=True, pool_type="avg"), TF.adaptive_avg_pool2d(torch.from_numpy(x), 1))
    lw = data(5, 108)
    close(npx.fully_connected(ap.asarray(x), ap.asarray(lw), num_hidden=5, no_bias=True),
          TF.linear(torch.from_numpy(x).reshape(2, -1), torch.from_numpy(lw)))  # fmt: skip
    close(npx.activation(ap.asarray(x), "softrelu"), TF.softplus(torch.from_numpy(x)))
    assert npx.batch_flatten(ap.asarray(x)).shape == (2, 108)


def test_bad_arguments_raise_at_the_call_naming_the_op() -> None:
    x = ap.ones((2, 3, 8, 8))
    with pytest.raises(ValueError, match="conv2d: invalid arguments"):
        F.conv2d(x, ap.ones((4, 2, 3, 3)))  # 3 channels in, weight expects 2
    with pytest.raises(ValueError, match="max_pool2d: kernel_size=0"):
        F.max_pool2d(x, 0)
    with pytest.raises(TypeError, match="cross_entropy: input has dtype int64"):
        F.cross_entropy(ap.ones((2, 3), dtype="int64"), ap.asarray([0, 1]))
    with pytest.raises(ValueError, match="reduction='avg'"):
        F.cross_entropy(ap.ones((2, 3)), ap.asarray([0, 1]), reduction="avg")
    with pytest.raises(ValueError, match="dropout: p=1.5"):
        F.dropout(x, 1.5)
    with pytest.raises(ValueError, match="batch_norm: training=False needs running_mean"):
        F.batch_norm(x, None, None)
    with pytest.raises(ValueError, match="convolution: num_filter=5"):
        npx.convolution(x, ap.ones((4, 3, 3, 3)), no_bias=True, num_filter=5)
