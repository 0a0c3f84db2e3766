"""The timeline picture (needs matplotlib: ``pip install autopar[plot]``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from autopar.profiler._profile import OpRecord, is_traffic

if TYPE_CHECKING:
    from autopar.profiler._profile import Profile


def category(name: str) -> str:
    """A training op's kind, for colours: gradient traffic, backward, update, or forward (the rest)."""
    if is_traffic(name):
        return "gradient traffic (allreduce)"
    if name.startswith("backward"):
        return "backward"
    if "update" in name or "moment" in name:
        return "optimizer update"
    return "forward and other"


def _label_of(ran: list[OpRecord]) -> Callable[[str], str]:
    """Colour by op name when there are few, by category when there are more than ten."""
    if len({r.name for r in ran}) <= 10:
        return lambda name: name
    return category


def plot_timeline(prof: Profile, path: str | os.PathLike[str], title: str | None = None) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("Profile.plot needs matplotlib: pip install 'autopar[plot]' (or pip install matplotlib)") from None
    ran = prof._ran()
    rows = prof.lanes()
    fig, ax = plt.subplots(figsize=(11, 1.0 + 0.55 * max(len(rows), 1)), dpi=110)
    if not ran:
        ax.text(0.5, 0.5, "no operations were recorded", ha="center", va="center", transform=ax.transAxes)
    else:
        t0 = min(r.start_ns for r in ran)
        label = _label_of(ran)
        names = sorted({label(r.name) for r in ran})
        cmap = plt.get_cmap("tab10")
        colour = {n: cmap(i % 10) for i, n in enumerate(names)}
        for y, row in enumerate(rows):
            bars = [((r.start_ns - t0) / 1e6, max((r.end_ns - r.start_ns) / 1e6, 0.001)) for r in ran if (r.device, r.lane) == row]
            cols = [colour[label(r.name)] if r.state == "done" else (0.85, 0.1, 0.1, 1.0) for r in ran if (r.device, r.lane) == row]
            ax.broken_barh(bars, (y - 0.38, 0.76), facecolors=cols, linewidth=0)
        handles = [plt.Rectangle((0, 0), 1, 1, color=colour[n]) for n in names[:10]]
        ax.legend(handles, names[:10], loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False,
                  title="op", title_fontsize=8)
        summary = prof.summary()
        ax.set_title(title or f"autopar timeline: {len(ran)} ops, {summary.overlap_share:.0%} of the time two or more lanes busy",
                     fontsize=10)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{d} {lane}" for d, lane in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
