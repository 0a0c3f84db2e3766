"""One trace made runnable: its segments with their backends, and what each call resolves and pushes.

A call of a traced signature resolves every storage-backed slot
(``_segments.py``'s note) -- arguments from the call, closed-over storages as
traced, each leaf's current ``.grad`` (made, as zeros, where ``zero_grad``
dropped it) and a fresh storage for each internal slot the engine must see
-- then pushes one engine op per segment, as one group (all of them or, under
Ctrl-C, none: ``engine/_group.py``), and returns the function's results as
arrays over those storages. Nothing is computed at the call: shapes and
dtypes were fixed by the trace.
"""

from __future__ import annotations

from functools import partial
from typing import Any


from autopar._capture import _backends, _cuts, _failed, _joint, _leaves, _staged
from autopar._capture._segments import Segment, has_opaque, has_random, split
from autopar._capture._trace import (ARG, CONST, GRAD, INTERNAL, BackwardStep, KernelStep, OpaqueStep, Slot, Tracer,
                                     requirement)
from autopar.arrays import _eager
from autopar.arrays._array import NDArray, make
from autopar.arrays._autograd import Leaf
from autopar.arrays._views import NumpyStorage, Storage
from autopar.engine import _failures
from autopar.engine._group import atomic

STALE = object()  # a call whose leaves' .grad changed layout, or whose arguments alias closed-over arrays otherwise than at the trace: trace again
FAILED = object()  # a call that would read an array already failed: run step by step (``Program.run``)


def _view_key(view: Any) -> Any:
    return None if view is None else (view.offset, view.shape, view.strides)


