"""Gradients: what the dispatcher records, and how backward runs through the engine.

Design note
-----------
autopar's backward is MXNet's, op by op on the engine: every recorded op's
gradient is an engine op of its own, reading the vars it needs and writing
(accumulating into) gradient vars. Nothing in it waits: ``backward()`` pushes
and returns, independent branches of the backward graph run side by side, and
a parameter's ``.grad`` is readable the moment its last contribution is
written -- so whatever reads it (a copy, a sum across devices) starts while
the rest of backward still runs. Derivatives are torch's: autopar writes
none by hand.

**Spellings and modes.** Both spellings set the same per-thread state (MXNet's
``is_recording`` and PyTorch's grad mode are per thread too):

=============  =======================================  ================================
mode           entered by                               an op is recorded when
=============  =======================================  ================================
``DEFAULT``    (outside any block)                      an input requires grad, PyTorch-style
``RECORD``     ``with autograd.record():``              an input requires grad, either style
``OFF``        ``autograd.pause()``, ``no_grad()``      never
=============  =======================================  ================================

An array requires grad when it carries a record (``NDArray._ag``): a
:class:`Leaf` for arrays the user marked -- ``x.attach_grad()`` (MXNet style:
recorded only inside ``record()``, ``grad_req="write"``: each backward
overwrites ``x.grad``, which starts as zeros) or ``requires_grad=True`` /
``x.requires_grad_()`` (PyTorch style: recorded unless in ``no_grad()``,
gradients accumulate, ``x.grad`` is ``None`` until the first backward) -- and
an :class:`Edge` (output *i* of a recorded :class:`Node`) for results of
recorded ops. An op's result is recorded if the op's entry is
``differentiable``, some input that requires grad is floating or complex
(integer and bool arrays never carry gradients, as in PyTorch) and some
result is. ``x.detach()`` is the same storage without a record. Until the
first array ever requires grad, the dispatcher checks one module global
(``used``) and nothing else.

**Forward: the graph is torch's, kept per op.** When ``bind`` records a call,
the op it pushes runs its kernel under ``torch.enable_grad()`` on the input
tensors detached and marked ``requires_grad`` (the casts to the computation
dtype and back happen inside, so gradients arrive in each input's own dtype),
stores the result detached, as always, and keeps the little autograd graph
from those leaves to the results in ``node.saved``. The gradient op runs
torch's C++ autograd engine over that graph. ``bench/autograd_alternatives.py``
measured the alternatives on one thread (torch 2.13, medians, a loaded 2-core
machine; microseconds per op)::

                              forward   gradient          kept per op
    mul, 16 elements   plain      2.0
      graph                       8.1   16.3 (grad: 69)   inputs + output
      torch.func.vjp             55.7  100.0              inputs + output
      recompute (func.vjp)        2.0  124.1              inputs + output
    matmul 64x64       plain      9.3
      graph                      16.7   37.8 (grad: 66)
      torch.func.vjp             87.8  126.5
      recompute                   9.3  190.6

Memory is the same for all three (LeNet's conv2d and relu at batch 128: 1.4
and 1.7 MB kept per op against 0.9 and 0.8 for no record: the inputs stay
alive with the graph in each), so per-op overhead decides: the kept graph
costs 4-7 us in the forward and 15-30 us in the gradient, ``torch.func.vjp``
40-80 us in each, and recomputing runs the forward twice. The gradient op
calls the engine under ``torch.autograd.grad`` directly
(``Variable._execution_engine.run_backward``, what ``grad`` calls after
45 us of Python argument handling per call); a test pins it to
``torch.autograd.grad``'s answers. ``OpDef.vjp`` overrides the derivative
where torch has none.

Views push nothing, so they have no forward op to keep a graph from: a view
made of an array that requires grad (``x.T``, ``x[1:]``, ``x.reshape``)
records a *view node* holding the view relative to its input (``rel``). Its
gradient op builds a fresh leaf of the input's shape, reads ``rel`` of it
(``_views.read``: torch's ``as_strided`` and ``flip``) and lets torch's
autograd scatter the gradient back -- torch's derivative again, and it never
needs the input's value.

**Backward: one engine op per node.** ``backward(heads)`` walks the recorded
graph from the heads (in Python, at the call: it only reads records), orders
the nodes it reaches by recording sequence, latest first (a node's inputs
were recorded before it, so this is a reverse topological order), and pushes
one gradient op per node::

    forward (recorded)              backward (pushed in this order)
    h = conv(x, w)    node 1         4: ce'   reads g_l            writes g_z
    a = relu(h)       node 2         3: relu' reads g_a, h, a      writes g_h
    z = linear(a, v)  node 3         ...
    l = ce(z, y)      node 4         1: conv' reads g_h, x, w, h   writes w.grad

Each gradient of a value is an *accumulator* array: the first contribution
pushed writes it (an overwrite: it reads nothing), later ones add to it (a
read-write), so a value used twice gets the sum, in push order, whatever runs
first. A leaf's accumulator is ``x.grad`` itself: with ``grad_req="add"`` (or
when ``.grad`` exists, PyTorch style) every contribution adds. A gradient op
reads its results' gradients, its results' vars and its inputs' vars (their
values are what torch saved: reading them orders it against later writes),
and writes its inputs' gradients; it runs on the forward op's device and lane
(the gradient of a copy runs on the copy lane). Because each ``.grad``'s var
is last written by its last contribution, reading it -- or pushing a copy or
a sum of it -- waits for exactly that, not for the rest of backward. Each
gradient op drops its node's saved graph when it has run (``retain_graph``
keeps it); a second backward through a graph that was not retained raises at
the call, as in PyTorch.

**Failures (SPEC §4).** A failed forward op fails its results; the gradient
op reading them does not run and its gradients carry the failure, and so on
down to the parameters' ``.grad``, to the update that reads them and to the
parameters it writes. Nothing waits for anything that will not come. An error
in a gradient op (torch's) is stored the same way.

**In place.** Recording an in-place op is not supported: while an op would be
recorded, ``x += 1``, ``x[k] = v`` or ``copyto(x)`` with ``x`` or ``v``
requiring grad raises at the call (PyTorch raises for leaves; MXNet for any
recorded array), naming the op and the fix (write it out of place, or in
``no_grad()``). Outside recording (``no_grad()``, ``pause()``, or MXNet-style
arrays outside ``record()``) in-place writes are allowed -- that is how
parameters are updated. Modifying a value that a recorded op saved for its
gradient, before that gradient has run, is detected by torch's version
counters exactly where PyTorch detects it: the recorded inputs are detached
views of the storage tensors, which share their version counter, and every
in-place write of a storage goes through torch's ``copy_``. The check happens
when the gradient op runs (the forward, and so what it saved, is known only
then), so the error is stored on the gradients it writes (SPEC §4.2) and
raised by the first read of one of them -- or by the update that reads it,
or ``waitall`` -- with the op named and the fix said; in a program that reads
nothing, ``waitall`` raises it. Because gradient ops read their inputs' vars,
whether the modification counts does not depend on timing: a write pushed
before ``backward()`` is seen, one pushed after it waits for the gradient.

Not supported: higher-order gradients (``create_graph=True`` raises), hooks
on gradients, sparse gradients.
"""

from __future__ import annotations
