"""The node runtimes: the gate on what they run, their cores, calls side by side, bounded waits, batches.

Most tests use the session's local 2-node cluster; the gate and the core
picking are tested without one. Oracles: NumPy and torch on the driver.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import autopar as ap
import autopar.cluster
from autopar.cluster import _kernels, _session
from autopar.cluster._runtime import NodeRuntime, pick_cores, pin_process

# -- without a cluster --------------------------------------------------------------------------


def test_pick_cores_wraps_around_the_allowed_cores() -> None:
    assert pick_cores([0, 1], 0, 1) == [0]
    assert pick_cores([0, 1], 1, 1) == [1]
    assert pick_cores([0, 1], 2, 1) == [0]  # a third 1-CPU node on a 2-core machine shares core 0
    assert pick_cores([4, 5, 6], 2, 2) == [4, 6]
    assert pick_cores([0, 1], 0, 8) == [0, 1]  # more CPUs than cores: every core once


def test_the_gate_lets_through_only_the_op_table_and_the_users_call_functions() -> None:
    assert _kernels.lookup("matmul").name == "matmul"
    assert _kernels.lookup("random").name == "random"  # an op module the driver may not have imported
    with pytest.raises(KeyError, match="'os.system' is not an autopar op"):
        _kernels.check(("bind", "os.system", (), {}, (1,), "cpu:0", "compute", "x"))
    with pytest.raises(ValueError, match="not an autopar call"):
        _kernels.check(("exec", "print(1)"))
    with pytest.raises(TypeError, match="static parameter 'key' is code"):
        _kernels.check(("bind", "add", ((1, None), 1), {"key": print}, (2,), "cpu:0", "compute", "add"))
    with pytest.raises(TypeError, match="static parameter 'k' is code"):
        _kernels.check(("into", "assign", (1, None, (2,), ap.float32), (), {"k": (1, abs)}, "w", "unsafe",
                        "cpu:0", "compute"))  # fmt: skip
    _kernels.check(("bind", "call", ((1, None),), {"fn": abs, "shape": (2,), "label": "abs", "device": "cpu",
                                                    "dtype": ap.float32}, (2,), "cpu:0", "compute", "abs"))  # fmt: skip
    _kernels.check(("bind", "full", (), {"shape": (2,), "value": 1, "dtype": ap.float32, "device": "cpu"}, (1,),
                    "cpu:0", "compute", "full"))  # fmt: skip  # a dtype is data, not code


@pytest.fixture
def process_settings_kept():  # type: ignore[no-untyped-def]
    """A runtime pins its process to its node's cores and sets torch's threads (right in an actor):
    built in the test process, it must not leave every later test (and their subprocesses) on one core."""
    import os

    cores, threads = sorted(os.sched_getaffinity(0)), torch.get_num_threads()
    yield
    pin_process(cores)
    torch.set_num_threads(threads)
    ap.set_cpu_devices(1)


def test_a_runtime_runs_calls_in_process_through_the_op_table(process_settings_kept) -> None:  # type: ignore[no-untyped-def]
    """The actor's body, without Ray: what the driver's calls do on a node."""
    rt = NodeRuntime("nodeX", 1, 0)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert rt.apply(("write", 1, "cpu:0"), a) is None
    rt.apply(("bind", "matmul", ((1, None), (1, (0, (4, 3), (1, 4)))), {}, (2,), "cpu:0", "compute", "matmul"))
    np.testing.assert_allclose(rt.apply(("read", (2, None))), a @ a.T)
    answers = rt.apply_many([
        ("bind", "add", ((1, None), 1), {}, (3,), "cpu:0", "compute", "add"),
        ("bind", "matmul", ((1, None), (1, None)), {}, (4,), "cpu:0", "compute", "matmul"),  # 3x4 @ 3x4
        ("bind", "nonzero", ((1, (0, (12,), (1,))),), {}, (5,), "cpu:0", "compute", "nonzero"),
    ])
    assert answers[0] == (None, None)
    assert isinstance(answers[1][0], ValueError) and "matmul" in str(answers[1][0])  # its own failure
    assert answers[2] == (None, ((1, 11),))  # a data-dependent op answers its shapes (nonzero: 1 x 11)
    np.testing.assert_array_equal(rt.apply(("read", (3, None))), a + 1)
    rt.apply(("into", "assign", (3, (0, (4,), (1,)), (3, 4), ap.float32), (7.5,), {}, "index assignment", "unsafe",
              "cpu:0", "compute"))  # fmt: skip
    want = a + 1
    want[0] = 7.5
    np.testing.assert_array_equal(rt.apply(("read", (3, None))), want)
    with pytest.raises(ap.DeviceError, match=r"on node nodeX \(devices: cpu:0\): device cuda:0 does not exist"):
        rt.apply(("bind", "full", (), {"shape": (1,), "value": 0, "dtype": ap.float32, "device": "cuda:0"}, (9,),
                  "cuda:0", "compute", "full"))  # fmt: skip
    with pytest.raises(KeyError, match="no data under key 77"):
        rt.apply(("read", (77, None)))
    rt.free((1, 2, 3))
    assert rt.keys() == [5]


# -- on the session's local cluster -------------------------------------------------------------


def test_runtimes_pin_their_cores_and_use_their_nodes_cpus(connected) -> None:  # type: ignore[no-untyped-def]
    infos = [_session.node(name).info for name in ("node0", "node1")]
    assert all(info is not None for info in infos)
    assert [info.torch_threads for info in infos] == [1, 1]  # type: ignore[union-attr]  # 1 CPU per node
    assert [len(info.cores) for info in infos] == [1, 1]  # type: ignore[union-attr]
    import os

    if len(os.sched_getaffinity(0)) >= 2:
        assert infos[0].cores != infos[1].cores  # type: ignore[union-attr]  # side by side, not on one core
    assert [str(d) for d in autopar.cluster.devices()] == ["node0/cpu:0", "node1/cpu:0"]


def _long_product(x: torch.Tensor) -> torch.Tensor:
    for _ in range(6):
        x = x @ x / x.shape[0]
    return x


def test_a_copy_to_a_node_is_not_queued_behind_a_long_product_there(connected) -> None:  # type: ignore[no-untyped-def]
    """The node's copy lane and compute lane run side by side (threaded actor, two lanes), as locally."""
    dev = ap.Device("node0/cpu:0")
    x = ap.random.normal(size=(1200, 1200), device=dev, dtype="float64")
    x.wait_to_read()
    slow = ap.call(_long_product, x, shape=x.shape)
    quick = ap.asarray(np.ones(4), device=dev)
    quick.wait_to_read()
    from autopar import engine

    assert engine.pending() >= 1, "the copy waited for the long product on the node"
    slow.wait_to_read()
    np.testing.assert_array_equal(quick.numpy(), np.ones(4))


