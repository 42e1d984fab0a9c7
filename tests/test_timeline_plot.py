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
