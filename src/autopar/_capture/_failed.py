"""A captured segment whose engine op meets a failed read: its steps one by one, each failure as step by step.

Design note
-----------
A segment is one engine op, pushed with ``bulk`` set (``engine.push_checked``):
the engine never skips it for a failed read, and leaves the outcome of every
var it writes to it -- as it does for a bulk op of small ops, whose members
each store their own (``engine/_segment.py``). So ``_program._run_segment``
checks, before it runs, whether a storage the segment reads holds a failure
(only once anything has failed in the process: ``_failures.seen``; a call
whose input had failed before the call never gets here, it runs eagerly:
``Program.run``). None has: the fast path -- the replay or the compiled
segment -- runs as always, and its success clears a failure on what it
overwrote (the contract's failure rule 2, which the engine leaves to a bulk
op). Some have: :class:`Stepwise` runs the segment's steps one by one with
their replay runners (``_backends.py``), a failure per *slot*:

- a step that reads a failed slot does not run; the slots it writes take
  that same ``Failure`` (the first, in the order the engine would find it:
  the step's read-only operands in argument order, then those it also
  writes) -- the same exception, naming the op that failed, as step by step;
- a step that reads none runs, and clears a failure on what it writes: a
  covering write of a failed array clears it (rule 2; into a new tensor
  where the array's producer was skipped, as eagerly), a partial one reads
  the array and so is stopped;
- a step that raises fails what it writes with a new failure named after
  it, owed to ``waitall`` like any; a ``KeyboardInterrupt`` is not caught:
  the engine records it on every var the op writes (rule 6);
- at the end each storage the segment writes gets its value or its failure.

A :class:`~autopar._capture._trace.BackwardStep` is one ``torch.autograd.grad``
over the whole recorded graph, where step by step is one op per recorded
node, each reading its forward's inputs -- so a gradient fails exactly when
a failed head reaches its leaf (the head's own node reads the failed input,
and every node below it then reads a failed gradient). A backward whose
heads, head gradients and leaves hold no failure runs; one of a single head
that failed is skipped, all its gradients failed; one of several heads of
which some failed (:class:`_Heads`) runs over the good heads only, and the
leaves the failed heads reach -- found by walking the recorded steps before
it back from those heads, slot by slot (an in-place write only widens it) --
take their failure. A ``.grad`` it adds into, or writes only in part, that
had failed stays failed (step by step, that write reads the failed array).
A ``.grad`` storage whose every element it overwrites, through the views of
several leaves, is cleared: the data-parallel step's gradient buckets, each
of which it overwrites whole just before backward (by an op its trace does
not keep: it runs eagerly at the trace) so that a failure an earlier step
left there is cleared. A backward cut into pieces with several heads of
which some failed fails all its gradients, conservatively (its pieces pass
gradients on, and the split above would have to follow them); the
data-parallel step's backward has one head per device.

A backward cut into pieces (``_cuts.py``) shares one environment across
its pieces' engine ops, and so shares the failure map too (in the chain's
aliases, under :data:`KEY`): a piece after a head that ran step by step runs
step by step as well, so a frontier the head never made is seen as failed,
not read as ``None``; the graph is cut before a step at a cut point whether
or not the step runs (``_cuts.CutBefore``). An :class:`OpaqueStep` (an
engine op the function pushed itself) is stopped as its op would be: by a
failure on what it reads, not on what it only writes (an overwrite, which
runs and clears it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from autopar._capture import _backends, _leaves
from autopar._capture._backends import Runner
from autopar._capture._cuts import CutBefore
from autopar._capture._trace import BackwardStep, KernelStep, OpaqueStep, Operand, Slot, Step
from autopar.devices import Device
from autopar.engine import _failures
from autopar.engine._var import Failure

KEY = "failures"  # a chain's failure map (slot -> Failure), kept in the aliases its segments share


def _covered(shape: tuple[int, ...], views: Sequence[Any]) -> bool:
    """Whether writing through all of ``views`` writes every element of a storage of ``shape``."""
    numel = math.prod(shape)
    if any(v is None or math.prod(v.shape) == numel and 0 not in v.strides for v in views):
        return True  # (one view covers it: ``_views.covers``)
    if sum(math.prod(v.shape) for v in views) < numel:
        return False
    hit = np.zeros(numel, dtype=bool)
    for v in views:
        index = np.full((), v.offset, dtype=np.int64)
        for n, stride in zip(v.shape, v.strides):
            index = index[..., None] + np.arange(n, dtype=np.int64) * stride
        hit[index.ravel()] = True
    return bool(hit.all())


def _stops(step: Step, slots: Sequence[Slot]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The slots whose failure stops ``step``, in the order the engine looks, and for a backward the
    ``.grad`` slots it adds into or writes only in part, whose failure stays on them (module note)."""
    order: dict[int, None] = {}
    if type(step) is KernelStep:
        for a in step.args:
            if type(a) is Operand and a.slot not in step.writes:
                order[a.slot] = None
    kept: tuple[int, ...] = ()
    reads = set(step.reads) if type(step) is not OpaqueStep else step.reads - step.overwrites
    if type(step) is BackwardStep:
        grads: dict[int, list[tuple[Any, bool]]] = {}
        for _, g, overwrite in step.leaves:
            grads.setdefault(g.slot, []).append((g.view, overwrite))
        kept = tuple(sorted(s for s, uses in grads.items() if not all(o for _, o in uses)
                            or not _covered(slots[s].shape, [v for v, _ in uses])))  # fmt: skip
        reads -= set(grads)
    for s in sorted(reads):
        if s not in step.writes:
            order[s] = None
    for s in sorted(reads):
        order[s] = None
    return tuple(order), kept


