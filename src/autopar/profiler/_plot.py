"""The timeline picture (needs matplotlib: ``pip install autopar[plot]``).

One row per device lane, each op a bar coloured by its name (few names) or
its kind (many: traffic between devices, backward, optimizer update,
forward and other). Traffic is found by what an op does (``_traffic.py``),
so hand-written copies and sums are coloured as traffic too.

Copies and sums are often a sliver beside the computation: a bar narrower
than 0.2% of the drawn span is widened to that (the legend says so), and
when the traffic of the first burst lasts less than a few percent of the
timeline, a second panel zooms on it. ``window`` draws one span only (and zooms within it).
Labelled phases (``Profile.phase``) are shaded and named along the top.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from autopar.profiler._profile import OpRecord, is_traffic

if TYPE_CHECKING:
    from autopar.profiler._profile import Profile

TRAFFIC_LABEL = "traffic between devices (copies, sums)"
MIN_WIDTH = 0.002  # of the drawn span: narrower bars are widened to this, to stay visible


def category(record: OpRecord) -> str:
    """A training op's kind, for colours: traffic between devices, backward, update, or forward (the rest)."""
    if is_traffic(record):
        return TRAFFIC_LABEL
    if record.name.startswith("backward"):
        return "backward"
    if "update" in record.name or "moment" in record.name:
        return "optimizer update"
    return "forward and other"


def _label_of(ran: list[OpRecord]) -> Callable[[OpRecord], str]:
    """Colour by op name when there are few (traffic named as such), by category when there are more than ten."""
    if len({r.name for r in ran}) <= 10:
        return lambda r: f"{r.name} ({r.kind})" if r.kind else r.name
    return category


def _detail_window(ran: list[OpRecord], t0: int, t1: int) -> tuple[float, float] | None:
    """The first burst of traffic (ms from t0), padded, when it is too short to see in the whole span."""
    traffic = sorted((r for r in ran if is_traffic(r)), key=lambda r: r.start_ns)
    if not traffic or t1 <= t0:
        return None
    wall = t1 - t0
    first = traffic[0].start_ns
    burst_end = max(r.end_ns for r in traffic if r.start_ns <= first + wall // 20)
    if burst_end - first > wall * 0.05:
        return None  # wide enough to see as it is
    span = max(burst_end - first, wall // 200)
    start, end = max(t0, first - span), min(t1, burst_end + span)
    return (start - t0) / 1e6, (end - t0) / 1e6


def _draw(ax: Any, ran: list[OpRecord], rows: Sequence[tuple[str, str]], t0: int, window: tuple[float, float],
          colour: dict[str, Any], label: Callable[[OpRecord], str]) -> None:  # fmt: skip
    lo, hi = window
    least = (hi - lo) * MIN_WIDTH
    for y, row in enumerate(rows):
        bars, cols = [], []
        for r in ran:
            if (r.device, r.lane) != row:
                continue
            start, end = (r.start_ns - t0) / 1e6, (r.end_ns - t0) / 1e6
            if end < lo or start > hi:
                continue
            bars.append((start, max(end - start, least)))
            cols.append(colour[label(r)] if r.state == "done" else (0.85, 0.1, 0.1, 1.0))
        ax.broken_barh(bars, (y - 0.38, 0.76), facecolors=cols, linewidth=0)
    ax.set_xlim(lo, hi)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{d} {lane}" for d, lane in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("time (ms)")
    ax.grid(axis="x", alpha=0.3)


def _shade_phases(ax: Any, prof: Profile, t0: int, window: tuple[float, float]) -> None:
    """Each phase shaded (alternating greys) and named along the top where it is wide enough for its name."""
    lo, hi = window
    for i, p in enumerate(sorted(prof.phases, key=lambda p: p.start_ns)):
        start, end = max((p.start_ns - t0) / 1e6, lo), min((p.end_ns - t0) / 1e6, hi)
        if end <= start:
            continue
        ax.axvspan(start, end, color=(0.5, 0.5, 0.5, 0.08 if i % 2 else 0.2), linewidth=0)
        if (end - start) >= (hi - lo) * 0.012 * max(len(p.label), 4):
            ax.text((start + end) / 2, 1.0, p.label, ha="center", va="bottom", fontsize=7,
                    transform=ax.get_xaxis_transform())  # fmt: skip


def plot_timeline(prof: Profile, path: str | os.PathLike[str], title: str | None = None,
                  window: tuple[float, float] | None = None, detail: bool = True) -> None:  # fmt: skip
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("Profile.plot needs matplotlib: pip install 'autopar[plot]' (or pip install matplotlib)") from None
    ran = prof._ran()
    rows = prof.lanes()
    height = 1.2 + 0.55 * max(len(rows), 1)
    if not ran:
        fig, ax = plt.subplots(figsize=(11, height), dpi=110)
        ax.text(0.5, 0.5, "no operations were recorded", ha="center", va="center", transform=ax.transAxes)
        fig.savefig(path)
        plt.close(fig)
        return
    t0 = min(r.start_ns for r in ran)
    t1 = max(r.end_ns for r in ran)
    whole = window if window is not None else (0.0, (t1 - t0) / 1e6)
    lo_ns, hi_ns = t0 + int(whole[0] * 1e6), t0 + int(whole[1] * 1e6)
    shown = [r for r in ran if r.end_ns >= lo_ns and r.start_ns <= hi_ns]
    zoom = _detail_window(shown, lo_ns, hi_ns) if detail else None
    if zoom is not None:
        zoom = (zoom[0] + whole[0], zoom[1] + whole[0])
    panels = 2 if zoom is not None else 1
    fig, axes = plt.subplots(panels, 1, figsize=(11, height * panels), dpi=110, squeeze=False)
    label = _label_of(ran)
    names = sorted({label(r) for r in ran})
    cmap = plt.get_cmap("tab10")
    colour = {n: cmap(i % 10) for i, n in enumerate(names)}
    if TRAFFIC_LABEL in colour:  # traffic always in one strong colour
        colour[TRAFFIC_LABEL] = (0.8, 0.1, 0.5, 1.0)
    for ax, span in zip(axes[:, 0], [whole] + ([zoom] if zoom is not None else [])):
        _shade_phases(ax, prof, t0, span)
        _draw(ax, ran, rows, t0, span, colour, label)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[n]) for n in names[:10]]
    axes[0, 0].legend(handles, names[:10], loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False,
                      title=f"op (bars under {MIN_WIDTH:.1%} of the span\nare widened to it)", title_fontsize=7)  # fmt: skip
    summary = prof.summary()
    axes[0, 0].set_title(title or f"autopar timeline: {len(ran)} ops, {summary.overlap_share:.0%} of the time two or "
                         "more lanes busy", fontsize=10, pad=14)  # fmt: skip
    if zoom is not None:
        axes[1, 0].set_title(f"zoomed: the first traffic between devices, {zoom[0]:.2f}-{zoom[1]:.2f} ms", fontsize=9,
                             pad=14)  # fmt: skip
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
