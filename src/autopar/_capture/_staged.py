"""The compile backend of a segment: its kernels through ``torch.compile`` in *stages*, cut at backward.

Design note
-----------
dynamo does not trace ``torch.autograd.grad``, and a compiled function run
under ``no_grad`` returns results without a graph. So a segment is run as
stages: each maximal run of kernel steps is one function compiled by
``torch.compile`` (AOTAutograd compiles its backward too, where its inputs
require grad), and each :class:`~autopar._capture._trace.BackwardStep`
between them runs as in replay -- ``torch.autograd.grad`` over the graph the
compiled forward stage returned, which runs its compiled backward. A
training step (forward, backward, update) is thus three stages: forward and
update fused by inductor, backward by AOTAutograd's compiled backward.

A stage takes the tensors of the slots it reads that earlier steps made or
the segment loaded (a leaf's *alias*, ``_leaves.kept_alias``, where a recorded
step reads a leaf), and returns the slots it makes. Inside it, a write is
functional -- the slot gets a new value -- and each input written is
copied into once, at the end (an input mutation, which torch.compile
keeps): a hundred ``x += 2*y`` are one fused loop and one copy, not a
hundred buffers. Each stage function
is made fresh (its own code object) and compiled with ``dynamic=False`` and
no guards (``_backends.Backend``: a trace is one signature), with
``mode="reduce-overhead"`` -- CUDA graphs -- on a CUDA device (not run on a
GPU here: unverified). On a CPU, a segment that trains (records gradients
or runs a backward) compiles with inductor's C++ wrapper (``cpp_wrapper``),
which runs a stage's kernels from C++, without the Python interpreter
between them: two CPU devices' compiled steps then run side by side
instead of taking turns at the GIL (a LeNet step compiled in two threads:
1.6-1.7x one thread's samples/s with the Python wrapper, 1.8-2.0x with the
C++ one; the captured data-parallel step on two devices 1.25x against
1.55x one device's; one device's captured LeNet step 0.9x the time). Where
the C++ wrapper fails, the stage compiles with the Python one. Other
segments keep the Python wrapper: a C++ call takes the interpreter lock
back at its end to release its tensors, which costs more than the wrapper
saves on a short fused elementwise kernel (the captured ``x += 2*y`` loop:
5% slower per call with the C++ wrapper).

A training segment that is only a forward and the backward of its loss --
each device's share of a data-parallel step -- is compiled as one graph
instead (``_joint.py``), with this staged compile as its fallback; every
compiled call here claims ``_joint.calls``, which a trace waits for.

A backward cut at gradient buckets (``_cuts.py``) cuts the forward into
stages at the same points (``cuts``), and the driver cuts the torch graph
between them, as replay does (``_cuts.CutBefore``): each *frontier* a piece
stops at is an output of one compiled graph, kept, and its cut tensor an
input of the next -- inside one graph it would have no gradient of its own,
and the pieces below would get none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from autopar._capture import _backends, _joint, _leaves
from autopar._capture._trace import BackwardStep, KernelStep, Operand, Slot, Step


def _compile(fn: Callable[..., Any], name: str, cuda: bool, cpp: bool) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"_stage": fn}
    safe = "".join(c if c.isalnum() else "_" for c in name)
    exec(f"def captured_{safe}(*tensors):\n    return _stage(*tensors)\n", namespace)
    # fullgraph: no guards is safe only for one graph (a graph break would resume in frames whose
    # code all runners share, and a frame compiled without guards would be reused for another)
    options: dict[str, Any] = {"guard_filter_fn": _backends.no_guards}
    if cpp and not cuda:
        options["cpp_wrapper"] = True
    compiled: Callable[..., Any] = torch.compile(namespace[f"captured_{safe}"], dynamic=False, fullgraph=True,
                                                 mode="reduce-overhead" if cuda else None, options=options)  # fmt: skip
    return compiled


Stage = tuple[Callable[..., Any], tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def _stage(steps: Sequence[KernelStep], slots: Sequence[Slot], size: int, needed: set[int]) -> Stage:
    """The stage's function, the slots it reads (env), the leaf slots it reads through aliases, the slots it makes."""
    runners = [_backends.kernel_runner(s, slots, compiling=True) for s in steps]
    made: set[int] = set()
    ins: dict[int, None] = {}
    leaf_ins: dict[int, None] = {}
    for s in steps:
        for pos, a in enumerate(s.args):
            if type(a) is not Operand or a.slot in made:
                continue
            if s.grad and pos in s.positions and slots[a.slot].leaf is not None and slots[a.slot].kind != "internal":
                leaf_ins[a.slot] = None
            else:
                ins[a.slot] = None
        if s.target is not None and s.target.slot not in made:
            ins[s.target.slot] = None
        made.update(s.outs)
    outs = tuple(o for s in steps for o in s.outs if o in needed)
    env_slots, alias_slots = tuple(ins), tuple(leaf_ins)

    def run(*tensors: Any) -> tuple[Any, ...]:
        env: list[Any] = [None] * size
        aliases: dict[Any, Any] = {}
        for s, t in zip(env_slots, tensors):
            env[s] = t
        for s, t in zip(alias_slots, tensors[len(env_slots):]):
            aliases[s] = t
        with torch.no_grad():
            for r in runners:
                r(env, aliases)
            for s, t in zip(env_slots, tensors):  # a slot written in the stage: its input gets the last value
                if env[s] is not t:
                    t.copy_(env[s])
        return tuple(env[o] for o in outs)

    return run, env_slots, alias_slots, outs