class _Heads:
    """A backward of several heads (not cut into pieces), some of which may fail: which recorded
    steps before it lead where (``made``, ``inputs``: slots), to find the leaves a failed head reaches."""

    __slots__ = ("step", "graph", "apart")

    def __init__(self, step: BackwardStep, before: Sequence[Step]) -> None:
        self.step = step
        self.apart = {h.slot for h in step.heads} | {g.slot for g in step.head_grads if g is not None}
        self.graph = [(set(s.outs) | ({s.target.slot} if s.target is not None else set()),
                       {s.args[p].slot for p in s.positions if type(s.args[p]) is Operand})
                      for s in before if type(s) is KernelStep and s.grad]  # fmt: skip

    def run(self, env: list[Any], aliases: dict[Any, Any], failed: dict[int, Failure], slots: Sequence[Slot],
            device: Device) -> tuple[Failure | None, dict[int, Failure]]:  # fmt: skip
        """Torch's gradients of the good heads only; the ``.grad`` slots of the leaves a failed head reaches
        take its failure (step by step, their gradient reads it). Returns the step's own failure, if it
        raised, and the slots failed so."""
        step = self.step
        good: list[int] = []
        reached: set[int] = set()
        first: Failure | None = None
        for k, (h, g) in enumerate(zip(step.heads, step.head_grads)):
            failure = failed.get(h.slot) or (failed.get(g.slot) if g is not None else None)
            if failure is None:
                good.append(k)
            else:
                first = first or failure
                reached.add(h.slot)
        for made, inputs in reversed(self.graph):  # (over the slots: an in-place write only widens it)
            if made & reached:
                reached |= inputs
        assert first is not None  # (the caller found a failed head)
        if not good:  # every head failed: so does every gradient, as step by step
            return first, {}
        part = replace(step, heads=tuple(step.heads[k] for k in good),
                       head_grads=tuple(step.head_grads[k] for k in good))
        try:
            _leaves.backward_runner(part, slots)(env, aliases)
        except Exception as error:  # its own failure, as its ops' step by step
            return _failures.new_named(step.name, device, error), {}
        return None, {g.slot: first for leaf, g, _ in step.leaves if leaf in reached}


