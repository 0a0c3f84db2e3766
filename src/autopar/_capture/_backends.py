"""Running a segment of a trace: a replay of its kernels, or the same function through ``torch.compile``.

Design note
-----------
Each step of a segment becomes a *runner*, a closure over what the step
recorded, called with the segment's environment: ``env[slot]`` is the
tensor of a slot (preloaded from the storages for the slots the segment
reads or writes in place, set by the step that makes it otherwise) and
``aliases[slot]`` a leaf's tensor detached and marked ``requires_grad``, made
by the first recorded step that reads it (a backward cut at gradient buckets
keeps there, too, the tensors it cut and the gradients its pieces pass on:
``_cuts.py``; the aliases, and the backward that writes the gradients:
``_leaves.py``). A runner does what the eager
interpreter's op does (``arrays/_eager.py``): read through the view, cast to
the kernel dtype, call the kernel, store a fresh contiguous tensor (cloned
where torch handed back an input or a view) or write through the target's
view. The difference is gradients: a recorded step runs under
``torch.enable_grad()`` on the leaves' aliases and the recorded results
as they are, so the segment holds one torch graph from the leaves to the
heads, and a :class:`~autopar._capture._trace.BackwardStep` is one
``torch.autograd.grad`` over it -- torch's derivatives, as eagerly, with
the same casts inside.

:func:`body` strings the runners together: ``body(tensors)`` takes the
preloaded tensors and returns the ones the segment publishes. ``replay``
calls it as it is; ``compile`` runs the segment in stages through
``torch.compile`` (``_staged.py``), as ``auto`` does where a compiler is
available (the contract: fused where a compiler is available); ``fastest``
compiles too, then times the compiled segment against its replay (the best
of two runs each, on copies of the inputs) and keeps the faster -- on a small
CPU ``torch.compile`` of a convolutional training step can be slower than
its kernels run eagerly. The first compiled run happens on clones of the
inputs: if dynamo or inductor cannot take the segment (with the C++ wrapper,
then with the Python one: ``_staged.py``), it falls back to replay for good
and says why (``Backend.reason``), and nothing was written twice. No dynamo guards: a trace is for one signature, so what
dynamo would check (the closures' contents, the tensors' shapes and dtypes)
is fixed -- and checking hundreds of them cost more than the kernels (0.45
ms a call for a 200-op loop on a 2-core machine).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from autopar.arrays import _views
from autopar._capture._leaves import _alias
from autopar._capture._trace import KernelStep, OpaqueStep, Operand, Slot

Runner = Callable[[list[Any], dict[Any, Any]], None]


_numbers: dict[Any, torch.Tensor] = {}  # (type, value, dtype) -> its 0-d tensor, shared by every trace (read only)


def _positive_at_zero(base: torch.Tensor, view: Any) -> tuple[torch.Tensor, list[int] | None]:
    """``_views._positive`` for a tensor at storage offset 0 (what dynamo can trace: no ``storage_offset()``)."""
    offset, strides, flips = view.offset, view.strides, None
    if any(s < 0 for s in strides):
        flips = [i for i, s in enumerate(strides) if s < 0]
        for i in flips:
            offset += (view.shape[i] - 1) * strides[i]
        strides = tuple(abs(s) for s in strides)
    return base.as_strided(view.shape, strides, offset), flips


def read_traced(base: torch.Tensor, view: Any) -> torch.Tensor:
    if view is None:
        return base
    t, flips = _positive_at_zero(base, view)
    return t.flip(flips) if flips else t


def write_traced(base: torch.Tensor, view: Any, value: torch.Tensor) -> None:
    if view is None:
        base.copy_(value)
        return
    target, flips = _positive_at_zero(base, view)
    if flips:
        value = torch.broadcast_to(value, view.shape).flip(flips)
    target.copy_(value)


def kernel_runner(step: KernelStep, slots: Sequence[Slot], compiling: bool = False) -> Runner:
    """The step as eager execution runs it; ``compiling``: for dynamo, which cannot ask storages'
    addresses or offsets -- results are always cloned (inductor drops the copies it does not need)
    and views are taken at storage offset 0 (``_staged`` compiles only segments whose tensors are)."""
    read = read_traced if compiling else _views.read
    write = write_traced if compiling else _views.write
    kernel = step.entry.kernel
    static = step.static
    prepared: list[tuple[int, Any, Any, bool] | tuple[None, Any, None, bool]] = []
    for i, (a, kd) in enumerate(zip(step.args, step.kernel_dtypes)):
        if type(a) is Operand:
            leaf = step.grad and i in step.positions and slots[a.slot].leaf is not None and slots[a.slot].kind != "internal"
            prepared.append((a.slot, a.view, kd, leaf))
        elif step.entry.scalars and i > 0:
            prepared.append((None, a, None, False))
        else:  # a 0-d CPU tensor, as eagerly (_eager._runner); one per number and dtype, so that a
            # compiled segment takes 2 * y a hundred times with one input, not a hundred
            key = (type(a), a, kd)
            number = _numbers.get(key)
            if number is None:
                number = _numbers[key] = torch.tensor(a, dtype=kd)
            prepared.append((None, number, None, False))
    grad = step.grad
    fast = None if compiling or grad else _fast(step, prepared)
    if fast is not None:
        return fast

    def inputs(env: list[Any], aliases: dict[Any, Any]) -> list[Any]:
        tensors = []
        for slot, view, kd, leaf in prepared:
            if slot is None:
                tensors.append(view)
                continue
            t = _alias(env, aliases, slot) if leaf else env[slot]
            if view is not None:
                t = read(t, view)
            if t.dtype is not kd:
                t = t.to(kd)
            tensors.append(t)
        return tensors

    def call(env: list[Any], aliases: dict[Any, Any]) -> tuple[Any, list[Any]]:
        if grad:  # the views and casts of the inputs are part of the graph too
            with torch.enable_grad():
                tensors = inputs(env, aliases)
                return kernel(*tensors, **static), tensors
        tensors = inputs(env, aliases)
        return kernel(*tensors, **static), tensors

    if step.target is not None:
        target = step.target
        tslot, tview = target.slot, target.view
        tdtype = slots[tslot].dtype.torch

        def run_into(env: list[Any], aliases: dict[Any, Any]) -> None:
            value, _ = call(env, aliases)
            if type(value) is tuple:
                value = value[0]
            base = env[tslot]
            if value.dtype is not tdtype:
                value = value.to(tdtype)
            if compiling:  # functional: a new value of the slot (the stage copies it into its input at the end)
                if tview is None:
                    env[tslot] = torch.broadcast_to(value, base.shape).clone()
                else:
                    base = env[tslot] = base.clone()
                    write(base, tview, value)
                return
            if _views.shares(value, base):
                value = value.clone()
            write(base, tview, value)

        return run_into
    outs = step.outs
    dtypes = [slots[o].dtype.torch for o in outs]
    single = len(outs) == 1

    def store(env: list[Any], value: Any, tensors: list[Any]) -> None:
        values = (value,) if single else value
        for o, d, v in zip(outs, dtypes, values):
            if v.dtype is not d:
                v = v.to(d)
            elif compiling or v._is_view() or any(v is t for t in tensors):
                v = v.clone(memory_format=torch.contiguous_format)
            env[o] = v if compiling or v.is_contiguous() else v.contiguous()

    def run(env: list[Any], aliases: dict[Any, Any]) -> None:
        value, tensors = call(env, aliases)
        if grad:  # the casts and copies of the results are part of the graph too
            with torch.enable_grad():
                store(env, value, tensors)
        else:
            store(env, value, tensors)

    return run


def _fast(step: KernelStep, prepared: list[Any]) -> Runner | None:
    """The dispatcher's lean paths, replayed: ``x += y`` by torch's in-place kernel on the target, and an
    exact elementwise kernel (no cast, a fresh result) called as it is (``_dispatch``'s note)."""
    kernel = step.entry.kernel
    if any(view is not None for slot, view, _, _ in prepared if slot is not None):
        return None
    if step.target is not None and step.inplace is not None and step.target.view is None and len(prepared) == 2:
        inplace, tslot = step.inplace, step.target.slot
        (first, _, _, _), (other, value, kd, _) = prepared
        if first != tslot:
            return None
        if other is None:  # x += 1

            def run_number(env: list[Any], aliases: dict[Any, Any]) -> None:
                inplace(env[tslot], value)

            return run_number

        def run_array(env: list[Any], aliases: dict[Any, Any]) -> None:
            y = env[other]
            inplace(env[tslot], y if y.dtype is kd else y.to(kd))

        return run_array
    if step.target is None and step.exact and len(step.outs) == 1 and not step.static:
        out = step.outs[0]
        if len(prepared) == 1:
            (a, _, _, _), = prepared

            def run_unary(env: list[Any], aliases: dict[Any, Any]) -> None:
                env[out] = kernel(env[a])

            return run_unary
        if len(prepared) == 2:
            (a, va, _, _), (b, vb, _, _) = prepared
            if a is not None and b is not None:

                def run_arrays(env: list[Any], aliases: dict[Any, Any]) -> None:
                    env[out] = kernel(env[a], env[b])

                return run_arrays
            if a is not None:

                def run_number(env: list[Any], aliases: dict[Any, Any]) -> None:
                    env[out] = kernel(env[a], vb)

                return run_number

            def run_number_first(env: list[Any], aliases: dict[Any, Any]) -> None:
                env[out] = kernel(va, env[b])

            return run_number_first
    return None


def opaque_runner(step: OpaqueStep, slots: Sequence[Slot]) -> Runner:
    """The op's own function (bound to the trace's CONST storages); then the slots it wrote, reloaded."""
    fn = step.fn
    written = tuple((s, slots[s].var) for s in step.writes)

    def run(env: list[Any], aliases: dict[Any, Any]) -> None:
        fn()
        for s, storage in written:
            t = getattr(storage, "tensor", None)
            if t is not None:
                env[s] = t

    return run


def body(runners: Sequence[Runner], size: int, loads: Sequence[int], publish: Sequence[int]) -> Callable[..., Any]:
    """The segment as one function of its preloaded tensors, returning the tensors it publishes."""
    loads, publish = tuple(loads), tuple(publish)

    def run(*tensors: Any, shared: tuple[list[Any], dict[Any, Any]] | None = None,
            storages: Any = None) -> tuple[Any, ...]:  # fmt: skip
        # (``storages``: the compiled drivers' argument, which ``Backend`` may hand this function too; unused)
        env, aliases = ([None] * size, {}) if shared is None else shared  # a chain's segments share theirs
        for s, t in zip(loads, tensors):
            env[s] = t
        with torch.no_grad():
            for r in runners:
                r(env, aliases)
        return tuple(env[s] for s in publish)

    return run


class Backend:
    """How one segment runs: ``kind`` is ``"replay"`` or ``"compile"``; ``reason`` says why a
    compile fell back to replay (empty otherwise)."""

    def __init__(self, fn: Callable[..., Any], kind: str, make: Callable[[], Callable[..., Any]] | None = None,
                 choose: bool = False, fallback: Callable[[], Callable[..., Any]] | None = None) -> None:  # fmt: skip
        self.fn = fn
        self._fallback = fallback  # another way to compile, tried if ``make``'s fails (the Python wrapper)
        self.kind = kind
        self._choose = choose  # mode="fastest": keep the compiled segment only if it runs faster than the replay
        self.reason = ""
        self._make = make
        self._compiled: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def __call__(self, *tensors: Any, shared: Any = None, storages: Any = None) -> tuple[Any, ...]:
        """``storages``: the program's, by slot (a compiled segment keeps its leaves' aliases with them)."""
        if self.kind == "replay":
            return self.fn(*tensors, shared=shared)
        for t in tensors:  # a window of a tensor at an offset (from_torch of a part): compiled stages take
            if isinstance(t, torch.Tensor) and t.storage_offset():  # views at offset 0, so this call replays (the same signature at offset 0 does not)
                return self.fn(*tensors, shared=shared)
        compiled = self._compiled
        if compiled is None:
            with self._lock:
                compiled = self._compiled or self._warm(tensors)
            if self.kind == "replay":
                return self.fn(*tensors, shared=shared)
        return compiled(*tensors, shared=shared, storages=storages)

    def _warm(self, tensors: Sequence[Any]) -> Callable[..., Any]:
        """Compile, and run once on clones: a segment torch.compile cannot take falls back to replay."""
        clones = [t.clone() if isinstance(t, torch.Tensor) else t for t in tensors]
        assert self._make is not None
        for make in (self._make, self._fallback):
            if make is None:
                continue
            try:
                compiled = make()
                compiled(*clones)
                break
            except Exception as error:  # dynamo/inductor refused
                failed = error
        else:  # replay, and say why
            self.kind = "replay"
            self.reason = f"torch.compile failed ({type(failed).__name__}: {str(failed).splitlines()[0][:200]})"
            return self.fn
        if self._choose:  # worth it? one more run of each, on the clones (the best of two, against noise)
            spent = []
            for run in (compiled, self.fn, compiled, self.fn):
                start = time.perf_counter()
                run(*clones)
                spent.append(time.perf_counter() - start)
            fused, replayed = min(spent[0::2]), min(spent[1::2])
            if replayed < fused:
                self.kind = "replay"
                self.reason = (f"torch.compile was not faster here ({fused * 1e3:.2f} ms a call against "
                               f"{replayed * 1e3:.2f} ms replayed)")  # fmt: skip
                return self.fn
        self._compiled = compiled
        return compiled


def no_guards(entries: Sequence[Any]) -> list[bool]:
    """dynamo's ``guard_filter_fn`` of a compiled segment: no guards (the note above says why)."""
    return [False] * len(entries)


_compiler_loaded = False


def load_compiler() -> None:
    """Import torch.compile's stack here, on the thread that traces: lanes that compile their first
    segments at once would import it on several threads together, and its modules import each other
    (two lanes got "partially initialized module 'torch._dynamo'" and fell back to replay)."""
    global _compiler_loaded
    if not _compiler_loaded:
        import torch._dynamo  # noqa: F401
        import torch._inductor.compile_fx  # noqa: F401
        import torch.fx.experimental.proxy_tensor  # noqa: F401

        _compiler_loaded = True


def compiler_available() -> str:
    """Empty when torch.compile can run here; else why not."""
    import shutil

    if not hasattr(torch, "compile"):
        return "this torch has no torch.compile"
    if not any(shutil.which(cc) for cc in ("cc", "gcc", "clang", "g++")):
        return "no C compiler found (inductor needs one on CPU)"
    return ""
