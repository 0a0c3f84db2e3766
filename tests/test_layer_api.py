"""The layer API: autopar.nn (PyTorch's names), autopar.optim, autopar.gluon (Gluon's), against torch."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import autopar as ap
from autopar import autograd, gluon, init, nn, optim
from autopar.gluon import nn as gnn

sys.path.insert(0, os.path.dirname(__file__))
import _d2l_oracle as oracle  # noqa: E402

RNG = np.random.default_rng(5)


def data(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.fixture
def two_devices() -> Iterator[list[ap.Device]]:
    with oracle.two_cpu_devices() as devices:
        yield devices


def twin_mlp(net: nn.Module) -> torch.nn.Module:
    """torch.nn.Sequential(Linear, ReLU, Linear) with ``net``'s weights."""
    lin1, lin2 = net[0], net[2]
    model = torch.nn.Sequential(torch.nn.Linear(*lin1.weight.shape[::-1]), torch.nn.ReLU(),
                                torch.nn.Linear(*lin2.weight.shape[::-1]))  # fmt: skip
    with torch.no_grad():
        for ours, theirs in zip(net.parameters(), model.parameters()):
            theirs.copy_(torch.from_numpy(ours.numpy()))
    return model


# -- nn.Module ---------------------------------------------------------------------------------------

def test_module_registers_children_parameters_and_buffers() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(3, 4)
            self.scale = nn.Parameter(ap.ones(4))
            self.register_buffer("count", ap.zeros(()))
            self.note = "plain attribute"

        def forward(self, x: ap.NDArray) -> ap.NDArray:
            return self.body(x) * self.scale

    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["scale", "body.weight", "body.bias"]
    assert [n for n, _ in net.named_buffers()] == ["count"] and net.note == "plain attribute"
    assert list(net.state_dict()) == ["scale", "count", "body.weight", "body.bias"]  # torch's order
    seen: list[str] = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Net"]  # children first, as torch
    assert net.eval() is net and not net.body.training and net.train().body.training
    with pytest.raises(AttributeError, match="call super\\(\\).__init__\\(\\)"):
        class Bad(nn.Module):
            def __init__(self) -> None:
                self.layer = nn.Linear(1, 1)
        Bad()


def test_layers_compute_what_torch_computes() -> None:
    x = data(2, 3, 8, 8)
    conv = nn.Conv2d(3, 4, kernel_size=3, stride=2, padding=1)
    want = TF.conv2d(torch.from_numpy(x), torch.from_numpy(conv.weight.numpy()), torch.from_numpy(conv.bias.numpy()),
                     stride=2, padding=1)  # fmt: skip
    np.testing.assert_allclose(conv(ap.asarray(x)).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    bn = nn.BatchNorm2d(3)
    tbn = torch.nn.BatchNorm2d(3)
    np.testing.assert_allclose(bn(ap.asarray(x)).numpy(), tbn(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), tbn.running_var.numpy(), rtol=1e-5)
    bn.eval(), tbn.eval()
    np.testing.assert_allclose(bn(ap.asarray(x)).numpy(), tbn(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    pool = nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten())
    want = TF.adaptive_avg_pool2d(TF.avg_pool2d(TF.max_pool2d(torch.from_numpy(x), 2), 2), 1).flatten(1)
    np.testing.assert_allclose(pool(ap.asarray(x)).numpy(), want.numpy(), rtol=1e-5)


def test_default_and_explicit_initialisation_follow_torch() -> None:
    ap.random.seed(1)
    lin = nn.Linear(400, 300)
    w = lin.weight.numpy()
    bound = 1 / np.sqrt(400)  # kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    assert w.min() >= -bound and w.max() <= bound and w.std() == pytest.approx(bound / np.sqrt(3), rel=0.02)
    nn.init.normal_(lin.weight, std=0.01)
    assert lin.weight.numpy().std() == pytest.approx(0.01, rel=0.02)
    nn.init.xavier_uniform_(lin.weight)
    limit = np.sqrt(6 / (400 + 300))
    assert np.abs(lin.weight.numpy()).max() <= limit and lin.weight.numpy().std() == pytest.approx(limit / np.sqrt(3), rel=0.02)
    nn.init.zeros_(lin.bias)
    assert not lin.bias.numpy().any() and lin.weight.requires_grad
    with pytest.raises(ValueError, match="lazy layer makes its parameters on the first forward"):
        nn.init.normal_(nn.LazyLinear(3).weight)


def test_lazy_layers_take_their_input_size_and_become_the_plain_layer() -> None:
    net = nn.Sequential(nn.LazyConv2d(5, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(2))
    out = net(ap.asarray(data(3, 2, 6, 6)))
    assert out.shape == (3, 2)
    assert [type(m) for m in net] == [nn.Conv2d, nn.BatchNorm2d, nn.Flatten, nn.Linear]
    assert net[0].weight.shape == (5, 2, 3, 3) and net[3].weight.shape == (2, 5 * 4 * 4)


def test_to_moves_parameters_and_buffers(two_devices: list[ap.Device]) -> None:
    net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    before = net[0].weight.numpy()
    net.to(two_devices[1])
    assert {p.device for p in net.parameters()} | {b.device for b in net.buffers()} == {two_devices[1]}
    assert all(p.requires_grad and p.is_leaf for p in net.parameters())
    np.testing.assert_array_equal(net[0].weight.numpy(), before)


def test_load_state_dict_round_trips() -> None:
    a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    b.load_state_dict({k: v.numpy() for k, v in a.state_dict().items()})
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    with pytest.raises(KeyError, match="missing keys \\['bias'\\]"):
        b.load_state_dict({"weight": a.weight})


# -- optim and DataParallel --------------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda p: (optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3),
                                             lambda q: torch.optim.SGD(q, lr=0.1, momentum=0.9, weight_decay=1e-3)),
                                  lambda p: (optim.Adam(p, lr=0.01), lambda q: torch.optim.Adam(q, lr=0.01))])
