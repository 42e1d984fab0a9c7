"""Draw a trace as lanes, one per thread and per GPU stream, with the widest gaps shaded (chapter 02).

The picture is drawn from :mod:`gpucost_lab.timeline`'s tables; :func:`lane_table` is the same
information as text, to read beside it. On a thread's lane the kinds that nest (a step holds annotations, which
hold operators, which make runtime calls) each get a band of their own, so that every colour the legend names is
seen: steps a thin band on top, annotations below it, operators with their runtime calls and syncs over them in the
rest. A stream's kernels, copies and memsets share its whole lane. Each figure records its alt text, what it shows
in one sentence (:func:`gpucost_lab.formatting.figure` shows it with the picture).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gpucost_lab._validate import integer_at_least
from gpucost_lab.formatting import describe
from gpucost_lab.timeline import Trace, gaps

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
# a thread lane's bands, as (offset from the lane's top, height) in lane units (a lane is 0.8 high); drawn in this
# order, so a runtime call or a sync, which runs inside an operator, is drawn over it
THREAD_BANDS = {
    "step": (0.0, 0.14),
    "annotation": (0.16, 0.16),
    "cpu_op": (0.34, 0.46),
    "runtime": (0.34, 0.46),
    "sync": (0.34, 0.46),
}
DRAW_ORDER = ("step", "annotation", "cpu_op", "runtime", "sync", "memset", "memcpy", "kernel")
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


def _place_gap_labels(ax, labels: list[tuple[float, float, str]]) -> int:
    """Write each ``(start_ms, end_ms, text)`` label above the lanes, inside the axes (so never under the title),
    at its gap's start, or ending at the gap's end where the axes would cut it; a label that would overlap one
    already placed goes one line higher. Returns the number of lines used."""
    renderer = ax.figure.canvas.get_renderer()
    left, right = ax.get_xlim()
    to_data = ax.transData.inverted()
    line_ends: list[float] = []  # per line, the right end (pixels) of its last label
    for start, end, text in sorted(labels):
        x = max(start, left)
        label = ax.text(x, 0, text, color="darkred", fontsize=8, va="center", ha="left", clip_on=False)
        extent = label.get_window_extent(renderer)
        if to_data.transform((extent.x1, 0))[0] > right:  # past the right edge: end at the gap's end instead
            label.set_x(min(end, right))
            label.set_horizontalalignment("right")
            extent = label.get_window_extent(renderer)
        line = next((i for i, last in enumerate(line_ends) if extent.x0 > last + 4), len(line_ends))
        if line == len(line_ends):
            line_ends.append(extent.x1)
        line_ends[line] = extent.x1
        label.set_y(-0.9 - 0.5 * line)
    return len(line_ends)


def plot_timeline(
    trace: Trace, *, start_ms: float | None = None, end_ms: float | None = None, top_gaps: int = 3, ax=None
):
    """Lanes of bars, coloured by kind, over the window from ``start_ms`` to ``end_ms``; the ``top_gaps`` widest gaps
    of the trace shaded red where they fall in the window, each labelled ``gap N`` with its rank and width as
    :func:`gpucost_lab.timeline.gaps` gives them (``gap 1`` is the table's first row); the x label names those
    outside the window."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    integer_at_least("top_gaps", top_gaps, 0)
    drawn, t0_us = _window(trace, start_ms, end_ms)
    lanes = _lane_order(drawn)
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 0.9 + 0.45 * max(len(lanes), 1)))
    for row, lane in enumerate(lanes):
        _draw_lane(ax, row, lane, drawn[drawn["lane"] == lane])
    left = start_ms if start_ms is not None else 0.0
    right = end_ms if end_ms is not None else float(drawn["end_ms"].max()) if len(drawn) else 1.0
    ax.set_xlim(left, right)
    ranked = gaps(trace).head(top_gaps) if top_gaps else gaps(trace).iloc[:0]  # the table's rows, by rank
    ranked = ranked.assign(start_ms=(ranked["start_us"] - t0_us) / 1e3, width_ms=ranked["duration_us"] / 1e3)
    labels, outside, shaded = [], [], []
    for rank, gap in zip(ranked.index, ranked.itertuples()):
        text = f"gap {rank}: {gap.width_ms:.2f} ms"
        if gap.start_ms < right and gap.start_ms + gap.width_ms > left:
            ax.axvspan(gap.start_ms, gap.start_ms + gap.width_ms, color="red", alpha=0.15)
            labels.append((gap.start_ms, gap.start_ms + gap.width_ms, text))
            shaded.append(f"gap {rank} of {gap.width_ms:.2f} ms at {gap.start_ms:.2f} ms")
        else:
            outside.append(f"{text} at {gap.start_ms:.2f} ms")
    ax.set_ylim(len(lanes) - 0.5, -0.5)  # lanes top to bottom
    lines = _place_gap_labels(ax, labels)
    ax.set_ylim(len(lanes) - 0.5, -0.5 - 0.5 * (lines + 0.6 if lines else 0))  # room for the labels
    ax.set_yticks(range(len(lanes)), lanes)
    xlabel = "time since the first event (ms)"
    if outside:
        xlabel += f"\noutside this window: {'; '.join(outside)}"
    ax.set_xlabel(xlabel)
    kinds = [k for k in DRAWN_KINDS if k in set(drawn["kind"])]  # only what is drawn
    ax.legend(
        handles=[Patch(color=COLOURS[k], label=k) for k in kinds],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=8,
        frameon=False,
    )
    ax.set_title(f"{Path(trace.path).name}: {trace.device} timeline")
    return describe(ax.figure, _timeline_alt(trace, drawn, lanes, (left, right), shaded))


