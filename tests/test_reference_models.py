"""The plain-PyTorch reference models: d2l's architectures, seeded initialisation, a portable forward."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from autopar.benchmarks import reference_models as models


def test_parameter_counts_are_d2ls() -> None:
    # catches: any change of a layer's size, a missing bias, a projection added to or lost from a block
    assert models.parameter_count(models.build("lenet")) == 61_706
    assert models.parameter_count(models.build("resnet18")) == 11_175_818


def test_lenet_forward_uses_only_the_namespace_it_is_given() -> None:
    """The same forward must run on autopar arrays: every op it calls goes through ``nnf``.

    catches: a torch function called directly (it would bypass autopar), a missing layer."""
    calls: list[str] = []

    def traced(name: str):  # type: ignore[no-untyped-def]
        fn = getattr(torch.nn.functional, name) if name != "sigmoid" else torch.sigmoid

        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls.append(name)
            return fn(*args, **kwargs)
        return call

    nnf = SimpleNamespace(**{name: traced(name) for name in ("conv2d", "avg_pool2d", "linear", "relu", "sigmoid")})
    x = torch.rand(3, 1, 28, 28)
    for activation in models.ACTIVATIONS:
        net = models.build("lenet", seed=1, activation=activation)
        calls.clear()
        out = models.lenet_forward(x, list(net.parameters()), activation, nnf)
        assert calls.count("conv2d") == 2 and calls.count("avg_pool2d") == 2 and calls.count("linear") == 3
        assert calls.count(activation) == 4 and out.shape == (3, 10)
        torch.testing.assert_close(out, net(x))


def test_build_is_deterministic_in_the_seed_with_d2ls_initialisation() -> None:
    # catches: the global RNG used (seed ignored); biases left random; the wrong init per model
    a, b, c = (models.build("lenet", seed) for seed in (7, 7, 8))
    for pa, pb, pc in zip(a.parameters(), b.parameters(), c.parameters()):
        assert torch.equal(pa, pb)
    assert not torch.equal(a.conv1.weight, c.conv1.weight)
    for layer in (a.conv1, a.fc1, a.fc3):
        fan_out, fan_in = layer.weight.shape[0], layer.weight[0].numel()
        receptive = layer.weight[0, 0].numel()
        bound = math.sqrt(6 / (fan_in + fan_out * receptive))  # Xavier uniform
        assert layer.weight.abs().max() <= bound and layer.weight.abs().max() > 0.9 * bound
        assert torch.count_nonzero(layer.bias) == 0
    resnet = models.build("resnet18", seed=7)
    stem = resnet[0].weight
    assert 0.008 < float(stem.detach().std()) < 0.012 and torch.count_nonzero(resnet[0].bias) == 0


def test_resnet18_shapes_and_batch_norm_state() -> None:
    net = models.build("resnet18")
    out = net(torch.rand(2, 1, 28, 28))
    assert out.shape == (2, 10)
    bns = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert len(bns) == 17 and all(int(bn.num_batches_tracked) == 1 for bn in bns)  # training mode: stats updated


def test_unknown_model_and_activation_are_refused() -> None:
    with pytest.raises(ValueError, match=r"reference model 'vgg': expected one of lenet, resnet18"):
        models.build("vgg")
    with pytest.raises(ValueError, match=r"LeNet\(activation='tanh'\): expected one of relu, sigmoid"):
        models.LeNet("tanh")
