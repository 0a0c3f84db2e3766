"""d2l's ``Animator``: learning curves that update as training goes, in a notebook and in a terminal.

``animator.add(x, ys)`` appends one point per line (``None`` skips a line),
as d2l's. Then it shows what it has:

- in a Jupyter notebook (with matplotlib), it redraws the figure in place;
- elsewhere (a terminal, a script, a log), it prints one line with the new
  values: ``epoch 1.40: train loss 0.642, train acc 0.771``;
- ``live=False`` shows nothing.

``animator.save(path)`` writes the figure as a PNG (needs matplotlib). Lines
whose names speak of a loss and lines that are accuracies get separate
panels, each with its own labelled y-axis ("loss"; "accuracy", 0 to 1), so
a loss of 2.3 does not flatten accuracies below 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (IPython's ZMQ shell)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def pyplot() -> Any:
    """matplotlib.pyplot, or an ImportError that says how to get it."""
    try:
        import matplotlib

        if not in_notebook():
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'autopar[plot]' (or pip install matplotlib)") from None
    return plt


def _kind(name: str) -> str:
    lowered = name.lower()
    if "loss" in lowered or "perplexity" in lowered:
        return "loss"
    if "acc" in lowered:
        return "accuracy"
    return "value"


class Animator:
    """``Animator(xlabel, ylabel, legend, xlim, ylim, xscale, yscale, fmts, nrows, ncols, figsize)`` as d2l's,
    plus ``live`` (None: notebook or terminal, whichever this is; False: quiet) and ``out`` (the terminal's stream)."""

    def __init__(self, xlabel: str | None = None, ylabel: str | None = None, legend: Sequence[str] | None = None,
                 xlim: Any = None, ylim: Any = None, xscale: str = "linear", yscale: str = "linear",
                 fmts: Sequence[str] = ("-", "m--", "g-.", "r:"), nrows: int = 1, ncols: int = 1,
                 figsize: tuple[float, float] = (3.5, 2.5), live: bool | None = None, out: TextIO | None = None) -> None:  # fmt: skip
        self.xlabel, self.ylabel = xlabel, ylabel
        self.legend = list(legend or [])
        self.xlim, self.ylim, self.xscale, self.yscale = xlim, ylim, xscale, yscale
        self.fmts, self.figsize = tuple(fmts), figsize
        self.X: list[list[float]] | None = None
        self.Y: list[list[float]] | None = None
        self.live = live
        self.out = out

    def _names(self, n: int) -> list[str]:
        return [self.legend[i] if i < len(self.legend) else (self.ylabel or f"line {i + 1}") for i in range(n)]

    def add(self, x: Any, y: Any) -> None:
        """Append ``y`` (a value, or one per line) at ``x`` (one for all, or one per line), then show it."""
        ys = list(y) if hasattr(y, "__len__") else [y]
        n = len(ys)
        xs = list(x) if hasattr(x, "__len__") else [x] * n
        if not self.X:
            self.X = [[] for _ in range(n)]
        if not self.Y:
            self.Y = [[] for _ in range(n)]
        added = []
        for i, (a, b) in enumerate(zip(xs, ys)):
            if a is not None and b is not None:
                self.X[i].append(float(a))
                self.Y[i].append(float(b))
                added.append((i, float(a), float(b)))
        self._show(added)

    def _show(self, added: list[tuple[int, float, float]]) -> None:
        if self.live is False or not added:
            return
        if in_notebook():
            try:
                from IPython import display  # type: ignore[import-not-found]

                fig = self.figure()
                display.display(fig)
                display.clear_output(wait=True)
                pyplot().close(fig)
                return
            except ImportError:
                pass
        names = self._names(len(self.Y or []))
        where = f"{self.xlabel or 'x'} {added[0][1]:.2f}"
        values = ", ".join(f"{names[i]} {v:.3f}" for i, _, v in added)
        print(f"{where}: {values}", file=self.out or sys.stdout, flush=True)

    def figure(self) -> Any:
        """The curves as a matplotlib figure: one panel for losses and one for accuracies when both are drawn."""
        plt = pyplot()
        names = self._names(len(self.Y or []))
        kinds = sorted({_kind(n) for n in names}, key=["loss", "accuracy", "value"].index) or ["value"]
        width, height = self.figsize
        fig, axes = plt.subplots(1, len(kinds), figsize=(width * len(kinds), height), dpi=110, squeeze=False)
        for ax, kind in zip(axes[0], kinds):
            for i, (xs, ys) in enumerate(zip(self.X or [], self.Y or [])):
                if _kind(names[i]) == kind and ys:
                    ax.plot(xs, ys, self.fmts[i % len(self.fmts)], label=names[i], marker="." if len(ys) < 30 else None)
            ax.set_xlabel(self.xlabel or "x")
            ax.set_ylabel(self.ylabel if len(kinds) == 1 and self.ylabel else kind)
            ax.set_xscale(self.xscale)
            ax.set_yscale(self.yscale)
            if self.xlim is not None:
                ax.set_xlim(self.xlim)
            if kind == "accuracy":
                ax.set_ylim(self.ylim if self.ylim is not None and len(kinds) == 1 else (0.0, 1.0))
            elif self.ylim is not None and len(kinds) == 1:
                ax.set_ylim(self.ylim)
            ax.grid(alpha=0.3)
            if any(_kind(n) == kind for n in names) and (len(names) > 1 or self.legend):
                ax.legend(fontsize=8)
        fig.tight_layout()
        return fig

    def save(self, path: str) -> None:
        """Write the curves as a PNG (or any format matplotlib knows from the suffix)."""
        plt = pyplot()
        fig = self.figure()
        fig.savefig(path)
        plt.close(fig)
