"""Draw a trace as lanes, one per thread and per GPU stream, with the widest gaps shaded (chapter 02).

The picture is drawn from :mod:`gpucost_lab.timeline`'s tables; :func:`lane_table` is the same
information as text, to read beside it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .timeline import Trace, gaps

DRAWN_KINDS = ("kernel", "memcpy", "memset", "sync", "runtime", "cpu_op", "annotation", "step")
COLOURS = {
    "kernel": "tab:blue",
    "memcpy": "tab:orange",
    "memset": "tab:brown",
    "sync": "tab:red",
    "runtime": "tab:purple",
    "cpu_op": "tab:green",
    "annotation": "tab:olive",
    "step": "lightgrey",
}
LANE_TABLE_COLUMNS = ["lane", "kind", "events", "busy_ms"]


def _window(trace: Trace, start_ms: float | None, end_ms: float | None) -> tuple[pd.DataFrame, float]:
    """Drawable events, with ``start_ms``/``end_ms`` relative to the trace's first event."""
    events = trace.events
    t0_us = float(events["ts_us"].min())
    drawn = events[events["kind"].isin(DRAWN_KINDS) & (events["dur_us"] > 0)].copy()
    drawn["start_ms"] = (drawn["ts_us"] - t0_us) / 1e3
    drawn["end_ms"] = drawn["start_ms"] + drawn["dur_us"] / 1e3
    if start_ms is not None:
        drawn = drawn[drawn["end_ms"] > start_ms]
    if end_ms is not None:
        drawn = drawn[drawn["start_ms"] < end_ms]
    return drawn, t0_us


def _lane_order(drawn: pd.DataFrame) -> list[str]:
    """Threads first (busiest first), then GPU streams in number order."""
    busy = drawn.groupby("lane")["dur_us"].sum()
    threads = sorted((lane for lane in busy.index if not lane.startswith("stream")), key=lambda lane: -busy[lane])
    streams = sorted(
        (lane for lane in busy.index if lane.startswith("stream")),
        key=lambda lane: int(lane.split()[-1]) if lane.split()[-1].isdigit() else 0,
    )
    return threads + streams


def lane_table(trace: Trace, start_ms: float | None = None, end_ms: float | None = None) -> pd.DataFrame:
    """Per lane and kind: how many events and their summed duration (nested operators count each)."""
    drawn, _ = _window(trace, start_ms, end_ms)
    table = drawn.groupby(["lane", "kind"]).agg(events=("name", "size"), busy_ms=("dur_us", "sum")).reset_index()
    table["busy_ms"] = table["busy_ms"] / 1e3
    order = {lane: i for i, lane in enumerate(_lane_order(drawn))}
    table = table.sort_values(["lane", "kind"], key=lambda s: s.map(order) if s.name == "lane" else s)
    return table[LANE_TABLE_COLUMNS].reset_index(drop=True)


def plot_timeline(
    trace: Trace, *, start_ms: float | None = None, end_ms: float | None = None, top_gaps: int = 3, ax=None
):
    """Lanes of bars, coloured by kind; the ``top_gaps`` widest gaps in the window shaded red."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    drawn, t0_us = _window(trace, start_ms, end_ms)
    lanes = _lane_order(drawn)
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 0.5 + 0.45 * max(len(lanes), 1)))
    for row, lane in enumerate(lanes):
        on_lane = drawn[drawn["lane"] == lane]
        for kind, group in on_lane.groupby("kind"):
            spans = list(zip(group["start_ms"], group["end_ms"] - group["start_ms"]))
            ax.broken_barh(spans, (row - 0.4, 0.8), color=COLOURS[kind], alpha=0.55 if kind == "step" else 0.9)
    widest = gaps(trace)
    widest = widest.assign(start_ms=(widest["start_us"] - t0_us) / 1e3, duration_ms=widest["duration_us"] / 1e3)
    if start_ms is not None:
        widest = widest[widest["start_ms"] + widest["duration_ms"] > start_ms]
    if end_ms is not None:
        widest = widest[widest["start_ms"] < end_ms]
    for rank, gap in enumerate(widest.head(top_gaps).itertuples(), start=1):
        ax.axvspan(gap.start_ms, gap.start_ms + gap.duration_ms, color="red", alpha=0.15)
        ax.text(gap.start_ms, -0.5, f"gap {rank}: {gap.duration_ms:.2f} ms", color="darkred", fontsize=8, va="bottom")
    ax.set_yticks(range(len(lanes)), lanes)
    ax.invert_yaxis()
    ax.set_xlabel("time since the first event (ms)")
    kinds = [k for k in DRAWN_KINDS if k in set(drawn["kind"])]
    ax.legend(
        handles=[Patch(color=COLOURS[k], label=k) for k in kinds],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=8,
        frameon=False,
    )
    ax.set_title(f"{Path(trace.path).name}: {trace.device} timeline")
    return ax.figure


def plot_memory(trace: Trace, device_type: int | None = 0, ax=None):
    """The allocator's running total over the trace (MB against ms from its first event), each outermost
    ``record_function`` phase shaded and named; :func:`gpucost_lab.timeline.allocations.allocations_by_phase`
    is the same story as a table."""
    import matplotlib.pyplot as plt

    from .timeline import memory_over_time
    from .timeline.allocations import allocations_by_phase

    phases = allocations_by_phase(trace, device_type)
    mem = memory_over_time(trace, device_type)
    t0_us = float(trace.events["ts_us"].min())
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.5))
    ax.step(
        (mem["ts_us"] - t0_us) / 1e3,
        mem["total_allocated_bytes"] / 1e6,
        where="post",
        color="tab:blue",
        label="allocated",
    )
    colours = ["tab:green", "tab:orange", "tab:purple", "tab:grey"]
    for i, row in enumerate(phases.itertuples(index=False)):
        start, end = row.start_us / 1e3, (row.start_us + row.duration_us) / 1e3
        ax.axvspan(start, end, color=colours[i % len(colours)], alpha=0.15)
        ax.text((start + end) / 2, ax.get_ylim()[1] * 0.95, row.phase, ha="center", va="top", fontsize=9)
    ax.set_xlabel("ms from the trace's first event")
    ax.set_ylabel("allocated (MB)")
    ax.set_title("Allocator over one step")
    return ax