def test_optimizers_follow_torch_over_steps(make) -> None:  # type: ignore[no-untyped-def]
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    model = twin_mlp(net)
    ours, theirs_of = make(net.parameters())
    theirs = theirs_of(model.parameters())
    x, y = data(6, 4), RNG.integers(0, 3, 6)
    for _ in range(3):
        ours.zero_grad()
        nn.CrossEntropyLoss()(net(ap.asarray(x)), ap.asarray(y)).backward()
        ours.step()
        theirs.zero_grad()
        TF.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        theirs.step()
    for p, q in zip(net.parameters(), model.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_optimizer_rejects_arrays_without_gradients() -> None:
    with pytest.raises(ValueError, match="parameter 0 is NDArray that does not require grad"):
        optim.SGD([ap.ones(3)], lr=0.1)
    with pytest.raises(ValueError, match="lr=-1"):
        optim.SGD(nn.Linear(2, 2).parameters(), lr=-1)


def test_data_parallel_over_steps_equals_torch_on_the_whole_batch(two_devices: list[ap.Device]) -> None:
    """No batch statistics: the split batch gives the whole batch's gradients; the replicas follow each update."""
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    model = twin_mlp(net)
    dp = nn.DataParallel(net, device_ids=two_devices)
    trainer, theirs = optim.SGD(dp.parameters(), lr=0.5), torch.optim.SGD(model.parameters(), lr=0.5)
    for step in range(3):
        x, y = data(6, 4), RNG.integers(0, 3, 6)
        trainer.zero_grad()
        out = dp(ap.asarray(x))
        assert out.device == two_devices[0] and out.shape == (6, 3)
        nn.CrossEntropyLoss()(out, ap.asarray(y)).backward()
        trainer.step()
        theirs.zero_grad()
        TF.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        theirs.step()
    for p, q in zip(net.parameters(), model.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_data_parallel_runs_each_shard_on_its_device(two_devices: list[ap.Device]) -> None:
    dp = nn.DataParallel(nn.Linear(4, 2), device_ids=two_devices)
    with ap.profile() as prof:
        dp(ap.asarray(data(4, 4))).sum().backward()
    linear = {r.device for r in prof.records if r.name == "linear"}
    assert linear == {"cpu:0", "cpu:1"}
    with pytest.raises(ValueError, match="name a device twice"):
        nn.DataParallel(nn.Linear(1, 1), device_ids=[ap.cpu(0), ap.cpu(0)])


def test_scatter_splits_as_torch_chunk(two_devices: list[ap.Device]) -> None:
    parts = nn.parallel.scatter(ap.arange(5), two_devices)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4]] and [p.device for p in parts] == two_devices
    assert nn.parallel.gather(parts, two_devices[0]).tolist() == [0, 1, 2, 3, 4]


