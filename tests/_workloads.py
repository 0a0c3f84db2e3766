"""Random engine programs for the differential tests (MXNet's engine test, in Python).

A program is a list of :class:`Step`. Running it pushes one op per step, from the
step's thread; each op reads the values of its inputs, mixes them with its own id, and
stores the result in the vars it writes -- updating them (``update``: it reads them too)
or overwriting them. It logs what it read, so the comparison checks every read of every
op that ran, not only the final state. Kinds of step:

- ``host``: a function on a CPU lane (``fails``: it raises);
- on a ``sim`` device: kernels queued on a simulated stream (``fails``: a device fault);
- ``async``: ``push_async``; a completer thread does the work and calls ``complete``;
- ``nested``: a host op that pushes a child op from inside, then writes. The child reads
  what the parent wrote last (a var only the parent writes) and writes a var of its own.

Each thread pushes its steps in order and touches only its own block of vars, so the
result does not depend on how the threads interleave: the naive engine's result is the
reference by construction.
"""

from __future__ import annotations

import queue
import random
import threading
from dataclasses import dataclass
from typing import Any

from autopar import engine
from autopar.devices import launch

MOD = (1 << 61) - 1


@dataclass(frozen=True)
class Step:
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    device: str
    lane: str
    priority: int
    fails: bool
    kind: str = "host"  # host, async or nested (on a sim device: its kernels run on the stream)
    update: bool = True  # it reads what it writes (read-write); False: an overwrite
    thread: int = 0


def lanes_of(device: str) -> list[str]:
    return ["compute", "copy"] if device.startswith("cpu") else ["compute", "copy_h2d", "copy_d2h"]


def random_program(
    seed: int,
    n_ops: int,
    n_vars: int,
    devices: list[str],
    fail_rate: float = 0.0,
    threads: int = 1,
    overwrite_rate: float = 0.3,
    async_rate: float = 0.05,
    nested_rate: float = 0.05,
) -> list[Step]:
    """Failures are sticky, so they would soon reach every var: in each thread's block,
    the last fifth of the vars are *sinks*, written only by sink ops (which read
    anything); the other ops read and write the other vars only. Only sink ops may fail,
    so failures flow from sink to sink -- and overwrites clear some -- while the rest
    survive."""
    rng = random.Random(seed)
    block = n_vars // threads
    first_sink = block - max(1, block // 5)
    steps = []
    for _ in range(n_ops):
        t = rng.randrange(threads)
        base = t * block
        if rng.random() < 0.2:
            reads = tuple(base + r for r in rng.sample(range(block), rng.randint(0, 3)))
            writes = tuple(base + w for w in rng.sample(range(first_sink, block), rng.randint(1, min(2, block - first_sink))))
        else:
            reads = tuple(base + r for r in rng.sample(range(first_sink), rng.randint(0, min(3, first_sink))))
            writes = tuple(base + w for w in rng.sample(range(first_sink), rng.randint(1, min(2, first_sink))))
        may_fail = all(w - base >= first_sink for w in writes)
        device = rng.choice(devices)
        roll = rng.random()
        kind = "async" if roll < async_rate else "nested" if roll < async_rate + nested_rate else "host"
        if device.startswith("sim"):
            kind = "host"
        steps.append(Step(reads, writes, device, rng.choice(lanes_of(device)), rng.choice([0, 0, 0, 1, -1, 5]),
                          may_fail and rng.random() < fail_rate, kind, rng.random() >= overwrite_rate, t))
    return steps


class Boom(RuntimeError):
    pass


class _Completer:
    """One thread that does the work of push_async ops, then calls their ``complete``."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._work, daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            work, complete = job
            try:
                work()
            except Boom as error:
                complete(error)
            else:
                complete()

    def stop(self) -> None:
        self.jobs.put(None)
        self.thread.join()


def run_program(steps: list[Step], n_vars: int) -> tuple[list[int | None], dict[str, tuple[int, ...]], list[bool]]:
    """Run on the current engine; return final values (None: failed), the reads of every
    op that finished done, and which vars failed."""
    n_private = sum(step.kind == "nested" for step in steps) * 2
    values = [i + 1 for i in range(n_vars + n_private)]
    vars_ = [engine.Var(f"v{i}") for i in range(n_vars + n_private)]
    seen: dict[str, tuple[int, ...]] = {}
    ops: dict[str, engine.Op] = {}
    completer = _Completer()
    nested = [i for i, step in enumerate(steps) if step.kind == "nested"]
    private = {i: (n_vars + 2 * k, n_vars + 2 * k + 1) for k, i in enumerate(nested)}  # the parent's, the child's

    def kernel(key: str, reads: tuple[int, ...], writes: tuple[int, ...], update: bool, fails: bool):  # type: ignore[no-untyped-def]
        def run() -> None:
            got = tuple(values[r] for r in reads) + (tuple(values[w] for w in writes) if update else ())
            seen[key] = got
            if fails:
                raise Boom(f"{key} fails")
            acc = (int(key.rstrip("c")) * 2 + key.endswith("c") + 1) * 1_000_003 % MOD
            for v in got:
                acc = (acc * 31 + v) % MOD
            for w in writes:
                values[w] = (acc + w) % MOD

        return run

    def push(i: int, step: Step) -> None:
        key = str(i)
        reads = [vars_[r] for r in step.reads]
        writes = [vars_[w] for w in step.writes]
        if step.update:
            reads += writes
        work = kernel(key, step.reads, step.writes, step.update, step.fails)
        args: dict[str, Any] = dict(reads=reads, writes=writes, device=step.device, lane=step.lane,
                                    priority=step.priority, name=f"step{i}")
        if step.kind == "async":
            ops[key] = engine.push_async(lambda complete: completer.jobs.put((work, complete)), **args)
        elif step.kind == "nested":
            mine, childs = private[i]
            child = kernel(f"{i}c", (mine,), (childs,), False, False)

            def parent() -> None:
                ops[f"{i}c"] = engine.push(child, reads=[vars_[mine]], writes=[vars_[childs]], name=f"child{i}")
                work()
                values[mine] = (values[step.writes[0]] * 3 + 1) % MOD  # written after the child was pushed

            args["writes"] = writes + [vars_[mine]]
            ops[key] = engine.push(parent, **args)
        elif step.device.startswith("sim"):
            ops[key] = engine.push(lambda: launch(work), **args)
        else:
            ops[key] = engine.push(work, **args)

    def pusher(t: int) -> None:
        for i, step in enumerate(steps):
            if step.thread == t:
                push(i, step)

    threads = [threading.Thread(target=pusher, args=(t,)) for t in sorted({s.thread for s in steps})]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    try:
        engine.waitall()
    except Boom:
        pass
    completer.stop()
    engine.current_engine().drain()  # failures raised once are cleared; the vars keep theirs
    failed = [v.failure is not None for v in vars_]
    final = [None if f else values[i] for i, f in enumerate(failed)]
    done = {key: got for key, got in seen.items() if ops[key].state is engine.OpState.DONE}
    return final, done, failed
