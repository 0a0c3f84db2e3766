"""Optimizer state: Adam's step count as an array of its state (one op per parameter, a failed step does
not count), ``state_dict``/``load_state_dict`` in torch.optim's layout, and gluon's Trainer with a
parameter a backward did not reach (MXNet's stale gradient). Oracle: torch.optim."""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from _helpers import within

import autopar as ap
from autopar import autograd, gluon, init, optim
from autopar.gluon import nn as gnn

sys.path.insert(0, os.path.dirname(__file__))
import _d2l_oracle as oracle  # noqa: E402

RNG = np.random.default_rng(21)
W0 = [RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal(3).astype(np.float32)]
XS = [RNG.standard_normal((5, 4)).astype(np.float32) for _ in range(6)]
BAD = np.array([0, 1, 2, 7, 0])  # label 7: out of range, the step fails


def _loss(lib: Any, x: Any, w: list[Any], use_bias: bool) -> Any:
    h = lib.tanh(x @ w[0])
    return (h * h).sum() + ((w[1] * w[1]).sum() if use_bias else 0.0)


def _torch(kind: str, params: list[torch.Tensor]) -> list[torch.optim.Optimizer]:
    """Two parameter groups (different learning rates), as torch.optim makes them."""
    groups = [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.02}]
    if kind == "adam":
        return [torch.optim.Adam(groups, lr=0.05, betas=(0.8, 0.99), weight_decay=0.01)]
    return [torch.optim.SGD(groups, lr=0.1, momentum=0.9, weight_decay=0.01)]


def _ours(kind: str, params: list[ap.NDArray]) -> optim.Optimizer:
    groups = [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.02}]
    if kind == "adam":
        return optim.Adam(groups, lr=0.05, betas=(0.8, 0.99), weight_decay=0.01)
    return optim.SGD(groups, lr=0.1, momentum=0.9, weight_decay=0.01)


def _step_torch(opt: torch.optim.Optimizer, w: list[torch.Tensor], x: np.ndarray, use_bias: bool) -> None:
    opt.zero_grad()
    _loss(torch, torch.from_numpy(x), w, use_bias).backward()
    opt.step()


def _step_ours(opt: optim.Optimizer, w: list[ap.NDArray], x: np.ndarray, use_bias: bool) -> None:
    opt.zero_grad()
    _loss(ap, ap.asarray(x), w, use_bias).backward()
    opt.step()