def make(seg_steps: Sequence[Step], slots: Sequence[Slot], size: int, loads: Sequence[int], publish: Sequence[int],
         name: str, cuda: bool,
         cuts: dict[int, _backends.Runner] | None = None) -> Callable[..., Callable[..., Any]]:  # fmt: skip
    """A factory of the segment's compiled driver (called once, by ``Backend``'s first compiled run);
    ``cuts``: positions in ``seg_steps`` where a backward's graph is cut (``_cuts.CutBefore.detach``,
    run by the driver between the stage before and the stage that starts there)."""
    cuts = cuts or {}
    runs: list[list[Step] | _backends.Runner] = [[]]
    for position, step in enumerate(seg_steps):
        if position in cuts:
            runs.append(cuts[position])
            runs.append([])
        if type(step) is KernelStep:
            runs[-1].append(step)  # type: ignore[union-attr]
        else:
            runs.append([step])
            runs.append([])
    runs = [r for r in runs if not isinstance(r, list) or r]

    def factory(cpp: bool = True) -> Callable[..., Any]:
        plan: list[Any] = []
        needed = set(publish)  # a stage returns only what is read after it (else inductor keeps every value)
        for run_of in reversed(runs):
            if not isinstance(run_of, list):  # a cut: run between the stages, as in replay
                plan.append(("eager", run_of))
                continue
            if type(run_of[0]) is not KernelStep:
                step = run_of[0]
                assert type(step) is BackwardStep
                needed |= step.reads
                plan.append(("eager", _leaves.backward_runner(step, slots)))
                continue
            fn, env_slots, alias_slots, outs = _stage(run_of, slots, size, needed)  # type: ignore[arg-type]
            plan.append(("stage", _compile(fn, f"{name}_{len(plan)}", cuda, cpp), env_slots, alias_slots, outs))
            needed |= set(env_slots) | set(alias_slots)
        plan.reverse()

        def driver(*tensors: Any, shared: Any = None, storages: Any = None) -> tuple[Any, ...]:
            env, aliases = ([None] * size, {}) if shared is None else shared
            for s, t in zip(loads, tensors):
                if t.storage_offset():  # views are taken at offset 0 in a compiled stage
                    raise ValueError("a tensor at a storage offset (from_torch of a part of a tensor)")
                env[s] = t
            for item in plan:
                if item[0] == "eager":
                    with torch.no_grad():
                        item[1](env, aliases)
                    continue
                _, fn, env_slots, alias_slots, outs = item
                args = [env[s] for s in env_slots]
                args += [_leaves.kept_alias(env, aliases, storages, s) for s in alias_slots]
                with _joint.calls.call():  # (not while a segment is traced: _joint.py)
                    made = fn(*args)
                for o, t in zip(outs, made):
                    env[o] = t
            return tuple(env[s] for s in publish)

        return driver

    return factory