# -- Gluon ---------------------------------------------------------------------------------------------

def test_gluon_parameters_are_made_on_every_device_from_one_draw(two_devices: list[ap.Device]) -> None:
    net = gnn.Sequential()
    net.add(gnn.Dense(4, activation="relu"), gnn.Dense(2))
    net.initialize(init=init.Normal(sigma=0.5), ctx=two_devices)
    weight = net[0].params.get("weight")
    with pytest.raises(gluon.DeferredInitializationError, match="deferred until the first forward"):
        weight.data(two_devices[0])
    x = ap.asarray(data(4, 3))
    shards = gluon.utils.split_and_load(x, two_devices)
    outs = [net(s) for s in shards]
    assert [o.device for o in outs] == two_devices
    np.testing.assert_array_equal(weight.data(two_devices[0]).numpy(), weight.data(two_devices[1]).numpy())
    assert weight.shape == (4, 3) and weight.data(two_devices[0]).numpy().std() == pytest.approx(0.5, rel=0.6)
    assert not net[0].params.get("bias").data(two_devices[1]).numpy().any()  # biases start at zero
    assert list(net.collect_params()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    ap.waitall()
    ap.set_cpu_devices(3)
    with pytest.raises(RuntimeError, match="not initialized on cpu:2; it was only initialized on \\[cpu:0, cpu:1\\]"):
        weight.data(ap.cpu(2))


def test_gluon_trainer_equals_torch_on_the_whole_batch(two_devices: list[ap.Device]) -> None:
    """Per-sample losses summed by backward, gradients summed across devices, SGD by lr / batch_size."""
    net = gnn.Sequential()
    net.add(gnn.Dense(8, activation="relu", in_units=4), gnn.Dense(3, in_units=8))
    net.initialize(init=init.Xavier(), ctx=two_devices)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for p, q in zip(net.collect_params().values(), model.parameters()):
            q.copy_(torch.from_numpy(p.data(two_devices[0]).numpy()))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    theirs = torch.optim.SGD(model.parameters(), lr=0.5)
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    for _ in range(3):
        x, y = data(6, 4), RNG.integers(0, 3, 6)
        xs, ys = gluon.utils.split_and_load(x, two_devices), gluon.utils.split_and_load(y, two_devices)
        with autograd.record():
            ls = [loss(net(a), b) for a, b in zip(xs, ys)]
        for l in ls:
            l.backward()
        trainer.step(6)
        theirs.zero_grad()
        TF.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        theirs.step()
    for p, q in zip(net.collect_params().values(), model.parameters()):
        for d in two_devices:
            np.testing.assert_allclose(p.data(d).numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_gluon_batch_norm_follows_train_mode() -> None:
    bn = gnn.BatchNorm()
    bn.initialize()
    x = ap.asarray(data(6, 3, 2, 2) * 3 + 1)
    with autograd.predict_mode():
        np.testing.assert_allclose(bn(x).numpy(), x.numpy() / np.sqrt(1 + 1e-5), rtol=1e-5)  # running: 0 and 1
    with autograd.record():
        y = bn(x)
    assert abs(float(y.mean())) < 1e-5  # batch statistics inside record()
    mean = bn.running_mean.data().numpy()
    np.testing.assert_allclose(mean, 0.1 * x.numpy().mean(axis=(0, 2, 3)), rtol=1e-4)  # momentum 0.9


def test_gluon_losses_equal_torch() -> None:
    pred, label = data(5, 4), RNG.integers(0, 4, 5)
    ours = gluon.loss.SoftmaxCrossEntropyLoss()(ap.asarray(pred), ap.asarray(label.astype(np.float32)))
    want = TF.cross_entropy(torch.from_numpy(pred), torch.from_numpy(label), reduction="none")
    np.testing.assert_allclose(ours.numpy(), want.numpy(), rtol=1e-5)
    np.testing.assert_allclose(gluon.loss.L2Loss()(ap.asarray(pred), ap.asarray(pred * 0)).numpy(),
                               (pred**2 / 2).mean(axis=1), rtol=1e-5)  # fmt: skip


def test_gluon_rejects_what_it_does_not_support() -> None:
    with pytest.raises(ValueError, match="optimizer='rmsprop'; expected one of sgd, adam"):
        gluon.Trainer({}, "rmsprop")
    with pytest.raises(ValueError, match="unsupported optimizer_params \\['clip_gradient'\\]"):
        gluon.Trainer({}, "sgd", {"clip_gradient": 1.0})
    with pytest.raises(ValueError, match="is not an initializer"):
        init.create("glorot")


def test_an_optimizer_made_before_the_model_moves_follows_it(two_devices: list[ap.Device]) -> None:
    """d2l's train_ch13 makes the optimizer, then DataParallel(...).to(devices[0]): the moved parameters train."""
    net = nn.Linear(3, 2)
    trainer = optim.SGD(net.parameters(), lr=1.0)
    net.to(two_devices[1])
    before = net.weight.numpy()
    trainer.zero_grad()
    net(ap.ones((4, 3), device=two_devices[1])).sum().backward()
    trainer.step()
    np.testing.assert_allclose(net.weight.numpy(), before - 4.0, rtol=1e-6)  # d(sum)/dW = 4 for every weight


# -- as a PyTorch or Gluon user would expect (found in review) -----------------------------------------

def test_state_dict_keys_and_loading_match_torch_with_shared_layers_and_batch_norm() -> None:
    """torch lists a layer used twice under both names, keeps num_batches_tracked, drops non-persistent buffers:
    a state_dict goes from torch to autopar and back, strict."""
    lin, tlin = nn.Linear(3, 3), torch.nn.Linear(3, 3)
    ours = nn.Sequential(lin, nn.ReLU(), lin, nn.BatchNorm1d(3))
    theirs = torch.nn.Sequential(tlin, torch.nn.ReLU(), tlin, torch.nn.BatchNorm1d(3))
    ours[1].register_buffer("scratch", ap.zeros(2), persistent=False)
    theirs[1].register_buffer("scratch", torch.zeros(2), persistent=False)
    theirs(torch.from_numpy(data(4, 3)))  # running statistics that differ from the defaults
    want = [k for k in theirs.state_dict() if not k.endswith("num_batches_tracked")]
    assert list(ours.state_dict()) == want
    ours.load_state_dict(theirs.state_dict())  # strict; torch tensors as values
    for k, v in ours.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), theirs.state_dict()[k].numpy(), err_msg=k)
    torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU(), torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3)) \
        .load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in ours.state_dict().items()})  # strict too
    with pytest.raises(ValueError, match=r"load_state_dict: 0.weight has shape \(3, 2\), the module's \(3, 3\)"):
        ours.load_state_dict({**ours.state_dict(), "0.weight": np.zeros((3, 2), np.float32)})
    with pytest.raises(KeyError, match=r"unexpected keys \['3.num_batches_tracked'\]"):
        nn.Sequential(*[nn.Identity()] * 3, nn.Linear(1, 1)).load_state_dict(
            {"3.weight": np.ones((1, 1)), "3.bias": np.ones(1), "3.num_batches_tracked": 0})  # not a batch norm


