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
    piece 0:  grad(loss)                 w.r.t. bucket 0's leaves + frontier 0 (cut)
    piece 1:  grad(frontier 0 (kept), g0) w.r.t. bucket 1's leaves + frontier 1 (cut)
    piece 2:  grad(frontier 1 (kept), g1) w.r.t. bucket 2's leaves

``c_j`` is the first recorded step that uses a leaf of buckets ``0..j``;
*frontier j* the recorded results made before ``c_j`` and used from ``c_j``
on -- every path of gradients from region ``j`` down crosses it.

The torch graph itself is cut there (:class:`CutBefore`): as the forward
runs, just before ``c_j``, each tensor of frontier ``j`` is *kept* (in the
chain's aliases, under the cut and its slot) and replaced in the
environment by ``t.detach().requires_grad_()``, its *cut* tensor, so the
steps from ``c_j`` on -- and only those: a use before ``c_j`` reads the kept
one -- build their graph on the cut tensors. Piece ``j`` then computes the
exact gradients of the cut tensors of frontier ``j`` (its graph stops at
them) and hands each on with its kept tensor; piece ``j + 1`` runs
``torch.autograd.grad`` from the kept tensors, seeded with those gradients,
with respect to its bucket's leaves and the cut tensors of frontier
``j + 1``. The pieces' graphs are disjoint, so each runs every node of its
region once and frees it (no ``retain_graph`` between pieces), and the sum
of them is the whole backward, term for term:

- a skip connection over two cuts (a slot in frontiers ``j`` and ``j - 1``)
  is cut at each in turn: its cut tensor of ``c_j`` is the kept tensor of
  ``c_{j-1}``, both an output and an input of piece ``j`` (its gradient is
  the seed plus what region ``j`` adds), so the paths over ``c_{j-1}`` and
  those inside region ``j`` are each counted once;
- a frontier holding ``x0`` and ``h1 = f(x0)``: region ``j + 1``'s graph
  from the kept ``h1`` runs through ``f`` to the cut ``x0``, and the seed of
  the kept ``x0`` adds once -- where, without the cut, ``torch.autograd.grad``
  would give the frontier's ``x0`` its whole gradient (through ``h1`` too)
  and the piece below, started from both, count the path through ``h1`` twice.

Each piece after the first is an engine op of its own on the device's
compute lane (``_segments.py``: the segments of one *chain* share their
environment), ordered by a var all pieces of the device write. The bucket's
sum reads what piece ``j`` wrote, and so starts once it is done. Replay,
the compiled stages (``_staged.py``: the driver cuts between the stages it
starts at the cut points), the warm-up on clones and the step-by-step path
(``_failed.py``: the cut is made whether or not the step at it runs) all
cut the same way.

Buckets whose leaves are used at or above the region of the bucket before
them (a layer whose weight and bias fall in two buckets) join that bucket's
piece. The cut is made only where every bucket is reached, each frontier
holds a tensor and the heads are made in region 0 (the first piece starts
from them); otherwise the backward stays one piece.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from autopar._capture._trace import INTERNAL, BackwardStep, KernelStep, Operand

CUT, GRAD = "cut", "grad"  # keys of the chain's aliases: a cut's kept and cut tensors; a gradient passed on


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
    if any(made.get(h.slot, math.inf) < points[0] for h in whole.heads):
        return None  # a head made above the first cut: the first piece, started from it, would miss the rest
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


class CutBefore:
    """The runner of the step at a cut point, the graph cut before it (module note): each tensor of
    the frontier kept, under ``(CUT, point, slot)`` in the chain's aliases, with its cut tensor, which
    the environment holds from here on."""

    __slots__ = ("inner", "point", "frontier")

    def __init__(self, inner: Any, point: int, frontier: tuple[int, ...]) -> None:
        self.inner = inner
        self.point = point
        self.frontier = frontier

    def detach(self, env: list[Any], aliases: dict[Any, Any]) -> None:
        for s in self.frontier:
            kept = env[s]
            if kept is not None and kept.requires_grad:  # (None: not made, its producer failed: _failed.py)
                cut = env[s] = kept.detach().requires_grad_()
                aliases[(CUT, self.point, s)] = (kept, cut)

    def __call__(self, env: list[Any], aliases: dict[Any, Any]) -> None:
        self.detach(env, aliases)
        self.inner(env, aliases)
