"""Cutting a captured backward at gradient buckets, so the sums start while backward runs.

Design note
-----------
A captured backward is one ``torch.autograd.grad`` over the graph its
segment recorded (``_backends.py``), so every gradient is ready only when
the whole backward is. A data-parallel step wants the last layers'
gradients summed across devices while the first layers' are still being
computed (DDP's buckets; ``parallel/_step.py``) -- the thing MXNet's bulked
segments lost (apache/mxnet#14200). So ``DataParallel.step`` hands its
buckets to ``backward(cuts=...)``, last layers first, and here one device's
backward becomes one *piece* per bucket::

    forward steps, in trace order:   ....[ region 2 ]....[ region 1 ]....[ region 0 ]  loss
    cut points:                           c2               c1               c0
    piece 0:  grad(loss)            w.r.t. bucket 0's leaves + frontier 0
    piece 1:  grad(frontier 0, g0)  w.r.t. bucket 1's leaves + frontier 1
    piece 2:  grad(frontier 1, g1)  w.r.t. bucket 2's leaves

``c_j`` is the first recorded step that uses a leaf of buckets ``0..j``;
*frontier j* the recorded results made before ``c_j`` and used from ``c_j``
on -- every path of gradients from region ``j`` down crosses it. Piece
``j`` starts from frontier ``j - 1`` with the gradients piece ``j - 1``
left for it, so torch's engine runs each backward node once over the
pieces together, as it would in one call. Each piece after the first is an
engine op of its own on the device's compute lane, in the same torch
graph (``_segments.py``: the segments of one *chain* share their
environment), ordered by a var all pieces of the device write. The
bucket's sum reads what piece ``j`` wrote, and so starts once it is done.

Buckets whose leaves are used at or above the region of the bucket before
them (a layer whose weight and bias fall in two buckets) join that bucket's
piece. The cut is made only where it is exact -- frontiers not shared by
two cuts (a skip connection over a cut), no frontier tensor made from
another of its frontier, every bucket reached -- otherwise the backward
stays one piece. (``torch.autograd.grad`` gives a frontier tensor its whole
gradient, through the tensors made from it too: started from both, the
piece below would count those paths twice.)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from autopar._capture._trace import INTERNAL, BackwardStep, KernelStep, Operand


def cut(tracer: Any, whole: BackwardStep, cuts: Any) -> list[BackwardStep] | None:
    """``whole`` as one piece per bucket of ``cuts`` (groups of leaf records), or None."""
    entries = {slot: entry for entry in whole.leaves for slot in (entry[0],)}
    groups: list[list[int]] = []
    for group in cuts:
        slots = [tracer.leaves[id(leaf)] for leaf in group if tracer.leaves.get(id(leaf)) in entries]
        if slots:
            groups.append(list(dict.fromkeys(slots)))
    if len(groups) < 2 or sum(len(g) for g in groups) != len(entries):
        return None
    start = max((i for i, s in enumerate(tracer.steps) if type(s) is BackwardStep and s.device == whole.device),
                default=-1) + 1  # fmt: skip
    steps = [(i, s) for i, s in enumerate(tracer.steps[start:], start)
             if type(s) is KernelStep and s.grad and s.device == whole.device]  # fmt: skip
    uses: dict[int, list[int]] = {}
    for i, s in steps:
        for pos in s.positions:
            a = s.args[pos]
            if type(a) is Operand:
                uses.setdefault(a.slot, []).append(i)
    # pieces, top first: a bucket whose leaves are used at or above the piece before it (a layer whose
    # weight and bias fall in two buckets) joins that piece, and so on up
    pieces_: list[tuple[list[int], int, int]] = []  # (leaf slots, first use, last use)
    for g in groups:
        if any(not uses.get(slot) for slot in g):
            return None
        lo, hi = min(min(uses[slot]) for slot in g), max(max(uses[slot]) for slot in g)
        while pieces_ and hi >= pieces_[-1][1]:
            above_slots, above_lo, above_hi = pieces_.pop()
            g, lo, hi = above_slots + g, min(lo, above_lo), max(hi, above_hi)
        pieces_.append((g, lo, hi))
    if len(pieces_) < 2:
        return None
    groups = [g for g, _, _ in pieces_]
    points = [lo for _, lo, _ in pieces_]
    made = {o: i for i, s in steps for o in s.outs}
    frontiers: list[tuple[int, ...]] = []
    for point in points[:-1]:
        found = sorted({s.args[pos].slot for i, s in steps if i >= point for pos in s.positions
                        if type(s.args[pos]) is Operand and made.get(s.args[pos].slot, math.inf) < point})  # fmt: skip
        if not found:
            return None
        frontiers.append(tuple(found))
    for upper, lower in zip(frontiers, frontiers[1:]):
        if set(upper) & set(lower):
            return None
    if any(_made_from_another(frontier, steps) for frontier in frontiers):
        return None
    order = tracer._new(INTERNAL, object(), (), None, whole.device, None)  # orders the pieces of this device
    pieces = []
    for j, g in enumerate(groups):
        piece = replace(whole, heads=whole.heads if j == 0 else (), head_grads=whole.head_grads if j == 0 else (),
                        leaves=tuple(entries[slot] for slot in g), above=frontiers[j - 1] if j else (),
                        below=frontiers[j] if j < len(frontiers) else (), cut=j > 0, reads=set(), writes=set(),
                        point=points[j] if j < len(frontiers) else -1)  # fmt: skip
        piece.reads = {order, *piece.above, *piece.below}
        piece.writes = {order}
        pieces.append(piece)
    return pieces


def _made_from_another(frontier: tuple[int, ...], steps: list[tuple[int, KernelStep]]) -> bool:
    """Whether a tensor of ``frontier`` is made, through recorded steps, from another of it (module note)."""
    inside = set(frontier)
    reach: dict[int, set[int]] = {}  # a recorded result -> the frontier tensors it is made from
    for _, s in steps:
        found: set[int] = set()
        for pos in s.positions:
            a = s.args[pos]
            if type(a) is Operand:
                found |= reach.get(a.slot, set()) | ({a.slot} & inside)
        for o in s.outs:
            if found & (inside - {o}) and o in inside:
                return True
            reach[o] = found
    return False