def test_a_wait_with_a_deadline_fails_with_a_message_instead_of_hanging(connected) -> None:  # type: ignore[no-untyped-def]
    import time

    n = _session.node("node1")
    n.wait(n.submit_apply(("write", 999_001, "cpu:0"), np.ones(4)), "write")

    def slow(x: torch.Tensor) -> torch.Tensor:
        time.sleep(3)  # a slow kernel, not synchronisation
        return x

    call = ("bind", "call", ((999_001, None),), {"fn": slow, "shape": (4,), "label": "slow", "device": "cpu",
                                                  "dtype": ap.float64}, (999_002,), "cpu:0", "compute", "slow")  # fmt: skip
    ref = n.submit_apply(call)
    with pytest.raises(autopar.cluster.ClusterError, match=r"slow on node1: no answer within 0.5 s"):
        n.wait(ref, "slow", timeout=0.5)
    assert not n.lost  # a slow node is not a lost one
    n.wait(ref, "slow")  # without a deadline: as long as the node lives
    np.testing.assert_array_equal(n.request(("read", (999_002, None))), np.ones(4))
    n.discard(999_001)
    n.discard(999_002)
    assert not {999_001, 999_002} & set(n.keys())


def test_ops_ready_together_go_to_a_node_in_one_call(connected, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The watcher batches: many small independent ops, far fewer Ray calls (and the right values)."""
    from autopar.cluster import _node

    sent: list[int] = []
    one, many = _node.RemoteNode.submit_apply, _node.RemoteNode.submit_many
    monkeypatch.setattr(_node.RemoteNode, "submit_apply", lambda self, call, data=None: sent.append(1) or one(self, call, data))
    monkeypatch.setattr(_node.RemoteNode, "submit_many", lambda self, calls: sent.append(len(calls)) or many(self, calls))
    x = ap.arange(8.0, device="node1/cpu:0")
    x.wait_to_read()
    sent.clear()
    ys = [x + i for i in range(200)]
    ap.waitall()
    assert sum(sent) == 200
    assert len(sent) < 100, sent  # batched: one Ray call carried several ops
    for i in (0, 57, 199):
        np.testing.assert_array_equal(ys[i].numpy(), np.arange(8.0) + i)


def test_with_the_watcher_idle_a_call_is_sent_at_once_from_the_lane(connected, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A chain of dependent ops does not wait for the watcher thread to wake before each call."""
    import threading

    from autopar.cluster import _node

    senders: list[str] = []
    one = _node.RemoteNode.submit_apply
    monkeypatch.setattr(_node.RemoteNode, "submit_apply",
                        lambda self, call, data=None: senders.append(threading.current_thread().name) or one(self, call, data))
    x = ap.arange(4.0, device="node1/cpu:0")
    for _ in range(3):
        x = x + 1
        x.wait_to_read()  # the watcher is idle before each op
    assert len(senders) == 4 and not any("watcher" in name for name in senders), senders
    np.testing.assert_array_equal(x.numpy(), np.arange(4.0) + 3)


def test_the_watcher_survives_an_internal_error_and_fails_only_the_ops_it_concerned(connected, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """STYLE 18: the thread never dies silently; the op being finished fails with a ClusterError, nothing hangs."""
    from autopar.cluster import _watch

    watcher = _session.current().watcher
    assert watcher is not None
    faults = watcher.faults
    finish_one = _watch._finish_one
    calls = []

    def broken_once(entry, failure, answer):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug in the watcher")
        return finish_one(entry, failure, answer)

    x = ap.ones(4, device="node1/cpu:0")
    x.wait_to_read()
    monkeypatch.setattr(_watch, "_finish_one", broken_once)
    y = x + 1
    with pytest.raises(autopar.cluster.ClusterError, match="internal error in autopar's cluster watcher.*a bug in the watcher"):
        y.numpy()
    assert watcher.faults == faults + 1 and watcher.thread.is_alive()
    assert "a bug in the watcher" in capsys.readouterr().err
    np.testing.assert_array_equal((x + 2).numpy(), np.full(4, 3.0))  # the watcher goes on


# -- transient faults: an idempotent call is sent again, within a bound; others fail without being resent --


def _unavailable(x: torch.Tensor, log: str, times: int) -> torch.Tensor:
    """``x + 1``, except that its first ``times`` runs fail as a moment's loss of contact does (Ray's
    ActorUnavailableError, which says the call may or may not have run); every run is logged in ``log``."""
    with open(log, "a") as fh:
        fh.write("run\n")
    with open(log) as fh:
        runs = len(fh.readlines())
    if runs <= times:
        from ray.exceptions import ActorUnavailableError

        raise ActorUnavailableError("injected: the node could not be reached for a moment", None)
    return x + 1


def _runs(log: str) -> int:
    with open(log) as fh:
        return len(fh.readlines())


def test_a_transient_fault_is_retried_for_an_idempotent_op_and_fails_the_node_past_the_bound(connected, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import functools

    from autopar.cluster import _ray

    node = _session.node("node1")
    x = ap.ones(4, device="node1/cpu:0")
    x.wait_to_read()  # alone in flight: the op below is sent by itself, not batched
    once = str(tmp_path / "once")
    y = ap.call(functools.partial(_unavailable, log=once, times=1), x, shape=(4,))
    np.testing.assert_array_equal(y.numpy(), np.full(4, 2.0))
    assert _runs(once) == 2 and not node.lost  # sent again once; a blip is not a loss
    always = str(tmp_path / "always")
    z = ap.call(functools.partial(_unavailable, log=always, times=99), x, shape=(4,))
    with pytest.raises(ap.NodeLostError, match=rf"node1 was lost: .*unreachable after {_ray.RETRIES} retries"):
        z.numpy()
    assert _runs(always) == 1 + _ray.RETRIES and node.lost  # the bound: then the node counts as lost
    with pytest.raises(ap.NodeLostError):
        ap.waitall()
    autopar.cluster.connect(connected.address)  # the next test gets a fresh runtime on node1


def test_a_transient_fault_of_an_in_place_write_fails_it_without_sending_it_again(connected, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import functools

    node = _session.node("node1")
    x, other = ap.ones(4, device="node1/cpu:0"), ap.full(4, 7.0, device="node1/cpu:0")
    ap.waitall()
    log = str(tmp_path / "log")
    submit_apply = node.submit_apply
    faulty = ("bind", "call", ((other._storage.key, None),),
              {"fn": functools.partial(_unavailable, log=log, times=99), "shape": (4,), "label": "fault",
               "device": "cpu", "dtype": ap.float64}, (999_101,), "cpu:0", "compute", "fault", None)  # fmt: skip
    sent = []

    def blip_on_into(call, data=None):  # type: ignore[no-untyped-def]
        sent.append(call[0])
        return submit_apply(faulty if call[0] == "into" else call, data)  # the in-place write meets a blip

    monkeypatch.setattr(node, "submit_apply", blip_on_into)
    x += 1
    with pytest.raises(autopar.cluster.ClusterError, match="may or may not have run there and is not sent again"):
        x.numpy()
    assert sent.count("into") == 1 and _runs(log) == 1 and not node.lost
    np.testing.assert_array_equal(other.numpy(), np.full(4, 7.0))  # the node and its other arrays stay
    ap.waitall()  # the failure was raised once, by the read


def test_a_transient_fault_of_a_batch_resends_its_ops_one_by_one_and_fails_only_an_in_place_write(connected, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """One Ray call carrying many ops (``apply_many``) meets a blip: it may or may not have run. Its ops that may
    run twice are sent again one by one and answer right; an in-place write among them fails alone."""
    import functools

    from autopar.cluster import _node

    node = _session.node("node1")
    x, w = ap.arange(8.0, device="node1/cpu:0"), ap.zeros(8, device="node1/cpu:0")
    ap.waitall()
    faulty = ("bind", "call", ((x._storage.key, None),),
              {"fn": functools.partial(_unavailable, log=str(tmp_path / "log"), times=99), "shape": (8,),
               "label": "fault", "device": "cpu", "dtype": x.dtype}, (999_301,), "cpu:0", "compute", "fault", None)  # fmt: skip
    many = _node.RemoteNode.submit_many
    faulted: list[tuple] = []  # type: ignore[type-arg]

    def blip_on_the_first_batch(self, calls):  # type: ignore[no-untyped-def]
        ref = many(self, calls)  # the batch is sent (it may run)...
        if self is node and not faulted:
            faulted.extend(calls)
            return self.actor.apply.remote(faulty)  # ...but the answer is Ray's "temporarily unavailable"
        return ref

    monkeypatch.setattr(_node.RemoteNode, "submit_many", blip_on_the_first_batch)
    first = x + 100  # sent at once by its lane (the watcher is idle): the ops below queue behind it, together
    w[0] = 5.0
    ys = [x + i for i in range(40)]
    for i, y in enumerate(ys):
        np.testing.assert_array_equal(y.numpy(), np.arange(8.0) + i)
    assert len(faulted) > 1, "the ops went to node1 in batches (as in test_ops_ready_together_go_to_a_node_in_one_call)"
    if any(call[0] == "into" for call in faulted):
        with pytest.raises(autopar.cluster.ClusterError, match="may or may not have run there and is not sent again"):
            w.numpy()
    else:
        np.testing.assert_array_equal(w.numpy(), [5.0] + [0.0] * 7)
    np.testing.assert_array_equal(first.numpy(), np.arange(8.0) + 100)
    assert not node.lost
    ap.waitall()
