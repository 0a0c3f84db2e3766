"""Random read/write programs for the differential tests (MXNet's engine test, in Python).

A program is a list of :class:`Step`. Running it pushes one op per step; each
op reads the values of its read vars, mixes them with its own id, and stores
the result in its write vars. It also logs what it read, so the comparison
checks every intermediate read, not only the final state.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

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


def random_program(
    seed: int, n_ops: int, n_vars: int, devices: list[str], fail_rate: float = 0.0
) -> list[Step]:
    """Failures are sticky, so they would soon reach every var: the last fifth of
    the vars are *sinks*, written only by sink ops (which read anything); the
    other ops read and write the other vars only. Only sink ops may fail, so
    failures flow from sink to sink while the rest survive."""
    rng = random.Random(seed)
    first_sink = n_vars - max(1, n_vars // 5)
    steps = []
    for _ in range(n_ops):
        if rng.random() < 0.2:
            reads = tuple(rng.sample(range(n_vars), rng.randint(0, 3)))
            writes = tuple(rng.sample(range(first_sink, n_vars), rng.randint(0, min(2, n_vars - first_sink))))
        else:
            reads = tuple(rng.sample(range(first_sink), rng.randint(0, min(3, first_sink))))
            writes = tuple(rng.sample(range(first_sink), rng.randint(0, min(2, first_sink))))
        may_fail = all(w >= first_sink for w in writes)
        device = rng.choice(devices)
        lanes = ["compute", "copy"] if device.startswith("cpu") else ["compute", "copy_h2d", "copy_d2h"]
        steps.append(
            Step(
                reads,
                writes,
                device,
                rng.choice(lanes),
                rng.choice([0, 0, 0, 1, -1, 5]),
                may_fail and device.startswith("cpu") and rng.random() < fail_rate,
            )
        )
    return steps


class Boom(RuntimeError):
    pass


def run_program(steps: list[Step], n_vars: int) -> tuple[list[int | None], dict[int, tuple[int, ...]], list[bool]]:
    """Run on the current engine; return final values (None: failed), reads seen, failed flags."""
    values = [i + 1 for i in range(n_vars)]
    seen: dict[int, tuple[int, ...]] = {}
    vars_ = [engine.Var(f"v{i}") for i in range(n_vars)]

    def make(i: int, step: Step):  # type: ignore[no-untyped-def]
        def kernel() -> None:
            got = tuple(values[r] for r in step.reads)
            seen[i] = got
            acc = (i * 1_000_003) % MOD
            for v in got:
                acc = (acc * 31 + v) % MOD
            for w in step.writes:
                values[w] = (acc + values[w] * 7 + w) % MOD

        if step.device.startswith("sim"):
            return lambda: launch(kernel)

        def host() -> None:
            if step.fails:
                raise Boom(f"step {i} fails")
            kernel()

        return host

    for i, step in enumerate(steps):
        engine.push(
            make(i, step),
            reads=[vars_[r] for r in step.reads + step.writes],  # the kernel updates what it writes
            writes=[vars_[w] for w in step.writes],
            device=step.device,
            lane=step.lane,
            priority=step.priority,
            name=f"step{i}",
        )
    try:
        engine.waitall()
    except Boom:
        pass
    failed = [v.failure is not None for v in vars_]
    final = [None if f else values[i] for i, f in enumerate(failed)]
    return final, seen, failed