def _draw_lane(ax, row: int, lane: str, on_lane: pd.DataFrame) -> None:
    """One lane's bars, a kind at a time in :data:`DRAW_ORDER`; on a thread, each kind in its band."""
    thread = not lane.startswith("stream")
    for kind in DRAW_ORDER:
        group = on_lane[on_lane["kind"] == kind]
        if group.empty:
            continue
        top, height = THREAD_BANDS.get(kind, (0.0, 0.8)) if thread else (0.0, 0.8)
        spans = list(zip(group["start_ms"], group["end_ms"] - group["start_ms"]))
        ax.broken_barh(spans, (row - 0.4 + top, height), color=COLOURS[kind], gid=f"lane-{kind}")


def _timeline_alt(
    trace: Trace, drawn: pd.DataFrame, lanes: list[str], window: tuple[float, float], shaded: list[str]
) -> str:
    """The figure in one sentence: the window, each lane with the kinds drawn on it, the shaded gaps."""
    on = [
        f"{lane} ({', '.join(k for k in DRAWN_KINDS if k in set(drawn[drawn['lane'] == lane]['kind']))})"
        for lane in lanes
    ]
    gaps_text = f"; shaded: {', '.join(shaded)}" if shaded else ""
    return (
        f"Timeline of {Path(trace.path).name} ({trace.device}) from {window[0]:.2f} to {window[1]:.2f} ms after "
        f"its first event, one lane per thread and stream: {'; '.join(on) or 'nothing drawn'}{gaps_text}."
    )


def plot_memory(trace: Trace, device_type: int | None = 0, ax=None):
    """The allocator's running total over the trace (MB against ms from its first event), each outermost
    ``record_function`` phase shaded and named; :func:`gpucost_lab.timeline.allocations.allocations_by_phase`
    is the same story as a table."""
    import matplotlib.pyplot as plt

    from gpucost_lab.timeline import memory_over_time
    from gpucost_lab.timeline.allocations import allocations_by_phase

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
    describe(ax.figure, _memory_alt(trace, phases))
    return ax


def _memory_alt(trace: Trace, phases: pd.DataFrame) -> str:
    """The memory figure in one sentence: each phase's span and peak, and where the step's peak is."""
    if phases.empty:
        return f"Memory allocated over {Path(trace.path).name}: no allocation was recorded."
    parts = [
        f"{row.phase} {row.duration_us / 1e3:.1f} ms, peak {row.peak_bytes / 1e6:.2f} MB"
        for row in phases.itertuples(index=False)
    ]
    top = phases.loc[phases["peak_bytes"].idxmax()]
    return (
        f"Step plot of the memory allocated over {Path(trace.path).name}, one shaded span per phase "
        f"({'; '.join(parts)}): the highest point, {top['peak_bytes'] / 1e6:.2f} MB, is in {top['phase']}."
    )
