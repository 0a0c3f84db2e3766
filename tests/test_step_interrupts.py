"""An optimizer's step and gluon's Trainer.step are all-or-nothing under Ctrl-C (the contract on data
parallelism), as backward and the data-parallel step are (test_groups.py).

A real SIGINT is raised right after the first parameter's update is pushed, or (gluon) its first
sum (``signal.raise_signal`` in a fresh interpreter: the handler runs at the next bytecode). It
stopped the step there: the first parameter updated, the others not -- with gluon's Trainer on two
devices, device 0's copy updated and device 1's not, for good; or the sums pushed and no update
(a retry summed them again). Now the interrupt reaches the caller once, after the last
push, and every array is what an uninterrupted step gives.
"""

from __future__ import annotations

from _helpers import run_python_json

SCRIPT = r"""
import json, signal
import numpy as np
import autopar as ap
from autopar import autograd, engine, gluon, init, optim, parallel
from autopar.gluon import nn as gnn

ap.set_cpu_devices(2)
devices = [ap.cpu(0), ap.cpu(1)]
rng = np.random.default_rng(0)
w0 = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (3,), (3, 2))]
x0 = rng.standard_normal((4, 4)).astype(np.float32)
real_update, real_allreduce = parallel.SGD.update, parallel.allreduce
armed = [None]

def update(self, *args, **kwargs):  # the first update pushed, then a real Ctrl-C
    real_update(self, *args, **kwargs)
    if armed[0] == "update":
        armed[0] = None
        signal.raise_signal(signal.SIGINT)

def allreduce(*args, **kwargs):  # the first sum pushed, then a real Ctrl-C
    real_allreduce(*args, **kwargs)
    if armed[0] == "allreduce":
        armed[0] = None
        signal.raise_signal(signal.SIGINT)

parallel.SGD.update = update
parallel.allreduce = allreduce

def caught(fn):
    try:
        fn()
        return "no interrupt"
    except KeyboardInterrupt:
        return "interrupted"

results = {}
for policy in ("threaded", "naive"):
    engine.set_engine(policy)
    out = results[policy] = {}

    def torch_style(interrupt):
        w = [ap.asarray(v, requires_grad=True) for v in w0]
        opt = optim.SGD(w, lr=0.1, momentum=0.9)
        statuses = []
        for step in range(2):
            opt.zero_grad()
            ((ap.tanh(ap.asarray(x0[:, :4]) @ w[0]) + w[1]) @ w[2]).sum().backward()
            armed[0] = "update" if interrupt and step == 0 else None
            statuses.append(caught(opt.step))
        return statuses, [p.numpy().tolist() for p in w]

    statuses, got = torch_style(True)
    _, want = torch_style(False)
    out["optim"] = [statuses, got == want]

    def gluon_style(interrupt):
        net = gnn.Sequential()
        net.add(gnn.Dense(3, activation="tanh", in_units=4), gnn.Dense(2, in_units=3))
        net.initialize(init=init.Constant(0.1), ctx=devices)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
        statuses = []
        for step, where in enumerate(("update", "allreduce", None)):
            xs = gluon.utils.split_and_load(x0 * (step + 1), devices)
            with autograd.record():
                losses = [(net(x) ** 2).sum() for x in xs]
            for loss in losses:
                loss.backward()
            armed[0] = where if interrupt else None  # in device 0's update; between the sums and the updates
            statuses.append(caught(lambda: trainer.step(4)))
            try:  # a retry: the interrupted step used these gradients (all of it was pushed)
                trainer.step(4)
                statuses.append("applied twice")
            except UserWarning:
                pass
        copies = [[p.data(d).numpy().tolist() for p in net.collect_params().values()] for d in devices]
        return statuses, copies

    statuses, got = gluon_style(True)
    _, want = gluon_style(False)
    out["gluon"] = [statuses, got[0] == got[1], got == want]

print(json.dumps(results))
"""


def test_ctrl_c_inside_an_optimizer_step_and_a_gluon_trainer_step_is_raised_after_their_last_push() -> None:
    results = run_python_json(SCRIPT, timeout=120)
    for policy in ("threaded", "naive"):
        out = results[policy]
        assert out["optim"] == [["interrupted", "no interrupt"], True], (policy, out)  # as uninterrupted
        assert out["gluon"] == [["interrupted", "interrupted", "no interrupt"], True, True], (policy, out)  # copies equal
