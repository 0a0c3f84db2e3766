"""How should a recorded op get its gradient? The alternatives, measured per op.

    python bench/autograd_alternatives.py [--quick]

autopar's backward runs one engine op per recorded op (arrays/_autograd.py).
Each needs the op's vector-Jacobian product from torch. Three ways, each
timed on one thread on tiny tensors (where the overhead is all there is) and
on LeNet-sized ones:

- graph:      the forward kernel runs under ``torch.enable_grad()`` on
              detached inputs marked ``requires_grad``; the op keeps the
              little autograd graph, and the gradient op runs torch's C++
              autograd engine over it (``torch.autograd.grad``, or the engine
              call underneath it, ``run_backward``, without grad's Python
              argument handling);
- func.vjp:   the forward kernel runs under ``torch.func.vjp``; the op keeps
              the returned ``vjp_fn`` and the gradient op calls it;
- recompute:  the forward runs plain; the gradient op calls ``torch.func.vjp``
              of the kernel (the forward again) and then its ``vjp_fn``.

Memory: what each keeps alive per recorded op, measured as resident memory
after keeping ``N`` records of fresh inputs (glibc's mmap threshold pinned,
so every large tensor is its own mapping); the inputs count when the record
keeps them.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch.autograd.graph import _engine_run_backward  # noqa: F401  (what torch.autograd.grad calls)

torch.set_num_threads(1)
run_backward = torch.autograd.Variable._execution_engine.run_backward  # type: ignore[attr-defined]


def per_call_us(fn: Callable[[], Any], n: int, repeats: int) -> float:
    for _ in range(max(1, n // 10)):
        fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(runs)


def cases(quick: bool) -> list[tuple[str, Callable[..., torch.Tensor], tuple[torch.Tensor, ...], int]]:
    small = 300 if quick else 3000
    x = torch.randn(128, 1, 28, 28)
    w = torch.randn(6, 1, 5, 5)
    b = torch.randn(6)
    return [
        ("mul, 16 elements", torch.mul, (torch.randn(16), torch.randn(16)), small),
        ("relu, 16 elements", torch.relu, (torch.randn(16),), small),
        ("matmul 64x64", torch.matmul, (torch.randn(64, 64), torch.randn(64, 64)), small // 3),
        ("linear 128x400 -> 120", F.linear, (torch.randn(128, 400), torch.randn(120, 400), torch.randn(120)), small // 10),
        ("conv2d 128x1x28x28, 6 5x5", lambda x, w, b: F.conv2d(x, w, b, padding=2), (x, w, b), 5 if quick else 20),
    ]


def timings(kernel: Callable[..., torch.Tensor], args: tuple[torch.Tensor, ...], n: int, repeats: int) -> dict[str, float]:
    def graph_forward() -> Any:
        leaves = [a.detach().requires_grad_() for a in args]
        with torch.enable_grad():
            out = kernel(*leaves)
        return out, leaves

    out, _ = graph_forward()
    g = torch.ones_like(out)

    def graph_grad() -> None:
        o, leaves = graph_forward()
        torch.autograd.grad(o, leaves, g)

    def graph_engine() -> None:
        o, leaves = graph_forward()
        run_backward((o,), (g,), False, False, tuple(leaves), True, False)

    def vjp_forward() -> Any:
        return torch.func.vjp(kernel, *args)

    def vjp_backward() -> None:
        vjp_forward()[1](g)

    plain = per_call_us(lambda: kernel(*args), n, repeats)
    fwd_graph = per_call_us(graph_forward, n, repeats)
    fwd_vjp = per_call_us(vjp_forward, n, repeats)
    return {
        "plain forward": plain,
        "graph: forward": fwd_graph,
        "graph: gradient, autograd.grad": per_call_us(graph_grad, n, repeats) - fwd_graph,
        "graph: gradient, run_backward": per_call_us(graph_engine, n, repeats) - fwd_graph,
        "func.vjp: forward": fwd_vjp,
        "func.vjp: gradient": per_call_us(vjp_backward, n, repeats) - fwd_vjp,
        "recompute: gradient": per_call_us(vjp_backward, n, repeats),
    }


def _resident() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def kept_bytes(how: str, kernel: Callable[..., torch.Tensor], args: tuple[torch.Tensor, ...], n: int = 8) -> float:
    gc.collect()
    before = _resident()
    keep = []
    for _ in range(n):
        fresh = [a.clone() for a in args]
        if how == "plain":
            keep.append(kernel(*fresh))
        elif how == "graph":
            leaves = [t.requires_grad_() for t in fresh]
            with torch.enable_grad():
                keep.append((kernel(*leaves), leaves))
        elif how == "func.vjp":
            keep.append(torch.func.vjp(kernel, *fresh))
        else:  # recompute: the output, and the inputs to run the forward again
            keep.append((kernel(*fresh), fresh))
        del fresh
    kept = (_resident() - before) / n
    del keep
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    print(f"torch {torch.__version__}, 1 thread; microseconds per op, median of {repeats}")
    for name, kernel, inputs, n in cases(args.quick):
        t = timings(kernel, inputs, n, repeats)
        print(f"\n{name}")
        for key, value in t.items():
            print(f"  {key:34s} {value:10.1f} us")
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") != "65536":
        print("\n(memory: rerun with MALLOC_MMAP_THRESHOLD_=65536 for exact per-record figures)")
    print("\nkept per recorded op, MB (LeNet's second conv, then its relu, on 128 x 6 x 14 x 14 / 128 x 16 x 10 x 10)")
    x = torch.randn(128, 6, 14, 14)
    w, b = torch.randn(16, 6, 5, 5), torch.randn(16)
    for name, kernel, inputs in (("conv2d", F.conv2d, (x, w, b)), ("relu", torch.relu, (torch.randn(128, 16, 10, 10),))):
        row = {how: kept_bytes(how, kernel, inputs) / 1e6 for how in ("plain", "graph", "func.vjp", "recompute")}
        print(f"  {name:8s} " + "  ".join(f"{k} {v:6.2f}" for k, v in row.items()))


if __name__ == "__main__":
    main()
