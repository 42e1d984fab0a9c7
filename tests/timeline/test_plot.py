"""gpucost_lab.timeline.plot: the timeline picture and its text twin agree with the simulated trace they are drawn
from and with its gaps table, read off the figure's artists. (The picture rendered, its labels' boxes and its
pixels: tests/timeline/test_plot_rendered.py.)
"""

import re

import matplotlib
import pytest

matplotlib.use("Agg")

from gpucost_lab.simulate.config import SimConfig
from gpucost_lab.timeline import gaps, load_trace  # noqa: E402
from gpucost_lab.timeline.plot import LANE_TABLE_COLUMNS, lane_table, plot_timeline  # noqa: E402

from .helpers import simulated_trace as _trace  # noqa: E402


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
    labels = sorted(t.get_text() for t in ax.texts)
    widest_ms = gaps(trace, top=1)["duration_us"].iloc[0] / 1e3
    assert labels[0] == f"gap 1: {widest_ms:.2f} ms"


GAP_LABEL = re.compile(r"^gap (\d+): ([\d.]+) ms$")


def _labelled(ax) -> dict[int, tuple[str, float]]:
    """rank -> (the width shown, the label's x) of every gap label on the axes."""
    out = {}
    for text in ax.texts:
        match = GAP_LABEL.match(text.get_text())
        assert match, text.get_text()
        out[int(match[1])] = (match[2], text.get_position()[0])
    return out


@pytest.mark.parametrize("end_ms,top", [(None, 3), (20, 3), (45, 3), (None, 10)])
def test_gap_labels_number_the_gaps_as_the_gaps_table_ranks_them(tmp_path, end_ms, top):
    trace = _trace(tmp_path)
    t0_us = trace.events["ts_us"].min()
    table = gaps(trace, min_us=1)  # the chapter's table, widest first
    # the ranking by hand: widest first, rank 1 the widest, as the table's rank index says
    widths = sorted(table["duration_us"], reverse=True)
    assert list(table.index) == list(range(1, len(table) + 1)) and list(table["duration_us"]) == widths
    ax = plot_timeline(trace, end_ms=end_ms, top_gaps=top).axes[0]
    shown = _labelled(ax)
    # the table's first `top` rows, those that start inside the window, each under its own rank and width
    first = table.head(top)
    starts_ms = (first["start_us"] - t0_us) / 1e3
    in_window = [rank for rank in first.index if end_ms is None or starts_ms[rank] < end_ms]
    assert sorted(shown) == in_window
    for rank, (width, x) in shown.items():
        assert width == f"{first.loc[rank, 'duration_us'] / 1e3:.2f}"
        end = starts_ms[rank] + first.loc[rank, "duration_us"] / 1e3
        assert x == pytest.approx(starts_ms[rank]) or x == pytest.approx(min(end, ax.get_xlim()[1]))
    missing = [rank for rank in first.index if rank not in in_window]
    for rank in missing:  # named under the axis instead
        assert f"gap {rank}: {first.loc[rank, 'duration_us'] / 1e3:.2f} ms at" in ax.get_xlabel()
    if end_ms == 20:  # the window the chapter once drew: the table's gap 2 starts at 38 ms
        assert sorted(shown) == [1, 3] and missing == [2]


def test_no_gaps_asked_no_gaps_drawn(tmp_path):
    ax = plot_timeline(_trace(tmp_path), top_gaps=0).axes[0]
    assert len(ax.texts) == 0 and "outside" not in ax.get_xlabel()


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


def test_the_figure_records_its_alt_text(tmp_path):
    from gpucost_lab.formatting import description

    trace = _trace(tmp_path)
    fig = plot_timeline(trace, end_ms=45, top_gaps=3)
    alt = description(fig)
    widest = gaps(trace, top=1)["duration_us"].iloc[0] / 1e3
    assert alt.startswith("Timeline of t.json.gz (cuda) from 0.00 to 45.00 ms") and alt.endswith(".")
    assert "thread 4242 (" in alt and "stream 7 (kernel, memcpy)" in alt
    assert f"gap 1 of {widest:.2f} ms" in alt


def test_the_memory_figure_names_its_peak_phase(tmp_path):
    from gpucost_lab.formatting import description
    from gpucost_lab.timeline.plot import plot_memory

    from .helpers import X
    from .helpers import write_trace as write_events

    def mem(ts, total):
        return {
            "ph": "i",
            "s": "t",
            "name": "[memory]",
            "pid": 1,
            "tid": 1,
            "ts": ts,
            "args": {"Total Allocated": total, "Bytes": 0, "Device Type": 0},
        }

    # forward [0, 1000 us]: up to 1 MB; backward [1000, 3000 us]: 3 MB, the peak, then 1.5 MB
    events = [
        X("user_annotation", "forward", 0, 1000),
        X("user_annotation", "backward", 1000, 2000),
        mem(500, 1_000_000),
        mem(1500, 3_000_000),
        mem(2500, 1_500_000),
    ]
    alt = description(plot_memory(load_trace(write_events(tmp_path / "mem.json", events))).figure)
    assert alt == (
        "Step plot of the memory allocated over mem.json, one shaded span per phase (forward 1.0 ms, peak 1.00 MB; "
        "backward 2.0 ms, peak 3.00 MB): the highest point, 3.00 MB, is in backward."
    )
