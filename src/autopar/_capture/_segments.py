"""A trace cut into engine ops: one per device and lane segment, and what each reads and writes.

Design note
-----------
Steps are placed in order. A step joins the latest segment of its own
(device, lane) unless it depends on a segment made after that one -- it
reads a slot a later segment wrote, or writes a slot a later segment read
or wrote -- and otherwise opens a new segment. So a segment only ever
depends on segments made before it, and pushing the segments in order
gives the engine the same order of reads and writes that step-by-step
execution has: independent work on two devices is two engine ops that run
side by side, and a copy between them is a third, on its copy lane. A step
joins only where that holds nothing back that eager execution would have
started (``_joins``): a segment never comes to wait for work that is known
to finish after work it waits for already (a later piece of backward), and
a step never waits behind a segment for something it does not need (what
a segment waits for counts for every segment that waits for it, so each
segment's ``ancestors`` grow as steps join). A step the latest segment
refuses may join an earlier segment of its (device, lane), where nothing
after that segment touches what it touches (every pair of steps that share
a slot keeps the order of their segments): two chains of steps that wait
for two different copies are two engine ops, not one per step.

A recorded forward is the exception: torch's graph lives in one segment's
environment, and its ``backward`` runs there (``_backends.py``), so a
recorded step, and any step whose lane's latest segment holds recorded
steps, joins by the first rule alone -- the latest, unless it depends on a
later segment. Where that splits a
graph (a copy made inside the recorded block, read after it began), the
backward over it is refused at the trace: run in one segment, it would find
no path to the leaves used in the other, and their gradients would be lost.

A slot is *storage-backed* when the engine must see it: an argument's,
a closed-over or ``.grad`` storage (every call resolves those), or an
internal slot that another segment reads or the function returns (each call
makes a fresh storage for it). Other internal slots live only in their
segment's environment. A segment's engine op reads the storage-backed
slots it reads before it has overwritten them whole (a covering write
reads nothing: contract, failures rule 2) and writes those it writes; a
failure inside it fails all of those writes, and nothing else. A read that
has failed does not stop it: it runs its steps one by one (``_failed.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from autopar._capture._trace import INTERNAL, BackwardStep, KernelStep, OpaqueStep, Operand, Slot, Step
from autopar.devices import Device
from autopar.errors import CaptureError


@dataclass(slots=True)
class Segment:
    device: Device
    lane: str
    steps: list[int] = field(default_factory=list)
    reads: tuple[int, ...] = ()  # storage-backed slots the engine op reads
    writes: tuple[int, ...] = ()  # ... and writes
    loads: tuple[int, ...] = ()  # slots preloaded into the environment from their storages
    publish: tuple[int, ...] = ()  # internal storage-backed slots it makes, stored at its end
    ops: int = 0
    run: Any = None  # the backend (``_backends.Backend``)
    chain: int = -1  # segments of one chain share one environment (a backward cut into pieces: ``_cuts.py``)
    stepwise: Any = None  # its steps one by one, for a call that meets a failed read (``_failed.Stepwise``)


def _produced(step: Step) -> tuple[int, ...]:
    return step.outs if type(step) is KernelStep else ()


def _joins(waits: set[int], here: int, before: set[int], ancestors: list[set[int]]) -> bool:
    """Whether a step that waits for the segments ``waits`` may join segment ``here``, which waits for
    ``before`` (module note): the step must wait for all the segment waits for (or for the segment:
    joining then holds nothing back), and whatever it adds for the segment to wait for must not come
    after something the segment waits for already -- else a gradient bucket's sum would join the sum
    of an earlier bucket and hold it until the later piece of backward ends (apache/mxnet#14200).
    What it adds alongside (the other device's piece of the same bucket) may join: one engine op
    is cheaper than two, where neither waits for the other's lateness."""
    if not (here in waits or before <= waits):
        return False
    settled = before | {here}
    return all(not (ancestors[w] & settled) for w in waits - settled)


def _place(step: Step, latest: int | None, deps: set[int], waits: set[int], recorded: set[int],
           ancestors: list[set[int]], mine: Sequence[int]) -> int | None:  # fmt: skip
    """The segment of ``step``'s (device, lane) it joins (module note), or None for a new one."""
    if latest is None or any(d > latest for d in deps):
        return None
    if latest in recorded or type(step) is KernelStep and step.grad:  # a torch graph stays in one segment
        return latest
    floor = max(deps, default=-1)  # nothing the step depends on may come after the segment it joins
    for here in reversed(mine):
        if here < floor:
            break
        if _joins(waits, here, ancestors[here], ancestors):
            return here
    return None


def split(name: str, slots: list[Slot], steps: list[Step], returned: set[int]) -> list[Segment]:
    """Cut ``steps`` into segments (module note); ``returned``: the internal slots the function returns."""
    segments: list[Segment] = []
    latest: dict[tuple[Device, str], int] = {}
    writer: dict[int, int] = {}  # slot -> the segment that last wrote it
    readers: dict[int, set[int]] = {}  # slot -> segments that read it since
    place: list[int] = []
    graph: dict[Device, int] = {}  # device -> the segment of its latest backward's first piece
    ancestors: list[set[int]] = []  # per segment: the segments it waits for, transitively
    of_key: dict[tuple[Device, str], list[int]] = {}  # (device, lane) -> its segments, oldest first
    recorded: set[int] = set()  # segments that hold recorded steps (a torch graph)
    made_by: dict[int, int] = {}  # a recorded result -> the chain of the segment that made it
    split_graph: set[int] = set()  # recorded results whose graph spans two chains
    for i, step in enumerate(steps):
        key = (step.device, step.lane)
        deps = {writer[s] for s in step.reads if s in writer}
        for s in step.writes:
            if s in writer:
                deps.add(writer[s])
            deps.update(readers.get(s, ()))
        waits = set(deps).union(*(ancestors[d] for d in deps))
        here = latest.get(key)
        if type(step) is BackwardStep and step.cut:  # a later piece: its own engine op, in the same graph
            root = graph[step.device]
            here = len(segments)
            segments.append(Segment(step.device, step.lane, chain=segments[root].chain))
            ancestors.append(set())
            latest[key] = here
            of_key.setdefault(key, []).append(here)
        elif type(step) is BackwardStep:  # the torch graph lives in the segment of the recorded steps
            grads = {writer[h.slot] for h in step.heads if h.slot in writer}
            if len(grads) == 1:
                here = grads.pop()
                if segments[here].device != step.device or any(d > here for d in deps):
                    here = None
            else:
                here = None
            if here is None or any(h.slot in split_graph for h in step.heads):
                raise CaptureError(f"capture({name}): backward over a graph that crosses devices or copies inside "
                                   f"the captured function is not captured; compute each device's loss on its own "
                                   f"device (parallel.DataParallel), make the copies before autograd.record(), or "
                                   f"call the function without capture")  # fmt: skip
            graph[step.device] = here
        else:
            here = _place(step, here, deps, waits, recorded, ancestors, of_key.get(key, ()))
            if here is None:
                here = len(segments)
                segments.append(Segment(step.device, step.lane, chain=here))
                ancestors.append(set())
                latest[key] = here
                of_key.setdefault(key, []).append(here)
        added = waits - ancestors[here] - {here}
        if added:  # what the segment now waits for, so does every segment that waits for it
            for later in range(here, len(segments)):
                if later == here or here in ancestors[later]:
                    ancestors[later] |= added
        if type(step) is KernelStep and step.grad:
            recorded.add(here)
            chain_ = segments[here].chain
            torn = any(s in split_graph or made_by.get(s, chain_) != chain_ for s in
                       (step.args[p].slot for p in step.positions if type(step.args[p]) is Operand))  # fmt: skip
            for o in step.outs:
                made_by[o] = chain_
                (split_graph.add if torn else split_graph.discard)(o)
        segments[here].steps.append(i)
        place.append(here)
        for s in step.reads:
            readers.setdefault(s, set()).add(here)
        for s in step.writes:
            writer[s] = here
            readers[s] = set()
    # which internal slots cross segments
    made_in: dict[int, int] = {}
    for i, step in enumerate(steps):
        for s in _produced(step):
            made_in[s] = place[i]
    # synthetic vars (dtype None: the order of a cut backward's pieces) are always the engine's
    backed = {s.index for s in slots if s.kind != INTERNAL or s.dtype is None} | (returned & set(made_in))
    chain = [segments[p].chain for p in place]
    for i, step in enumerate(steps):
        for s in step.reads | step.writes:
            if s in made_in and segments[made_in[s]].chain != chain[i]:
                backed.add(s)
    for seg in segments:
        reads: dict[int, None] = {}
        writes: dict[int, None] = {}
        touched: set[int] = set()
        made: set[int] = set()
        for i in seg.steps:
            step = steps[i]
            for s in step.reads:
                if s in backed and s not in touched and s not in made:
                    reads[s] = None
                touched.add(s)
            for s in step.writes:
                if s in backed:
                    writes[s] = None
                touched.add(s)
            made.update(_produced(step))
            seg.ops += 1 if type(step) is not BackwardStep else len(step.leaves)
        seg.reads = tuple(reads)
        seg.writes = tuple(writes)
        seg.loads = tuple(s for s in dict.fromkeys([*reads, *writes]) if s not in made)
        seg.publish = tuple(s for s in writes if s in made)
    return segments


def has_opaque(steps: list[Step], seg: Segment) -> bool:
    return any(type(steps[i]) is OpaqueStep for i in seg.steps)


def has_random(steps: list[Step], seg: Segment) -> bool:
    return any(type(steps[i]) is KernelStep and steps[i].state for i in seg.steps)  # type: ignore[union-attr]
