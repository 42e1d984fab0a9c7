"""gpucost_lab.timeline.summary: ``analyze`` (every view at once, in milliseconds) against HolisticTraceAnalysis's
figures (tests/timeline/hta_figures.py) and hand counts of the real traces, and ``compare`` on simulated traces with a
known cause of idle time.
"""

from __future__ import annotations

import json

import pytest

from gpucost_lab import timeline as tl
from gpucost_lab.simulate.config import SCENARIOS
from gpucost_lab.simulate.write import write_trace
from gpucost_lab.timeline import load_trace

from .helpers import ALEXNET, CPU_SMALL, SAMPLED
from .hta_figures import HTA_KERNELS_BY_NAME


# ----------------------------------------------------------------------------------------------- analyze
def test_analyze_reports_the_hta_figures_in_milliseconds():
    result = tl.analyze(SAMPLED)
    assert result["busy_ms"] == pytest.approx(278.680, rel=0.01)
    assert result["idle_ms"] == pytest.approx(321.378, rel=0.01)
    assert result["span_ms"] == pytest.approx(600.058, rel=0.01)


def test_analyze_is_plain_json_with_exactly_the_cli_keys(tmp_path):
    result = tl.analyze(ALEXNET, top=3)
    assert set(result) == {
        "device",
        "span_ms",
        "busy_ms",
        "idle_ms",
        "gaps",
        "sync_points",
        "memcpy",
        "top_ops",
        "peak_memory_bytes",
        "phases",
        "steps",
        "skipped_events",
        "idle_breakdown",
        "kernels",
        "definitions",
    }
    assert result["skipped_events"] == {}  # every complete event of the fixture has a ts and a dur >= 0
    json.dumps(result, allow_nan=False)  # plain types, no NaN
    assert len(result["gaps"]) == 3 and set(result["gaps"][0]) == {"start_ms", "duration_ms", "before", "after"}
    widths = [g["duration_ms"] for g in result["gaps"]]
    assert widths == sorted(widths, reverse=True) and all(g["start_ms"] >= 0 for g in result["gaps"])
    assert set(result["sync_points"][0]) == {"name", "ts_ms", "duration_ms"}
    assert result["memcpy"][0] == {
        "direction": "HtoD",
        "count": 16,
        "total_ms": pytest.approx(55.503),
        "total_bytes": 244_403_360,
    }
    assert set(result["top_ops"][0]) == {
        "name",
        "kind",
        "count",
        "total_ms",
        "share",
        "operator",
        "input_shapes",
        "stack",
    }
    assert result["top_ops"][0]["operator"] == "aten::addmm"  # the op around the kernel's launch
    assert result["top_ops"][0]["input_shapes"] == [] and result["top_ops"][0]["stack"] == []  # not recorded
    assert result["peak_memory_bytes"] is None and result["steps"] == 0 and result["device"] == "cuda"
    cpu = tl.analyze(CPU_SMALL)
    assert cpu["device"] == "cpu" and cpu["phases"] == {"gloo:all_reduce": pytest.approx(2135.455918)}
    json.dumps(cpu, allow_nan=False)


def test_a_cpu_trace_has_no_stream_or_kernel_breakdown():
    trace = tl.load_trace(tl.example_trace("cpu_only_small"))
    assert tl.idle_breakdown(trace).empty and tl.kernel_breakdown(trace).empty and tl.kernels_by_name(trace).empty
    result = tl.analyze(trace)
    assert result["idle_breakdown"] == [] and result["kernels"] == {"by_type": [], "by_name": []}


def test_analyze_carries_both_breakdowns_in_milliseconds(real_traces):
    result = tl.analyze(real_traces["sampled_rank0_gpu"], top=2)
    json.dumps(result, allow_nan=False)
    idle = {(r["stream"], r["idle_category"]): r["idle_ms"] for r in result["idle_breakdown"]}
    assert idle[(7, "other")] == pytest.approx(261.740, rel=0.01)  # HTA: 261,740 us
    by_type = {r["kernel_type"]: r["total_ms"] for r in result["kernels"]["by_type"]}
    assert by_type["communication"] == pytest.approx(171.780, rel=0.01)  # HTA: 171,780 us
    names = result["kernels"]["by_name"]
    assert len(names) == 2 and set(names[0]) == {"name", "kernel_type", "count", "total_ms", "share"}
    assert names[0]["name"] == HTA_KERNELS_BY_NAME["sampled_rank0_gpu"][0][0]  # full name, 82 characters
    assert names[0]["total_ms"] == pytest.approx(195.327)


# ----------------------------------------------------------------------------------------------- compare
def test_compare_puts_the_fix_beside_the_stall(tmp_path):
    from dataclasses import replace

    from gpucost_lab.timeline import COMPARE_COLUMNS, busy_idle, compare

    stall = load_trace(write_trace(SCENARIOS["dataloader_stall"], tmp_path / "stall.json"))
    fixed = load_trace(write_trace(replace(SCENARIOS["dataloader_stall"], num_workers=4), tmp_path / "fixed.json"))
    table = compare({"stall": stall, "fixed": fixed})
    assert list(table.columns) == COMPARE_COLUMNS and list(table.index) == ["stall", "fixed"]
    b = busy_idle(stall)
    assert table.loc["stall", "busy_share"] == pytest.approx(b.busy_us / b.span_us)
    assert table.loc["fixed", "busy_share"] > table.loc["stall", "busy_share"]
    assert table.loc["fixed", "widest_gap_ms"] < table.loc["stall", "widest_gap_ms"]
    # a 64-sample batch decoded on the main thread at 80 us per sample: each host wait is at least 5.1 ms
    # of decoding minus the GPU work it overlaps; every complete step but the first opens one
    assert table.loc["stall", "gaps_over_1ms"] >= SCENARIOS["dataloader_stall"].steps - 3
    assert table.loc["fixed", "gaps_over_1ms"] == 0