class Program:
    """A trace of ``name`` for one signature, cut into segments (``_segments.py``)."""

    def __init__(self, name: str, tracer: Tracer, outputs: Any, out_arrays: list[Any], mode: str,
                 pinned: dict[int, Storage] | None = None) -> None:  # fmt: skip
        self.name = name
        # an argument that was also a closed-over array at the trace: its slot stands for both, so only
        # a call with that same array may replay (``_closure.closed_over``); and a call whose argument is
        # a closed-over array the trace saw apart (a CONST slot) is traced again, with the two as one
        self.pinned = pinned or {}
        # (only where gradients are part of the trace: elsewhere results carry no record either way)
        grads = any(type(s) is BackwardStep or type(s) is KernelStep and s.grad for s in tracer.steps)
        self.watch = list(tracer.watch.values()) if grads else []
        self.slots: list[Slot] = tracer.slots
        for slot in self.slots:  # the trace's own results: not kept alive (their tensors) by the cache
            if slot.kind == INTERNAL and slot.dtype is not None:
                slot.var = None
        self.steps = tracer.steps
        self.outputs = outputs  # the result's structure (``_function._rebuild``)
        self.out_arrays = out_arrays  # per returned array: ("arg", position) or ("slot", Operand)
        returned = {o.slot for kind, o in out_arrays if kind == "slot" and self.slots[o.slot].kind == INTERNAL}
        self.segments: list[Segment] = split(name, self.slots, self.steps, returned)
        self.read_slots = sorted({r for seg in self.segments for r in seg.reads})
        self.kernels = sum(1 for s in self.steps if type(s) is KernelStep)
        self.calls = 0
        self.externals = [s for s in self.slots if s.kind != INTERNAL]
        self.consts = {id(s.source) for s in self.externals if s.kind == CONST}
        # arrays made from data inside the function that it writes or returns: new at each call, as eagerly
        changed = {w for step in self.steps for w in step.writes} | {o.slot for kind, o in out_arrays if kind == "slot"}
        self.literals = [s for s in self.externals if s.kind == CONST and s.literal is not None and s.index in changed]
        counts: dict[int, int] = {}
        for seg in self.segments:
            counts[seg.chain] = counts.get(seg.chain, 0) + 1
        self.chained = {chain: n > 1 for chain, n in counts.items()}
        self.fresh = sorted({s for seg in self.segments for s in (*seg.reads, *seg.writes)
                             if self.slots[s].kind == INTERNAL})  # fmt: skip
        self.opaque = any(has_opaque(self.steps, seg) for seg in self.segments)
        # segments holding an op that reads every device's array (a sum on CPU devices of one process)
        self.between_devices = {id(seg) for seg in self.segments for i in seg.steps
                                if getattr(getattr(self.steps[i], "fn", None), "between_devices", False)}  # fmt: skip
        self.grad_checks = [(slot, g, _view_key(g.view)) for step in self.steps if type(step) is BackwardStep
                            for slot, g, _ in step.leaves]  # fmt: skip
        self.cuts: dict[int, dict[int, tuple[int, ...]]] = {}  # chain -> its cut points' frontiers (_cut_frontiers)
        for seg in self.segments:
            for i in seg.steps:
                step = self.steps[i]
                if type(step) is BackwardStep and step.point >= 0:
                    self.cuts.setdefault(seg.chain, {})[step.point] = step.below
        why_not = _backends.compiler_available() if mode != "replay" else ""
        for seg in self.segments:
            runners: list[_backends.Runner] = []
            seg_steps = [self.steps[i] for i in seg.steps]
            frontiers = self._cut_frontiers(seg)
            for i in seg.steps:
                step = self.steps[i]
                if type(step) is KernelStep and i in frontiers:  # the graph is cut before it (_cuts.py)
                    runners.append(_cuts.CutBefore(_backends.kernel_runner(step, self.slots), i, frontiers[i]))
                elif type(step) is KernelStep:
                    runners.append(_backends.kernel_runner(step, self.slots))
                elif type(step) is BackwardStep:
                    runners.append(_leaves.backward_runner(step, self.slots))
                else:
                    assert type(step) is OpaqueStep
                    runners.append(_backends.opaque_runner(step, self.slots))
            seg.loads = tuple(s for s in seg.loads if self.slots[s].dtype is not None)
            fn = _backends.body(runners, len(self.slots), seg.loads, seg.publish)
            seg.stepwise = _failed.Stepwise(seg_steps, runners, self.slots)
            kind, reason = "replay", ""
            if mode != "replay":
                kernels = sum(1 for i in seg.steps if type(self.steps[i]) is KernelStep)
                if why_not:
                    reason = why_not
                elif has_opaque(self.steps, seg):
                    reason = "it holds an engine op pushed directly (an optimizer's fused update)"
                elif self._is_piece(seg):
                    reason = ""  # a later piece of a cut backward: torch.autograd.grad, in the head's graph
                elif not self._cuts_inside(seg):
                    reason = "its backward is cut at gradient buckets where its forward was recorded elsewhere"
                elif has_random(self.steps, seg):
                    reason = "it draws random numbers (torch.compile's generator differs from eager's)"
                elif mode != "compile" and kernels < 2:
                    reason = "one kernel: nothing to fuse"
                else:
                    kind = "compile"
            make = fallback = None
            if kind == "compile":
                cuts: dict[int, _backends.Runner] = {k: r.detach for k, r in enumerate(runners)
                                                     if type(r) is _cuts.CutBefore}  # fmt: skip
                make = _staged.make(seg_steps, self.slots, len(self.slots), seg.loads, seg.publish, name,
                                    seg.device.kind == "cuda", cuts)  # fmt: skip
                if seg.device.kind == "cpu" and not _trains(self.steps, seg):
                    make = partial(make, cpp=False)  # (_staged's note: the C++ wrapper pays in training steps)
                elif seg.device.kind == "cpu":
                    fallback = partial(make, cpp=False)
                    if not cuts and _joint.fits(seg_steps):  # a forward and its backward: one graph, of its replay
                        make = _joint.make(fn, make)
            seg.run = _backends.Backend(fn, kind, make, choose=mode == "fastest", fallback=fallback)
            seg.run.reason = reason
        if any(seg.run.kind == "compile" for seg in self.segments):
            _backends.load_compiler()  # (here, before lanes compile; not where every segment replays)

    # -- a backward cut at gradient buckets (``_cuts.py``) ---------------------------------------------------

    def _is_piece(self, seg: Segment) -> bool:
        """A later piece of a cut backward: its engine op runs ``torch.autograd.grad`` in its head's graph."""
        return self.segments[seg.chain] is not seg

    def _cut_frontiers(self, seg: Segment) -> dict[int, tuple[int, ...]]:
        """The trace steps before which the torch graph of the chain is cut, each with the frontier it
        cuts (the slots a piece stops at): a compiled forward is cut into stages there too."""
        return self.cuts.get(seg.chain, {})

    def _cuts_inside(self, seg: Segment) -> bool:
        return set(self._cut_frontiers(seg)) <= set(seg.steps)

    def _kind(self, seg: Segment) -> str:
        return self.segments[seg.chain].run.kind if self._is_piece(seg) else seg.run.kind

    # -- description ------------------------------------------------------------------------------------

    @property
    def backend(self) -> str:
        """``"compile"``, ``"replay"``, or ``"compile+replay"`` when segments differ."""
        kinds = sorted({self._kind(seg) for seg in self.segments}) or ["replay"]
        return "+".join(kinds)

    @property
    def reasons(self) -> list[str]:
        return sorted({seg.run.reason for seg in self.segments if seg.run.reason})

    def label(self, seg: Segment) -> str:
        return f"{self.name} (captured: {seg.ops} ops, {self._kind(seg)})"

    # -- a call -------------------------------------------------------------------------------------------

    def resolve(self, arrays: list[NDArray]) -> list[Any] | object:
        for ref, ag, req in self.watch:  # a closed-over array frozen or unfrozen since the trace
            a = ref()
            if a is not None and (a._ag is not ag or requirement(a._ag) != req):
                return STALE
        for i, storage in self.pinned.items():
            if arrays[i]._storage is not storage:
                return STALE
        storages: list[Any] = [None] * len(self.slots)
        for slot in self.externals:
            if slot.kind == ARG:
                storage = storages[slot.index] = arrays[slot.source]._storage
                if id(storage) in self.consts and slot.source not in self.pinned:
                    return STALE
            elif slot.kind == CONST:
                storages[slot.index] = slot.source
        for slot in self.literals:
            storages[slot.index] = type(slot.source)(slot.shape, slot.dtype, slot.device, slot.literal.clone(), None)
        remade: dict[int, NDArray] = {}  # id(leaf) -> its new .grad, set only once the call is known to replay
        leaves: list[Leaf] = []
        for slot in self.externals:
            if slot.kind != GRAD:
                continue
            owner = self.slots[slot.source]
            ag = getattr(arrays[owner.source], "_ag", None) if owner.kind == ARG else owner.leaf
            if type(ag) is not Leaf:
                return STALE
            grad = ag.grad if ag.grad is not None else remade.get(id(ag))
            if grad is None:  # dropped (zero_grad): made again, zeros when the segment loads it (_run_segment)
                grad = remade[id(ag)] = make(ag.shape, ag.dtype, ag.device)
                leaves.append(ag)
            storages[slot.index] = grad._storage
        for leaf_slot, g, view in self.grad_checks:
            owner = self.slots[leaf_slot]
            record = arrays[owner.source]._ag if owner.kind == ARG else owner.leaf
            grad = record.grad  # type: ignore[union-attr]
            grad = grad if grad is not None else remade.get(id(record))
            if grad is None or grad._storage is not storages[g.slot] or _view_key(grad._view) != view or \
                    self.opaque and grad._storage is not self.slots[g.slot].var:
                return STALE  # (nothing set yet: the trace's eager run finds .grad as the caller left it)
        for ag in leaves:
            ag.grad = remade[id(ag)]
        for s in self.fresh:
            slot = self.slots[s]
            storages[s] = (NumpyStorage if slot.npmode else Storage)(slot.shape, slot.dtype, slot.device)
        return storages

    def run(self, arrays: list[NDArray]) -> Any:
        """Push this call's segments; return its results (or ``STALE``)."""
        storages = self.resolve(arrays)
        if storages is STALE:
            return STALE
        assert isinstance(storages, list)
        for r in self.read_slots:
            # A failure already recorded is seen here, and the call runs eagerly, step by step; one recorded
            # later (its op still pending) is met by the segment's op, which then runs step by step (_failed.py)
            if storages[r].failure is not None:
                return FAILED
        self._push(storages)
        self.calls += 1
        results = []
        for kind, where in self.out_arrays:
            if kind == "arg":
                results.append(arrays[where])
                continue
            storage = storages[where.slot]
            view = where.view
            shape = storage.shape if view is None else view.shape
            results.append(make(shape, storage.dtype, storage.device, storage, view))
        return results

    @atomic("a captured call")
    def _push(self, storages: list[Any]) -> None:
        shared: dict[int, Any] = {}  # chain -> the environment its segments share (this call's)
        for seg in self.segments:
            if seg.device.kind == "cuda":
                for s in seg.publish:
                    storages[s].lane = seg.lane
            env = None
            if self.chained[seg.chain]:
                env = shared.get(seg.chain)
                if env is None:
                    env = shared[seg.chain] = ([None] * len(self.slots), {})
            run = partial(_run_segment, seg, storages, env)
            if id(seg) in self.between_devices:
                run.between_devices = True  # type: ignore[attr-defined]  # (the profiler's traffic: _traffic.py)
            _eager.push(run, tuple(storages[s] for s in seg.reads),
                        tuple(storages[s] for s in seg.writes), seg.device, self.label(seg), seg.lane,
                        bulk=True)  # fmt: skip


