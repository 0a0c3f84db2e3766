"""The profile recorder, its summary and its Chrome-trace export."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from autopar import engine
from autopar.engine import Op, OpState
from autopar.profiler._traffic import TRAFFIC, Classifier


@dataclass(frozen=True, slots=True)
class OpRecord:
    """One finished op. Times are ``time.perf_counter_ns()`` values."""

    name: str
    device: str
    lane: str
    push_ns: int
    start_ns: int
    end_ns: int
    state: str  # "done", "failed", "skipped", "cancelled"
    error: str = ""
    kind: str = ""  # "copy" (between devices), "sum" (of copied data into an array), "" (other): _traffic.py

    @property
    def ran(self) -> bool:
        return self.state in ("done", "failed") and self.start_ns > 0

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9 if self.ran else 0.0


@dataclass(frozen=True, slots=True)
class LaneStats:
    device: str
    lane: str
    ops: int
    busy_s: float
    utilisation: float  # busy / wall


def is_traffic(record: OpRecord) -> bool:
    """Whether an op is traffic between devices: a copy, or a sum of copied data (``_traffic.py``)."""
    return record.kind in TRAFFIC


@dataclass(frozen=True, slots=True)
class Phase:
    """A labelled span of the profile (``with prof.phase("together"):``), drawn on the timeline."""

    label: str
    start_ns: int
    end_ns: int


@dataclass(frozen=True)
class Summary:
    """Busy time per lane and, for the whole run, the share of wall time in
    which at least two lanes were busy at once (the overlap). And how long
    traffic between devices -- copies, and sums of copied data such as
    gradients summed across devices -- kept its lanes busy, and how much of
    that ran while some compute lane was busy too: the traffic hidden behind
    computation."""

    lanes: list[LaneStats]
    wall_s: float
    overlap_s: float
    failed: int = 0
    skipped: int = 0
    traffic_s: float = 0.0
    traffic_hidden_s: float = 0.0

    @property
    def overlap_share(self) -> float:
        return self.overlap_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def traffic_hidden_share(self) -> float:
        """The share of gradient traffic time during which a compute lane was busy (1.0: all hidden)."""
        return self.traffic_hidden_s / self.traffic_s if self.traffic_s > 0 else 0.0

    def __str__(self) -> str:
        head = f"{'device':<8} {'lane':<9} {'ops':>6} {'busy (s)':>10} {'utilisation':>12}"
        rows = [head, "-" * len(head)]
        for s in self.lanes:
            rows.append(f"{s.device:<8} {s.lane:<9} {s.ops:>6} {s.busy_s:>10.4f} {s.utilisation:>11.1%}")
        rows.append("-" * len(head))
        rows.append(f"wall time {self.wall_s:.4f} s; two or more lanes busy {self.overlap_s:.4f} s "
                    f"({self.overlap_share:.1%} of the time)")
        if self.traffic_s:
            rows.append(f"traffic between devices (copies, and sums of copied data) {self.traffic_s:.4f} s, "
                        f"{self.traffic_hidden_share:.1%} of it while a compute lane was busy")
        if self.failed or self.skipped:
            rows.append(f"{self.failed} op(s) failed, {self.skipped} skipped because an input had failed")
        return "\n".join(rows)


def _intersection(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    """Total length common to two merged, sorted lists of intervals."""
    total = i = j = 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if end > start:
            total += end - start
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _describe(error: BaseException) -> str:
    """``"Type: message"``; when the message cannot be formatted (it holds the failed array, whose
    ``repr`` raises), its string arguments and the type names of the others."""
    name = type(error).__name__
    try:
        return f"{name}: {error}"
    except Exception:
        args = ", ".join(a if isinstance(a, str) else f"<{type(a).__name__}>" for a in error.args)
        return f"{name}: {args}" if args else name


@dataclass
class Profile:
    """Records every op that finishes while attached; see :func:`profile`.

    ``op_finished`` runs under the engine's lock, so it formats nothing: an
    error's message may hold user objects -- an array, whose ``repr`` waits
    for the very op being recorded -- and formatting it there deadlocked the
    lane. A failed op's record keeps its error until ``records`` is read,
    which formats it on the reader's thread.
    """

    _records: list[OpRecord] = field(default_factory=list, repr=False)
    started_ns: int = 0
    stopped_ns: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    phases: list[Phase] = field(default_factory=list)
    _classifier: Classifier = field(default_factory=Classifier, repr=False)
    _kinds: dict[int, str] = field(default_factory=dict, repr=False)
    _errors: dict[int, BaseException] = field(default_factory=dict, repr=False)  # record index -> not yet formatted

    # -- engine listener -------------------------------------------------------

    def op_pushed(self, op: Op) -> None:
        kind = self._classifier.classify(op)
        if kind:
            with self._lock:
                self._kinds[id(op)] = kind

    def op_started(self, op: Op) -> None:
        pass

    def op_finished(self, op: Op) -> None:
        failed = op.failure is not None and op.state is OpState.FAILED
        with self._lock:
            record = OpRecord(
                op.name, str(op.device), op.lane, op.t_push, op.t_start, op.t_end or time.perf_counter_ns(),
                op.state.value, "", self._kinds.pop(id(op), ""),
            )
            if failed:
                assert op.failure is not None
                self._errors[len(self._records)] = op.failure.error
            self._records.append(record)

    @property
    def records(self) -> list[OpRecord]:
        """Every op recorded, in the order they finished (failed ones with ``"Type: message"``)."""
        with self._lock:
            owed = self._errors
            self._errors = {}
        described = {i: _describe(error) for i, error in owed.items()}  # outside every lock
        with self._lock:
            for i, text in described.items():
                self._records[i] = replace(self._records[i], error=text)
            return self._records

    @records.setter
    def records(self, records: list[OpRecord]) -> None:
        with self._lock:
            self._records = list(records)
            self._errors = {}

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        """``with prof.phase("together"):`` labels the block's span on the timeline and in the trace."""
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            with self._lock:
                self.phases.append(Phase(label, start, time.perf_counter_ns()))

    # -- context manager ---------------------------------------------------------

    def __enter__(self) -> Profile:
        self.started_ns = time.perf_counter_ns()
        engine.add_listener(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            engine.current_engine().drain(call="profile() (leaving its block)")  # record what the block pushed
        finally:
            engine.remove_listener(self)
            self.stopped_ns = time.perf_counter_ns()

    # -- results -------------------------------------------------------------------

    def _ran(self) -> list[OpRecord]:
        return [r for r in self.records if r.ran]

    def lanes(self) -> list[tuple[str, str]]:
        """The (device, lane) rows that ran an op, in a stable order."""
        order = {"compute": 0, "copy": 1, "copy_h2d": 2, "copy_d2h": 3}
        seen = {(r.device, r.lane) for r in self._ran()}
        return sorted(seen, key=lambda dl: (dl[0].split(":")[0], int(dl[0].split(":")[1]), order.get(dl[1], 9), dl[1]))

    def summary(self) -> Summary:
        ran = self._ran()
        records = self.records
        failed = sum(1 for r in records if r.state == "failed")
        skipped = sum(1 for r in records if r.state == "skipped")
        if not ran:
            return Summary([], 0.0, 0.0, failed, skipped)
        t0 = min(r.start_ns for r in ran)
        t1 = max(r.end_ns for r in ran)
        wall = (t1 - t0) / 1e9
        per_lane: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for r in ran:
            per_lane.setdefault((r.device, r.lane), []).append((r.start_ns, r.end_ns))
        stats = []
        edges: list[tuple[int, int]] = []
        for device, lane in self.lanes():
            merged = _merge(per_lane[(device, lane)])
            busy = sum(e - s for s, e in merged) / 1e9
            stats.append(LaneStats(device, lane, len(per_lane[(device, lane)]), busy, busy / wall if wall else 0.0))
            for s, e in merged:
                edges.append((s, 1))
                edges.append((e, -1))
        edges.sort(key=lambda x: (x[0], x[1]))
        overlap = 0
        active = 0
        last = edges[0][0] if edges else 0
        for t, delta in edges:
            if active >= 2:
                overlap += t - last
            active += delta
            last = t
        traffic = _merge([(r.start_ns, r.end_ns) for r in ran if is_traffic(r)])
        compute = _merge([(r.start_ns, r.end_ns) for r in ran if r.lane == "compute" and not is_traffic(r)])
        traffic_ns = sum(e - s for s, e in traffic)
        hidden_ns = _intersection(traffic, compute)
        return Summary(stats, wall, overlap / 1e9, failed, skipped, traffic_ns / 1e9, hidden_ns / 1e9)

    def chrome_trace(self) -> dict[str, Any]:
        """The trace as a Trace Event Format object: a process per device, a thread row per lane."""
        ran = self._ran()
        events: list[dict[str, Any]] = []
        rows = self.lanes()
        devices = sorted({d for d, _ in rows}, key=lambda d: (d.split(":")[0], int(d.split(":")[1])))
        pid = {d: i + 1 for i, d in enumerate(devices)}
        tid = {row: i + 1 for i, row in enumerate(rows)}
        for d in devices:
            events.append({"name": "process_name", "ph": "M", "pid": pid[d], "tid": 0, "args": {"name": d}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid[d], "tid": 0, "args": {"sort_index": pid[d]}})
        for (d, lane), t in tid.items():
            events.append({"name": "thread_name", "ph": "M", "pid": pid[d], "tid": t, "args": {"name": lane}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid[d], "tid": t, "args": {"sort_index": t}})
        t0 = min((r.push_ns or r.start_ns for r in ran), default=0)
        for r in sorted(ran, key=lambda r: r.start_ns):
            args: dict[str, Any] = {"state": r.state, "queued_us": round((r.start_ns - (r.push_ns or r.start_ns)) / 1e3, 3)}
            if r.error:
                args["error"] = r.error
            if r.kind:
                args["traffic"] = r.kind
            events.append({
                "name": r.name, "cat": r.lane, "ph": "X", "pid": pid[r.device], "tid": tid[(r.device, r.lane)],
                "ts": round((r.start_ns - t0) / 1e3, 3), "dur": round(max(r.end_ns - r.start_ns, 0) / 1e3, 3),
                "args": args,
            })
        if self.phases:  # the labelled spans, on a row of their own above the devices
            events.append({"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "phases"}})
            for p in self.phases:
                events.append({"name": p.label, "cat": "phase", "ph": "X", "pid": 0, "tid": 0,
                               "ts": round((p.start_ns - t0) / 1e3, 3), "dur": round((p.end_ns - p.start_ns) / 1e3, 3)})
        return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"producer": "autopar"}}

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write a Chrome-trace / Perfetto JSON file: one row per device lane."""
        with open(path, "w") as fh:
            json.dump(self.chrome_trace(), fh)

    def plot(self, path: str | os.PathLike[str], title: str | None = None, window: tuple[float, float] | None = None,
             detail: bool = True) -> None:  # fmt: skip
        """Draw the timeline as a PNG: one row per lane, each op a bar, the phases shaded.

        ``window=(start_ms, end_ms)`` (from the first op's start) draws only
        that span; ``detail`` adds a zoomed panel on the first burst of traffic
        between devices when it is too short to see at that scale (``_plot.py``)."""
        from autopar.profiler._plot import plot_timeline

        plot_timeline(self, path, title, window, detail)


def profile() -> Profile:
    """``with autopar.profile() as prof:`` records every op (name, device, lane,
    push/start/end times, failure). Leaving the block waits for the work pushed
    inside it to finish (without raising its failures), so all of it is recorded."""
    return Profile()
