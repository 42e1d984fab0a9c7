"""The timeline picture and its text twin agree with the trace they are drawn from."""

import matplotlib
import pytest

matplotlib.use("Agg")

from gpucost_lab.simulate import SCENARIOS, SimConfig, write_trace  # noqa: E402
from gpucost_lab.timeline import gaps, load_trace  # noqa: E402
from gpucost_lab.timeline_plot import LANE_TABLE_COLUMNS, lane_table, plot_timeline  # noqa: E402


def _trace(tmp_path, config=SCENARIOS["dataloader_stall"]):
    return load_trace(write_trace(config, tmp_path / "t.json.gz"))


def test_one_lane_per_thread_and_stream_and_shaded_gaps(tmp_path):
    trace = _trace(tmp_path)
    fig = plot_timeline(trace, top_gaps=2)
    ax = fig.axes[0]
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    drawn = trace.events[trace.events["dur_us"] > 0]
    assert set(lanes) == set(drawn[drawn["kind"].isin(["kernel", "memcpy", "cpu_op", "runtime", "step"])]["lane"])
    assert lanes[-1].startswith("stream")  # streams after threads
    shaded = [p for p in ax.patches if p.get_facecolor()[:3] == matplotlib.colors.to_rgb("red")]
    assert len(shaded) == 2
    labels = [t.get_text() for t in ax.texts]
    widest_ms = gaps(trace, top=1)["duration_us"].iloc[0] / 1e3
    assert labels[0] == f"gap 1: {widest_ms:.2f} ms"


def test_lane_table_sums_durations_per_lane_and_kind(tmp_path):
    trace = _trace(tmp_path, SimConfig(steps=3))
    table = lane_table(trace)
    assert list(table.columns) == LANE_TABLE_COLUMNS
    kernels = trace.events[trace.events["kind"] == "kernel"]
    row = table[(table["kind"] == "kernel")].iloc[0]
    assert row["events"] == len(kernels)
    assert row["busy_ms"] == pytest.approx(kernels["dur_us"].sum() / 1e3)


def test_window_limits_what_is_drawn(tmp_path):
    trace = _trace(tmp_path)
    full = lane_table(trace)["events"].sum()
    first = lane_table(trace, end_ms=5)["events"].sum()
    assert 0 < first < full


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


def test_loading_with_a_progress_bar_counts_every_event(tmp_path, capsys):
    from gpucost_lab.simulate import SimConfig, simulate

    path = write_trace(SimConfig(steps=2), tmp_path / "t.json")
    total = len(simulate(SimConfig(steps=2))["traceEvents"])
    quiet = load_trace(path)
    shown = load_trace(path, progress=True)
    assert shown.events.equals(quiet.events)
    err = capsys.readouterr().err
    assert "reading t.json" in err and f"{total}" in err.replace(",", "")