def test_frozen_parameters_stay_parameters_frozen_and_untrained(two_devices: list[ap.Device]) -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fixed = nn.Parameter(ap.ones(2), requires_grad=False)
            self.body = nn.Linear(2, 2)

        def forward(self, x: ap.NDArray) -> ap.NDArray:
            return self.body(x * self.fixed)

    net = Net()
    net.body.bias.requires_grad_(False)
    assert [n for n, _ in net.named_parameters()] == ["fixed", "body.weight", "body.bias"]  # as torch
    net.to(two_devices[1])
    assert [p.requires_grad for p in net.parameters()] == [False, True, False]  # to() does not unfreeze
    trainer = optim.SGD(net.parameters(), lr=1.0)  # torch takes frozen parameters: they get no update
    bias = net.body.bias.numpy()
    net(ap.ones((1, 2), device=two_devices[1])).sum().backward()
    trainer.step()
    np.testing.assert_array_equal(net.body.bias.numpy(), bias)
    assert net.fixed.device == two_devices[1] and net.body.weight.grad is not None


def test_module_rejects_what_torch_rejects() -> None:
    net = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="cannot assign int as child module '0'"):
        setattr(net, "0", 5)
    assert type(net[0]) is nn.Linear
    with pytest.raises(ValueError, match=r"BatchNorm2d: expected 4D input \(got 2D input of shape \(4, 3\)\)"):
        nn.BatchNorm2d(3)(ap.ones((4, 3)))
    with pytest.raises(ValueError, match=r"BatchNorm1d: expected 2D or 3D input \(got 4D"):
        nn.BatchNorm1d(3)(ap.ones((4, 3, 2, 2)))
    lin = nn.Linear(2, 1)
    with pytest.raises(ValueError, match="some parameters appear more than once"):
        optim.SGD([{"params": lin.parameters()}, {"params": [lin.weight], "lr": 1.0}], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear more than once"):
        optim.Adam([lin.weight, lin.weight])


def test_zero_grad_forgets_or_zeroes_as_asked() -> None:
    net = nn.Linear(2, 2)
    trainer = optim.SGD(net.parameters(), lr=0.1)
    for zero_grad in (net.zero_grad, trainer.zero_grad):
        net(ap.ones((1, 2))).sum().backward()
        zero_grad(set_to_none=False)
        assert net.weight.grad is not None and not net.weight.grad.numpy().any()
        zero_grad()
        assert net.weight.grad is None


def test_adam_counts_each_parameters_steps_and_rereads_its_group() -> None:
    """A parameter first trained at step 3 starts its bias correction at 1; lr changed between steps applies."""
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(2, 1), nn.Linear(2, 1)

        def forward(self, x: ap.NDArray, both: bool) -> ap.NDArray:
            return self.a(x) + self.b(x) if both else self.a(x)

    net = Two()
    model = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 1), "b": torch.nn.Linear(2, 1)})
    with torch.no_grad():
        for p, q in zip(net.parameters(), model.parameters()):
            q.copy_(torch.from_numpy(p.numpy()))
    ours, theirs = optim.Adam(net.parameters(), lr=0.1), torch.optim.Adam(model.parameters(), lr=0.1)
    x = data(4, 2)
    for step in range(4):
        if step == 3:
            ours.param_groups[0]["lr"] = theirs.param_groups[0]["lr"] = 0.5
        ours.zero_grad()
        net(ap.asarray(x), step >= 2).square().sum().backward()
        ours.step()
        theirs.zero_grad()
        t = torch.from_numpy(x)
        (model["a"](t) + model["b"](t) if step >= 2 else model["a"](t)).square().sum().backward()
        theirs.step()
    for p, q in zip(net.parameters(), model.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_initial_biases_dropout_and_losses_follow_torch() -> None:
    ap.random.seed(2)
    for layer, fan_in in ((nn.Linear(4, 2000), 4), (nn.Conv2d(1, 2000, kernel_size=2), 4)):
        bias, bound = np.abs(layer.bias.numpy()), 1 / np.sqrt(fan_in)
        assert bias.max() <= bound and bias.max() > 0.95 * bound, type(layer).__name__  # U(-1/sqrt(fan_in), ...)
    drop, x = nn.Dropout(0.25), ap.ones((100, 100))
    kept = drop(x).numpy()
    assert set(np.unique(kept)) == {0.0, np.float32(1 / 0.75)} and 0.2 < (kept == 0).mean() < 0.3
    np.testing.assert_array_equal(drop.eval()(x).numpy(), x.numpy())  # eval(): the input as it is
    a, b = data(5, 3), data(5, 3)
    for ours, theirs in ((nn.MSELoss, torch.nn.MSELoss), (nn.L1Loss, torch.nn.L1Loss)):
        for reduction in ("mean", "sum", "none"):
            got = ours(reduction=reduction)(ap.asarray(a), ap.asarray(b)).numpy()
            want = theirs(reduction=reduction)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{ours.__name__} {reduction}")
        with pytest.warns(UserWarning, match=r"target's shape \(5,\) differs from the input's \(5, 1\)"):
            ours()(ap.asarray(a[:, :1]), ap.asarray(b[:, 0]))  # torch warns too: (5, 1) - (5,) is (5, 5)


def test_gluon_initializers_draw_weights_and_fill_the_rest() -> None:
    ap.random.seed(3)
    scale = np.sqrt(3.0 / ((300 + 200) / 2))  # Xavier's default: uniform, magnitude 3, fan averaged
    w = init.Xavier()("weight", (300, 200)).numpy()
    assert np.abs(w).max() <= scale and w.std() == pytest.approx(scale / np.sqrt(3), rel=0.02)
    normal = init.Normal(sigma=2.0)
    assert normal("weight", (400, 50)).numpy().std() == pytest.approx(2.0, rel=0.03)
    for name, value in (("0.bias", 0.0), ("beta", 0.0), ("running_mean", 0.0), ("gamma", 1.0), ("running_var", 1.0)):
        assert (normal(name, (3,)).numpy() == value).all(), name


def test_gluon_params_shares_a_layers_parameters_as_the_mxnet_edition_does() -> None:
    """d2l (MXNet) Parameter Management: nn.Dense(8, activation='relu', params=shared.params)."""
    shared = gnn.Dense(8, activation="relu")
    net = gnn.Sequential()
    net.add(gnn.Dense(8, activation="relu"), shared, gnn.Dense(8, activation="relu", params=shared.params),
            gnn.Dense(10))  # fmt: skip
    net.initialize()
    net(ap.random.uniform(size=(2, 20)))
    assert net[1].weight is net[2].weight and "2.weight" not in net.collect_params()
    net[1].weight.data()[0, 0] = 100
    assert float(net[2].weight.data()[0, 0]) == 100.0
    other = gnn.Dense(8, in_units=8)
    other.share_parameters(shared.collect_params())  # Gluon 2's spelling
    assert other.weight is shared.weight and other.bias is shared.bias
    with pytest.raises(TypeError, match="params= must be another block's parameters"):
        gnn.Dense(2, params=shared)


def test_gluon_layer_given_an_input_of_another_size_says_so_at_the_call() -> None:
    dense = gnn.Dense(3, in_units=4)
    dense.initialize()
    with pytest.raises(ValueError, match=r"Parameter 'weight' has shape \(3, 4\), but this input needs \(3, 5\)"):
        dense(ap.ones((2, 5)))
    assert dense.weight.shape == (3, 4) and dense(ap.ones((2, 4))).shape == (2, 3)
    bn = gnn.BatchNorm()
    bn.initialize()
    bn(ap.ones((2, 3, 2, 2)))
    with pytest.raises(ValueError, match=r"Parameter 'gamma' has shape \(3,\), but this input needs \(4,\)"):
        bn(ap.ones((2, 4, 2, 2)))


def test_an_optimizer_made_before_the_first_batch_trains_the_lazy_layers(two_devices: list[ap.Device]) -> None:
    """d2l's current edition: lazy Residual blocks, DataParallel, then optim.SGD(net.parameters()) -- before any
    forward. Every parameter, the lazy layers' too, takes the step (on device_ids[0], here cpu:1)."""
    from autopar.d2l import torch as d2l_pt

    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), d2l_pt.Residual(4),
                        nn.Flatten(), nn.LazyLinear(10))  # fmt: skip
    net.apply(lambda m: nn.init.normal_(m.weight, std=0.01) if type(m) in [nn.Linear, nn.Conv2d] else None)
    dp = nn.DataParallel(net, device_ids=two_devices[::-1])
    trainer = optim.SGD(dp.parameters(), lr=0.1)
    trainer.zero_grad()
    out = dp(ap.asarray(data(8, 1, 6, 6)))
    before = {n: p.numpy() for n, p in net.named_parameters()}
    assert len(before) == 14 and {p.device for p in net.parameters()} == {two_devices[1]}
    nn.CrossEntropyLoss()(out, ap.asarray(np.arange(8) % 10, device=two_devices[1])).backward()
    grads = {n: p.grad.numpy() for n, p in net.named_parameters()}
    trainer.step()
    for name, p in net.named_parameters():
        np.testing.assert_allclose(p.numpy(), before[name] - 0.1 * grads[name], rtol=1e-6, atol=1e-8, err_msg=name)
    assert np.abs(grads["3.bn1.weight"]).max() > 0  # a lazy layer's gradient, so the check above has teeth
