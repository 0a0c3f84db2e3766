"""backward(), a data-parallel step and allreduce are all-or-nothing under Ctrl-C (the contract on data parallelism).

A real SIGINT is raised in the middle of each (``signal.raise_signal`` at a chosen push, in a
fresh interpreter: the handler runs at the next bytecode of the main thread). It used to stop the
call there: half a backward pushed (``.grad`` partial, no failure stored, and a retry raised "graph
already used"), one replica updated and the other not, one device holding the sum and the other
its own value. Now the interrupt reaches the caller once, after the last push, and every array is
what an uninterrupted call gives.
"""

from __future__ import annotations

from _helpers import run_python_json

SCRIPT = r"""
import json, signal
import numpy as np
import autopar as ap
from autopar import autograd, engine, parallel
from autopar.arrays import _backward
from autopar.parallel import _collectives, _local

signal.signal(signal.SIGINT, signal.default_int_handler)  # (a background job starts with SIGINT ignored)
ap.set_cpu_devices(2)
devices = [ap.cpu(0), ap.cpu(1)]
rng = np.random.default_rng(0)
w0 = [rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)]
xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in devices]
results = {}
for policy in ("threaded", "naive"):
    engine.set_engine(policy)
    out = results[policy] = {}

    def interrupt_at(module, name, call):  # raise SIGINT right after the call-th call of module.name
        real = getattr(module, name)
        count = [0]
        def wrapper(*args, **kwargs):
            result = real(*args, **kwargs)
            count[0] += 1
            if count[0] == call:
                signal.raise_signal(signal.SIGINT)
            return result
        setattr(module, name, wrapper)
        return lambda: setattr(module, name, real)

    def caught(fn):
        try:
            fn()
            return "no interrupt"
        except KeyboardInterrupt:
            return "interrupted"

    # backward: interrupted after its second gradient op is pushed
    def grads(interrupt):
        w = [ap.asarray(v, requires_grad=True) for v in w0]
        x = ap.asarray(xs[0])
        loss = (ap.tanh(ap.tanh(x @ w[0]) * w[1]) ** 2).sum()
        undo = interrupt_at(_backward, "push_gradient", 2) if interrupt else (lambda: None)
        try:
            status = caught(loss.backward)
        finally:
            undo()
        return status, [None if p.grad is None else p.grad.numpy().tolist() for p in w]

    status, got = grads(True)
    _, want = grads(False)
    out["backward"] = [status, got == want]

    # the data-parallel step: interrupted after device 0's update (or, on CPU devices of one process,
    # its share of the bucket's one sum-and-update op) is made, before device 1's -- both ways of summing
    class Interrupting(parallel.SGD):
        armed = False
        def update_bucket(self, params, flat_grad, states, scale=1.0):
            super().update_bucket(params, flat_grad, states, scale)
            self.interrupt(params)
        def bucket_kernel(self, params, flat_grad, states, scale=1.0):
            kernel = super().bucket_kernel(params, flat_grad, states, scale)
            self.interrupt(params)
            return kernel
        def interrupt(self, params):
            if self.armed and params[0].device == devices[0]:
                self.armed = False
                signal.raise_signal(signal.SIGINT)

    def train(interrupt):
        replicas = parallel.replicate([ap.asarray(v) for v in w0], devices)
        opt = Interrupting(0.1)
        trainer = parallel.DataParallel(replicas, opt)
        xd = [ap.asarray(x, device=d) for x, d in zip(xs, devices)]
        statuses = []
        for step in range(2):
            opt.armed = interrupt and step == 0
            with autograd.record():
                losses = [(ap.tanh(x @ p[0]) * p[1]).sum() for x, p in zip(xd, replicas)]
            statuses.append(caught(lambda: trainer.step(losses)))
        return statuses, [[p.numpy().tolist() for p in row] for row in replicas]

    shares_memory, shared_memory = _local.shares_memory, _local.shared_memory
    for sums in ("shared", "copies"):
        if sums == "copies":  # as for GPUs and other machines' devices
            _local.shares_memory = lambda devices: False
            _local.shared_memory = lambda arrays: False
        statuses, got = train(True)
        _, want = train(False)
        out["step " + sums] = [statuses, got[0] == got[1], got == want]

        # allreduce: interrupted after its first push (shared: its one op; copies: after the first sum)
        arrays = [ap.asarray(np.arange(4.0, dtype=np.float32) * (i + 1), device=d) for i, d in enumerate(devices)]
        undo = interrupt_at(_local, "push", 1) if sums == "shared" else interrupt_at(_collectives, "bind_into", 1)
        try:
            status = caught(lambda: parallel.allreduce(arrays))
        finally:
            undo()
        out["allreduce " + sums] = [status, [a.numpy().tolist() for a in arrays]]
    _local.shares_memory, _local.shared_memory = shares_memory, shared_memory

print(json.dumps(results))
"""


def test_ctrl_c_inside_backward_a_step_and_allreduce_is_raised_after_their_last_push() -> None:
    results = run_python_json(SCRIPT, timeout=120)
    for policy in ("threaded", "naive"):
        check(results[policy])


def check(out: dict) -> None:  # type: ignore[type-arg]
    assert out["backward"] == ["interrupted", True], out  # complete gradients: the same as uninterrupted
    for sums in ("shared", "copies"):  # (one op reading both CPU devices' memory; copies between them)
        assert out["step " + sums] == [["interrupted", "no interrupt"], True, True], out  # replicas equal, as uninterrupted
        assert out["allreduce " + sums] == ["interrupted", [[0.0, 3.0, 6.0, 9.0]] * 2], out  # the sum on both devices


def test_inside_a_group_nothing_runs_on_the_caller_and_no_push_waits(eng) -> None:  # type: ignore[no-untyped-def]
    """While a group pushes, no op's function runs on the calling thread (the one place a Ctrl-C is
    raised at once): no inline run, and the naive policy only queues until the group returns. Its
    pushes never wait for back-pressure (a wait a Ctrl-C would end midway)."""
    import threading

    import autopar as ap
    from _helpers import within
    from autopar.engine._group import atomic

    here = threading.current_thread()
    ran: list[threading.Thread] = []
    seen_inside: list[list[threading.Thread]] = []
    v = eng.Var()

    @atomic("a test group")
    def group() -> None:
        e = eng.current_engine()
        e.push_checked(lambda: ran.append(threading.current_thread()), (), (v,), ap.cpu(0), 0, "tiny", "compute", True)
        seen_inside.append(list(ran))

    group()
    within(30, lambda: eng.wait_for_var(v))
    assert seen_inside == [[]], seen_inside  # not run on the caller inside the group
    if eng.get_engine() == "naive":
        assert ran == [here]  # run when the group returned, on the caller, as the naive policy does
    else:
        assert ran and ran[0] is not here

    gate = threading.Event()
    eng.set_max_pending(1)
    try:
        eng.push(gate.wait, writes=[eng.Var()]) if eng.get_engine() == "threaded" else None

        @atomic("a test group")
        def many() -> None:
            for _ in range(5):
                eng.push(lambda: None, writes=[eng.Var()])

        within(30, many)  # returns with the bound exceeded; it would wait for the gate
    finally:
        gate.set()
        eng.set_max_pending(None)