class Stepwise:
    """A segment's steps, run one by one with a failure per slot (module note)."""

    __slots__ = ("plan", "size", "slots")

    def __init__(self, steps: Sequence[Step], runners: Sequence[Runner], slots: Sequence[Slot]) -> None:
        self.size = len(slots)
        self.slots = slots
        self.plan = []
        for k, (step, runner) in enumerate(zip(steps, runners)):
            stops, kept = _stops(step, slots)
            heads = None
            if type(step) is BackwardStep and len(step.heads) > 1 and not step.above and not step.below:
                heads = _Heads(step, steps[:k])  # (a failed leaf is reached from failed heads only)
                stops = tuple(s for s in stops if s not in heads.apart and s not in {e[0] for e in step.leaves})
            self.plan.append((step, runner, stops, kept, tuple(step.writes), heads))

    def __call__(self, env: list[Any], aliases: dict[Any, Any], failed: dict[int, Failure], device: Device) -> None:
        with torch.no_grad():
            for step, runner, stops, kept, writes, heads in self.plan:
                failure = None
                for s in stops:
                    failure = failed.get(s)
                    if failure is not None:
                        break
                if failure is not None and type(runner) is CutBefore:  # the graph is cut there all the same
                    runner.detach(env, aliases)
                if failure is None and heads is not None and any(s in failed for s in heads.apart):
                    still = [(s, failed[s]) for s in kept if s in failed]
                    failure, lost = heads.run(env, aliases, failed, self.slots, device)
                    if failure is None:
                        for w in writes:
                            failed.pop(w, None)
                        failed.update(lost)
                        failed.update(still)
                        continue
                elif failure is None:
                    still = [(s, failed[s]) for s in kept if s in failed]
                    target = step.target if type(step) is KernelStep else None
                    if target is not None and env[target.slot] is None:  # a whole write of a slot whose
                        slot = self.slots[target.slot]  # producer was skipped: a new tensor, as eagerly
                        env[target.slot] = torch.empty(slot.shape, dtype=slot.dtype.torch,
                                                       device=slot.device.torch_device)  # fmt: skip
                    try:
                        runner(env, aliases)
                    except Exception as error:  # its own failure, as its op's step by step
                        failure = _failures.new_named(step.name, device, error)
                    else:
                        for w in writes:
                            failed.pop(w, None)
                        failed.update(still)
                        continue
                for w in writes:
                    failed[w] = failure


def stopped(reads: Sequence[int], storages: list[Any], shared: Any) -> bool:
    """Whether a segment must run step by step: a storage it reads failed, or (a later piece of a cut
    backward) a piece before it in this call ran step by step with a failure."""
    for s in reads:
        if storages[s].failure is not None:
            return True
    return shared is not None and bool(shared[1].get(KEY))


def run(seg: Any, storages: list[Any], shared: Any, tensors: Sequence[Any]) -> None:
    """The segment's engine op, step by step: each storage it writes gets its value or its failure."""
    stepwise: Stepwise = seg.stepwise
    env, aliases = ([None] * stepwise.size, {}) if shared is None else shared
    for s, t in zip(seg.loads, tensors):
        env[s] = t
    failed: dict[int, Failure] | None = aliases.get(KEY)
    if failed is None:
        failed = aliases[KEY] = {}
    for s in (*seg.reads, *seg.writes):
        f = storages[s].failure
        if f is not None:
            failed[s] = f
    stepwise(env, aliases, failed, seg.device)
    for s in seg.publish:
        if s not in failed:
            t = env[s]
            storages[s].tensor = t.detach() if t.requires_grad else t
    for s in seg.writes:
        storages[s].failure = failed.get(s)


def succeeded(writes: Sequence[int], storages: list[Any]) -> None:
    """The fast path ran: what it overwrote holds no failure any more (rule 2; the engine leaves a
    bulk op's writes to it)."""
    for s in writes:
        storage = storages[s]
        if storage.failure is not None:
            storage.failure = None