def test_adam_updates_each_parameter_in_one_op_and_keeps_its_step_count_as_state(eng, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """One engine op per parameter and step (count, moments, parameter): it was three table entries
    (plus the gradient's scaling with weight decay), the count a Python number. Equal to torch.optim.Adam."""
    from autopar.parallel import _adam

    pushed: list[str] = []
    real_push = _adam.push

    def push(fn, reads, writes, device, name, *args, **kwargs):  # type: ignore[no-untyped-def]
        pushed.append(f"{name} writing {len(writes)}")
        return real_push(fn, reads, writes, device, name, *args, **kwargs)

    def bind_into(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a table entry pushed: more than one op per parameter")

    monkeypatch.setattr(_adam, "push", push)
    monkeypatch.setattr(_adam, "bind_into", bind_into)
    w = [ap.asarray(v, requires_grad=True) for v in W0]
    tw = [torch.tensor(v, requires_grad=True) for v in W0]
    (opt,), ours = _torch("adam", tw), _ours("adam", w)
    for i, x in enumerate(XS[:3]):
        pushed.clear()
        _step_ours(ours, w, x, use_bias=i != 0)
        _step_torch(opt, tw, x, use_bias=i != 0)
        assert pushed == ["adam update writing 4"] * (2 if i else 1), pushed  # parameter, moments, count
    for p, t in zip(w, tw):
        np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)
        count = ours.state[id(p)][2]
        assert (count.shape, count.dtype) == ((), ap.float64)
        assert float(count) == float(opt.state[t]["step"])  # 3 and 2: the bias was first trained at step 2


def _as_torch(value: Any) -> Any:
    return torch.from_numpy(np.array(value.numpy())) if isinstance(value, ap.NDArray) else value


@pytest.mark.parametrize("kind", ["momentum", "adam"])
def test_state_dict_has_torch_optims_layout_and_values_and_round_trips_both_ways(kind: str) -> None:
    """state_dict: state keyed by parameter index (only parameters a step updated), param_groups with
    "params" as indices and the settings -- torch.optim's layout and values. Loading torch's into
    autopar's and autopar's into torch's, then stepping on, all four follow the same path."""
    w = [ap.asarray(v, requires_grad=True) for v in W0]
    tw = [torch.tensor(v, requires_grad=True) for v in W0]
    (opt,), ours = _torch(kind, tw), _ours(kind, w)
    _step_ours(ours, w, XS[0], use_bias=False)  # the bias gets no gradient: no state for it yet
    _step_torch(opt, tw, XS[0], use_bias=False)
    for sd_ours, sd_torch in ((ours.state_dict(), opt.state_dict()), (None, None)):
        if sd_ours is None:
            for x in XS[1:3]:
                _step_ours(ours, w, x, use_bias=True)
                _step_torch(opt, tw, x, use_bias=True)
            sd_ours, sd_torch = ours.state_dict(), opt.state_dict()
        assert sd_ours["state"].keys() == sd_torch["state"].keys()
        for index, entry in sd_torch["state"].items():
            assert list(sd_ours["state"][index]) == list(entry)  # torch's names, in torch's order
            for name, value in entry.items():
                np.testing.assert_allclose(sd_ours["state"][index][name].numpy(), value.numpy(), rtol=1e-6, atol=1e-7)
        for ours_group, torch_group in zip(sd_ours["param_groups"], sd_torch["param_groups"]):
            assert ours_group["params"] == torch_group["params"]
            assert {k: ours_group[k] for k in ours_group.keys() & torch_group.keys()} == \
                {k: torch_group[k] for k in ours_group.keys() & torch_group.keys()}
            assert len(ours_group.keys() & torch_group.keys()) == 6  # every setting of ours, and params
    snapshot = ours.state_dict()
    _step_ours(ours, w, XS[3], use_bias=True)  # a snapshot: later steps leave it as it was
    np.testing.assert_array_equal(snapshot["state"][0][ours._state_names[0]].numpy(),
                                  sd_ours["state"][0][ours._state_names[0]].numpy())  # fmt: skip
    _step_torch(opt, tw, XS[3], use_bias=True)
    # Round trips: torch's state into a fresh autopar optimizer, autopar's into a fresh torch one.
    w2 = [ap.asarray(t.detach().numpy(), requires_grad=True) for t in tw]
    ours2 = _ours(kind, w2)
    ours2.load_state_dict(opt.state_dict())
    tw2 = [torch.tensor(p.numpy(), requires_grad=True) for p in w]
    (opt2,) = _torch(kind, tw2)
    sd = pickle.loads(pickle.dumps(ours.state_dict()))  # saved and loaded, as torch.save would
    opt2.load_state_dict({"state": {i: {k: _as_torch(v).float() for k, v in e.items()} for i, e in sd["state"].items()},
                          "param_groups": sd["param_groups"]})  # fmt: skip
    for x in XS[4:]:
        for o, params in ((ours, w), (ours2, w2)):
            _step_ours(o, params, x, use_bias=True)
        for o, params in ((opt, tw), (opt2, tw2)):
            _step_torch(o, params, x, use_bias=True)
    for params in (w, w2, tw2):
        for p, t in zip(params, tw):
            got = p.numpy() if isinstance(p, ap.NDArray) else p.detach().numpy()
            np.testing.assert_allclose(got, t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_state_dict_rejects_what_does_not_fit_and_changes_nothing() -> None:
    w = [ap.asarray(v, requires_grad=True) for v in W0]
    ours = _ours("momentum", w)
    _step_ours(ours, w, XS[0], use_bias=True)
    good = ours.state_dict()
    before = [s.numpy().copy() for s in ours.state[id(w[0])]]
    cases = [
        ({**good, "param_groups": good["param_groups"][:1]}, "1 parameter group"),
        ({**good, "param_groups": [{**good["param_groups"][0], "nesterov": True}, good["param_groups"][1]]},
         "nesterov=True, which autopar's SGD does not implement"),
        ({**good, "state": {0: {"momentum_buffer": np.zeros((3, 4), np.float32)}}}, r"needs \(4, 3\)"),
        ({**good, "state": {0: {"exp_avg": np.zeros((4, 3), np.float32)}}}, "expected momentum_buffer"),
        ({**good, "param_groups": [{**good["param_groups"][0], "lr": -1.0}, good["param_groups"][1]]}, "lr=-1.0"),
        ({**good, "state": {5: good["state"][0]}}, "index 5"),
    ]
    for bad, message in cases:
        with pytest.raises(ValueError, match=message):
            ours.load_state_dict(bad)
    assert ours.param_groups[0]["lr"] == 0.1 and ours.param_groups[1]["lr"] == 0.02
    for s, v in zip(ours.state[id(w[0])], before):
        np.testing.assert_array_equal(s.numpy(), v)


@pytest.mark.parametrize("kind", ["momentum", "adam"])
def test_a_failed_step_restored_from_a_state_dict_does_not_count(eng, kind: str) -> None:  # type: ignore[no-untyped-def]
    """A step that fails (a bad label) fails the parameters and the state it writes; restoring both --
    copyto from kept values, load_state_dict from a snapshot -- the next good steps follow torch.optim
    with the good steps only. Adam's count was kept in Python, and counted the failed step."""
    w = [ap.asarray(v, requires_grad=True) for v in W0]
    tw = [torch.tensor(v, requires_grad=True) for v in W0]
    (opt,), ours = _torch(kind, tw), _ours(kind, w)
    head = RNG.standard_normal((3, 3)).astype(np.float32)

    def step(x: np.ndarray, labels: np.ndarray) -> None:
        ours.zero_grad()
        logits = ap.tanh(ap.asarray(x) @ w[0]) @ ap.asarray(head) + w[1]
        ap.nn.functional.cross_entropy(logits, ap.asarray(labels)).backward()
        ours.step()

    good = np.array([0, 1, 2, 1, 0])
    step(XS[0], good)
    kept, snapshot = [p.numpy().copy() for p in w], ours.state_dict()
    step(XS[1], BAD)
    with pytest.raises(IndexError):
        within(60, w[0].numpy)
    within(60, ap.waitall)
    with ap.no_grad():
        for p, v in zip(w, kept):
            ap.asarray(v).copyto(p)
    ours.load_state_dict(snapshot)
    for x in XS[2:4]:
        step(x, good)
    for x in (XS[0], *XS[2:4]):
        opt.zero_grad()
        logits = torch.tanh(torch.from_numpy(x) @ tw[0]) @ torch.from_numpy(head) + tw[1]
        torch.nn.functional.cross_entropy(logits, torch.from_numpy(good)).backward()
        opt.step()
    for p, t in zip(w, tw):
        np.testing.assert_allclose(within(60, p.numpy), t.detach().numpy(), rtol=1e-5, atol=1e-6)


# -- gluon's Trainer and a parameter no backward reached ---------------------------------------------


@pytest.fixture
def two_devices() -> Iterator[list[ap.Device]]:
    with oracle.two_cpu_devices() as devices:
        yield devices


@pytest.mark.parametrize("kind", ["sgd", "adam"])
def test_gluon_trainer_raises_for_a_stale_gradient_and_skips_it_when_told(two_devices: list[ap.Device], kind: str) -> None:
    """MXNet: a parameter whose gradient no backward wrote since the last step raises UserWarning naming
    it (nothing is pushed); ignore_stale_grad=True skips it on every device. It was updated with the
    gradient of an earlier step. Oracle: torch.optim, whose zero_grad(set_to_none) skips it."""
    a, b = gnn.Dense(3, in_units=4), gnn.Dense(3, in_units=4)
    for block in (a, b):
        block.initialize(init=init.Xavier(), ctx=two_devices)
    params = [*a.collect_params().values(), *b.collect_params().values()]
    settings = {"learning_rate": 0.1, "momentum": 0.9} if kind == "sgd" else {"learning_rate": 0.05}
    trainer = gluon.Trainer(params, kind, settings)
    ta, tb = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
    with torch.no_grad():
        for block, twin in ((a, ta), (b, tb)):
            twin.weight.copy_(torch.from_numpy(block.weight.data(two_devices[0]).numpy()))
            twin.bias.copy_(torch.from_numpy(block.bias.data(two_devices[0]).numpy()))
    twins = [*ta.parameters(), *tb.parameters()]
    theirs = torch.optim.SGD(twins, lr=0.1 / 4, momentum=0.9) if kind == "sgd" else torch.optim.Adam(twins, lr=0.05)

    def step(use_b: bool, **kwargs: Any) -> None:
        x = RNG.standard_normal((4, 4)).astype(np.float32)
        xs = gluon.utils.split_and_load(x, two_devices)
        with autograd.record():
            losses = [(a(part) ** 2).sum() + ((b(part) ** 2).sum() if use_b else 0.0) for part in xs]
        for loss in losses:
            loss.backward()
        trainer.step(4, **kwargs)
        theirs.zero_grad()
        t = torch.from_numpy(x)
        ((ta(t) ** 2).sum() + ((tb(t) ** 2).sum() if use_b else 0.0)).backward()
        if kind == "adam":  # gluon's Adam takes grad / batch_size: torch's Adam is scale-free but for eps
            for p in twins:
                if p.grad is not None:
                    p.grad /= 4
        theirs.step()

    step(True)
    before = [p.numpy().copy() for p in b.weight.list_data()]
    with pytest.raises(UserWarning, match="Parameter '.*weight' on context cpu:0 has not been updated by backward"):
        step(False)  # b's gradient is the first step's: stale
    ap.waitall()
    for p, v in zip(b.weight.list_data(), before):
        np.testing.assert_array_equal(p.numpy(), v)  # nothing was pushed, for a or b
    with pytest.raises(UserWarning, match="has not been updated by backward"):
        trainer.step(4)  # the same gradients, still stale (no backward since)
    # (torch stepped in neither: step() raises before the torch twin's step)
    step(False, ignore_stale_grad=True)
    step(True)
    for block, twin in ((a, ta), (b, tb)):
        for ours_p, t in ((block.weight, twin.weight), (block.bias, twin.bias)):
            for d in two_devices:
                np.testing.assert_allclose(ours_p.data(d).numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_adams_table_entry_path_for_cluster_nodes_equals_torch(eng) -> None:  # type: ignore[no-untyped-def]
    """A parameter on a cluster node is updated by table entries found by name (count, moments,
    parameter with the bias correction from the count array): the same values as torch.optim.Adam."""
    from autopar import parallel

    ours = parallel.adam(0.05, betas=(0.8, 0.99), weight_decay=0.01)
    p = ap.asarray(W0[0])
    state = ours.state(p)
    t = torch.tensor(W0[0], requires_grad=True)
    opt = torch.optim.Adam([t], lr=0.05, betas=(0.8, 0.99), weight_decay=0.01)
    for x in XS[:3]:
        g = RNG.standard_normal(W0[0].shape).astype(np.float32)
        ours._update_by_entries(p, ap.asarray(g * 2), state, 0.5)  # scale: the gradient is halved first
        t.grad = torch.from_numpy(g)
        opt.step()
    np.testing.assert_allclose(p.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert float(state[2]) == 3.0


@pytest.mark.parametrize("on_host", [True, False])
def test_adams_two_formulas_equal_torch(on_host: bool) -> None:
    """The op's bias correction: from the count read as a number (CPU), or computed on the device from
    the count tensor (a GPU: no host synchronisation) -- both torch.optim.Adam's values; the second is
    run here on the CPU, the only way to check it without a GPU."""
    from autopar.parallel._adam import stepped

    w, t = torch.tensor(W0[0]), torch.tensor(W0[0], requires_grad=True)
    m, v, count = torch.zeros_like(w), torch.zeros_like(w), torch.zeros((), dtype=torch.float64)
    opt = torch.optim.Adam([t], lr=0.05, betas=(0.8, 0.99), eps=1e-6)
    for _ in range(4):
        g = torch.from_numpy(RNG.standard_normal(W0[0].shape).astype(np.float32))
        count += 1
        m.lerp_(g, 0.2)
        v.mul_(0.99).addcmul_(g, g, value=0.01)
        w = stepped(w, m, v, count, 0.05, 0.8, 0.99, 1e-6, on_host=on_host)
        t.grad = g
        opt.step()
    torch.testing.assert_close(w, t.detach(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kind", ["momentum", "adam"])
def test_a_models_move_after_a_step_takes_the_optimizer_state_along(two_devices: list[ap.Device], kind: str) -> None:
    """Module.to puts new arrays in the model; the optimizer follows them, and now their state too: it
    stayed with the old arrays and the next step began from zeros (momentum and moments lost)."""
    from autopar import nn

    net, twin = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    with torch.no_grad():
        twin.weight.copy_(torch.from_numpy(net.weight.numpy()))
        twin.bias.copy_(torch.from_numpy(net.bias.numpy()))
    if kind == "adam":
        ours, theirs = optim.Adam(net.parameters(), lr=0.05), torch.optim.Adam(twin.parameters(), lr=0.05)
    else:
        ours, theirs = optim.SGD(net.parameters(), lr=0.1, momentum=0.9), torch.optim.SGD(twin.parameters(), lr=0.1, momentum=0.9)
    for i, x in enumerate(XS[:3]):
        if i == 1:
            net.to(two_devices[1])
        ours.zero_grad()
        (net(ap.asarray(x, device=two_devices[1 if i else 0])) ** 2).sum().backward()
        ours.step()
        theirs.zero_grad()
        (twin(torch.from_numpy(x)) ** 2).sum().backward()
        theirs.step()
    assert len(ours.state) == 2 and net.weight.device == two_devices[1]
    assert all(a.device == two_devices[1] for entry in ours.state_dict()["state"].values() for a in entry.values())
    np.testing.assert_allclose(net.weight.numpy(), twin.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_bad_setting_in_a_later_group_raises_before_any_group_is_updated() -> None:
    w = [ap.asarray(v, requires_grad=True) for v in W0]
    ours = _ours("momentum", w)
    ours.zero_grad()
    _loss(ap, ap.asarray(XS[0]), w, use_bias=True).backward()
    ours.param_groups[1]["lr"] = -0.5
    with pytest.raises(ValueError, match="lr=-0.5"):
        ours.step()
    np.testing.assert_array_equal(w[0].numpy(), W0[0])  # the first group was not updated either
    assert not ours.state
