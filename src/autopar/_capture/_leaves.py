"""A segment's leaves and their gradients: the leaves' aliases, and the backward that writes the gradients.

Design note
-----------
A recorded step reads a leaf through its *alias* (``aliases[slot]``): the
leaf's tensor detached and marked ``requires_grad``, made by the first step
that reads it, so the segment's torch graph starts there; a
:class:`~autopar._capture._trace.BackwardStep` is one ``torch.autograd.grad``
over that graph, its gradients written (or added) into each leaf's ``.grad``
through its view.

Two things here are for several lanes at once. A compiled segment keeps a
leaf's alias with the leaf's array from one call to the next
(``kept_alias``), and a backward writes its plain gradients in one call
(one per run of views that do not overlap: ``_clashes``). Each ``detach``,
each copy and each tensor dropped releases the interpreter lock, and a lane
waiting for it takes it -- on two CPU devices both lanes start a
data-parallel step's segments at once. The preamble of cpu:0's, from its
start to its first compiled graph, took 390 us before, 147 us with the
aliases kept (123 us alone).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from autopar.arrays import _views
from autopar._capture._cuts import CUT, GRAD
from autopar._capture._trace import BackwardStep, Slot


def _alias(env: list[Any], aliases: dict[Any, Any], slot: int) -> Any:
    t = aliases.get(slot)
    if t is None:
        t = aliases[slot] = env[slot].detach().requires_grad_()
    return t


def kept_alias(env: list[Any], aliases: dict[Any, Any], storages: Sequence[Any] | None, slot: int) -> Any:
    """``_alias``, kept with the leaf's array (its storage's ``leaf``) from one call to the next while the
    array keeps its tensor, at the same memory (``w.torch().set_(...)`` points the tensor elsewhere): each
    ``detach`` and each tensor dropped hands the interpreter lock to another lane that waits for it, and a
    captured step's leaves are the same arrays call after call."""
    t = aliases.get(slot)
    if t is not None:
        return t
    base = env[slot]
    storage = storages[slot] if storages is not None else None
    kept = getattr(storage, "leaf", None)
    if kept is not None and kept[0]() is base and kept[1].data_ptr() == base.data_ptr():
        t = kept[1]
    else:
        t = base.detach().requires_grad_()
        if storage is not None:
            storage.leaf = (weakref.ref(base), t)
    aliases[slot] = t
    return t


def _copy_all(targets: list[Any], values: list[Any], held: list[int]) -> None:
    if targets:
        torch._foreach_copy_(targets, values)
        targets.clear()
        values.clear()
        held.clear()


def _clashes(leaves: Sequence[Any]) -> list[frozenset[int]]:
    """For each leaf's ``.grad`` operand, the earlier ones that may share elements with it (views of one
    storage whose spans meet). A GPU's ``_foreach_copy_`` copies all its tensors in one kernel, in no
    order, so a plain copy waits for the copies before it that it clashes with (a CPU copies in order)."""
    spans = []
    for i, (_, grad, _) in enumerate(leaves):
        view = grad.view
        if view is None:
            lo, hi = 0, float("inf")
        elif 0 in view.shape:
            continue
        else:
            lo = hi = view.offset
            for n, stride in zip(view.shape, view.strides):
                if stride < 0:
                    lo += (n - 1) * stride
                else:
                    hi += (n - 1) * stride
            hi += 1
        spans.append((grad.slot, lo, hi, i))
    spans.sort()
    clashes: list[set[int]] = [set() for _ in leaves]
    for k, (slot, lo, hi, i) in enumerate(spans):
        for other, lo2, _, j in spans[k + 1 :]:
            if other != slot or lo2 >= hi:
                break
            clashes[max(i, j)].add(min(i, j))
    return [frozenset(c) for c in clashes]




def backward_runner(step: BackwardStep, slots: Sequence[Slot]) -> Callable[[list[Any], dict[Any, Any]], None]:
    """One ``torch.autograd.grad``; a piece of a cut backward (``_cuts.py``) starts from the tensors the
    cut above it kept, seeded with the gradients the piece before it passed on, and stops at the cut
    tensors of its own cut -- the graph is cut there, so it frees what it ran (unless asked to retain)."""
    heads = step.heads
    head_grads = step.head_grads
    leaves = step.leaves
    above, below, point = step.above, step.below, step.point
    clashes = _clashes(leaves)

    def run(env: list[Any], aliases: dict[Any, Any]) -> None:
        outs: list[Any] = []
        seeds: list[Any] = []
        for h, g in zip(heads, head_grads):
            t = aliases.get(h.slot, env[h.slot])
            t = t if h.view is None else _views.read(t, h.view)
            outs.append(t)
            seeds.append(torch.ones_like(t) if g is None else _views.read(env[g.slot], g.view))
        for s in above:  # a later piece of a cut backward: from where the piece before it stopped
            passed = aliases.pop((GRAD, s), None)
            if passed is not None:
                outs.append(passed[0])
                seeds.append(passed[1])
        taken = [aliases.pop((CUT, point, s), None) for s in below]  # (kept, cut) where the graph was cut
        retain = step.retain or None in taken  # (a frontier not cut: the graph below it is still needed)
        cuts = [(env[s], env[s]) if c is None else c for s, c in zip(below, taken)]
        wanted = [aliases.get(slot) for slot, _, _ in leaves]
        present = [t for t in wanted if t is not None] + [cut for _, cut in cuts]
        with torch.enable_grad():
            found = iter(torch.autograd.grad(outs, present, seeds, retain_graph=retain, allow_unused=True)
                         if present and outs else [None] * len(present))  # fmt: skip
        targets: list[Any] = []
        values: list[Any] = []
        held: list[int] = []  # the leaves whose copies are in targets
        for i, ((slot, grad, overwrite), t) in enumerate(zip(leaves, wanted)):
            value: Any = next(found) if t is not None else None
            base = env[grad.slot]
            if value is None:
                if not overwrite:
                    continue
                value = torch.zeros(slots[slot].shape, dtype=base.dtype, device=base.device)
            if value.dtype is not base.dtype:
                value = value.to(base.dtype)
            target, flips = (base, None) if grad.view is None else _views._positive(base, grad.view)
            if overwrite and not flips and target.shape == value.shape and target.device == value.device:
                if clashes[i] and not clashes[i].isdisjoint(held):
                    _copy_all(targets, values, held)  # (after the copies into the elements it shares)
                targets.append(target)  # a plain copy: all of them in one call (each call, and each
                values.append(value)  # tensor it returns, hands the interpreter lock to a lane waiting)
                held.append(i)
                continue
            _copy_all(targets, values, held)  # (in order: this gradient's view may overlap an earlier one)
            if not overwrite:
                value = _views.read(base, grad.view) + value
            _views.write(base, grad.view, value)
        _copy_all(targets, values, held)
        for s, (kept, _) in zip(below, cuts):
            passed = next(found)
            if passed is not None:
                aliases[(GRAD, s)] = (kept, passed)

    return run