def _trains(steps: list[Any], seg: Segment) -> bool:
    """Whether a segment records gradients or runs a backward (a training step's forward and backward)."""
    return any(type(steps[i]) is BackwardStep or type(steps[i]) is KernelStep and steps[i].grad for i in seg.steps)


def _run_segment(seg: Segment, storages: list[Any], shared: Any) -> None:
    """The engine op of one segment: preload, run the backend, publish what it made (or, where a read
    failed, its steps one by one: ``_failed.py``)."""
    tensors = []
    for s in seg.loads:
        st = storages[s]
        t = st.tensor
        if t is None:  # a .grad made by this call, or an array its failed producer never made: zeros,
            t = st.base().zero_()  # made here, on the lane's stream (and so ordered on a GPU)
        tensors.append(t)
    if _failures.seen and _failed.stopped(seg.reads, storages, shared):  # a read failed: step by step
        _failed.run(seg, storages, shared, tensors)
        return
    out = seg.run(*tensors, shared=shared, storages=storages)
    for s, t in zip(seg.publish, out):
        storages[s].tensor = t.detach() if t.requires_grad else t
    if _failures.seen:  # pushed as a bulk op: the engine leaves the outcome of its writes to it
        _failed.succeeded(seg.writes, storages)


__all__ = ["FAILED", "Program", "STALE"]
