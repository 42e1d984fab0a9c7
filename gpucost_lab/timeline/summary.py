"""Every view at once (``analyze``, behind the CLI's ``--json``) and traces side by side (``compare``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from gpucost_lab._validate import integer_at_least
from gpucost_lab.timeline.definitions import check_definitions, rules_differing, with_definitions
from gpucost_lab.timeline.idle import idle_breakdown
from gpucost_lab.timeline.kernels import kernel_breakdown, kernels_by_name
from gpucost_lab.timeline.load import Trace, load_trace
from gpucost_lab.timeline.shapes import top_op_details
from gpucost_lab.timeline.views import (
    busy_basis,
    busy_idle,
    gaps,
    measure_busy,
    memcpy_summary,
    peak_memory_bytes,
    phases,
    select_events,
    steps,
    sync_points,
    top_ops,
    widest_gaps,
)


def _plain(value):
    """A JSON-ready Python value: no numpy scalars; NaN and NA become None."""
    if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    return None if value is pd.NA else value


def ms_records(table: pd.DataFrame, origin_us: float, relative: str = "") -> list[dict]:
    """Rows as plain dicts, each ``*_us`` column as ``*_ms`` (the ``relative`` one measured from ``origin_us``)."""
    return [
        {
            (k[:-3] + "_ms" if k.endswith("_us") else k): _plain(
                (v - origin_us if k == relative else v) / 1e3 if k.endswith("_us") else v
            )
            for k, v in row.items()
        }
        for row in table.to_dict("records")
    ]


GAP_FLOOR_US = 1.0  # analyze() lists gaps of at least the trace clock's 1 us resolution


def analyze(
    path_or_trace,
    top: int = 10,
    *,
    start_us: float | None = None,
    end_us: float | None = None,
    definitions: str = "course",
) -> dict:
    """Every view at once, as plain JSON-ready values in milliseconds, times relative to the trace's first event.

    Keys: device, span_ms, busy_ms, idle_ms, gaps, sync_points, memcpy, top_ops (each with ``operator``,
    ``input_shapes`` and ``stack``: :func:`~gpucost_lab.timeline.shapes.top_op_details`, empty lists when the trace
    was recorded without ``record_shapes`` / ``with_stack``), peak_memory_bytes, phases, steps,
    skipped_events (``Trace.skipped``: the events left out, by reason), idle_breakdown (``idle_breakdown``'s rows,
    ``idle_ms``), kernels (``{"by_type": kernel_breakdown rows, "by_name": the top kernels_by_name rows}``, full names,
    ``total_ms``); the last two are empty lists on a CPU-only trace.
    With nothing to measure busy time from (no kernels; no cpu_ops), span/busy/idle are None and gaps empty.
    Gaps shorter than ``GAP_FLOOR_US`` are left out of the list (they still count as idle time).
    ``definitions="hta"``: span, busy, idle, gaps, idle_breakdown and kernels as HolisticTraceAnalysis 0.6.1
    measures them (:mod:`gpucost_lab.timeline.definitions`); the key ``definitions`` says which were used
    (``used``) and lists every rule where the two differ (``rules``: ``name``, ``course``, ``hta``, ``why``).
    """
    check_definitions(definitions)
    integer_at_least("top", top, 1)
    trace = path_or_trace if isinstance(path_or_trace, Trace) else load_trace(path_or_trace)
    select_events(trace, start_us, end_us)  # an empty window fails here, naming the file
    origin_us = float(trace.events["ts_us"].min())
    result: dict[str, Any] = {"device": trace.device, "span_ms": None, "busy_ms": None, "idle_ms": None, "gaps": []}
    measured, applied = with_definitions(trace, definitions)
    basis = busy_basis(measured, start_us, end_us, include_last_step=applied)
    if basis is not None:
        b, table = measure_busy(basis)
        result.update(
            span_ms=b.span_us / 1e3,
            busy_ms=b.busy_us / 1e3,
            idle_ms=b.idle_us / 1e3,
            gaps=ms_records(widest_gaps(table, top, min_us=GAP_FLOOR_US), origin_us, relative="start_us"),
        )
    points = sync_points(trace, start_us=start_us, end_us=end_us)[["name", "ts_us", "duration_us"]]
    result.update(
        sync_points=ms_records(points, origin_us, relative="ts_us"),
        memcpy=ms_records(memcpy_summary(trace, start_us=start_us, end_us=end_us), origin_us),
        top_ops=_top_ops(trace, top, origin_us, start_us, end_us),
        peak_memory_bytes=_plain(peak_memory_bytes(trace, start_us=start_us, end_us=end_us)),
        phases={
            p["name"]: p["total_ms"] for p in ms_records(phases(trace, start_us=start_us, end_us=end_us), origin_us)
        },
        steps=len(steps(trace, start_us=start_us, end_us=end_us)),
        skipped_events=dict(trace.skipped),
        idle_breakdown=ms_records(
            idle_breakdown(trace, start_us=start_us, end_us=end_us, definitions=definitions), origin_us
        ),
        kernels={
            "by_type": ms_records(
                kernel_breakdown(trace, start_us=start_us, end_us=end_us, definitions=definitions), origin_us
            ),
            "by_name": ms_records(kernels_by_name(trace, top, start_us=start_us, end_us=end_us), origin_us),
        },
        definitions={"used": definitions, "rules": rules_differing()},
    )
    return result


def _top_ops(trace: Trace, top: int, origin_us: float, start_us: float | None, end_us: float | None) -> list[dict]:
    """:func:`~gpucost_lab.timeline.views.top_ops` rows in ms, each with its ``operator``, ``input_shapes`` (their
    time as ``total_ms``) and ``stack`` (:func:`~gpucost_lab.timeline.shapes.top_op_details`)."""
    ops = ms_records(top_ops(trace, top, start_us=start_us, end_us=end_us), origin_us)
    details = top_op_details(trace, [o["name"] for o in ops], start_us=start_us, end_us=end_us)
    for o in ops:
        d = details[o["name"]]
        shapes = [{**s, "total_ms": s["total_us"] / 1e3} for s in d["input_shapes"]]
        o.update(operator=d["operator"], input_shapes=[{k: v for k, v in s.items() if k != "total_us"} for s in shapes])
        o["stack"] = d["stack"]
    return ops


COMPARE_COLUMNS = [
    "span_ms",
    "busy_ms",
    "idle_ms",
    "busy_share",
    "widest_gap_ms",
    "gaps_over_1ms",
    "sync_points",
    "steps",
]


def compare(traces: dict) -> pd.DataFrame:
    """One row per named trace: the figures to hold side by side after changing one suspected cause."""
    rows = {}
    for label, trace in traces.items():
        b = busy_idle(trace)
        g = gaps(trace, min_us=GAP_FLOOR_US)
        rows[label] = [
            b.span_us / 1e3,
            b.busy_us / 1e3,
            b.idle_us / 1e3,
            b.busy_us / b.span_us if b.span_us else 0.0,
            float(g["duration_us"].max()) / 1e3 if len(g) else 0.0,
            int((g["duration_us"] >= 1e3).sum()),
            len(sync_points(trace)),
            len(steps(trace)),
        ]
    return pd.DataFrame.from_dict(rows, orient="index", columns=COMPARE_COLUMNS)
