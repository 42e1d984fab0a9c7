"""The roofline picture and its text twin (chapter 04), against hand-derived values.

The course's Linear(1024, 1024) at batch 256 on the A10 (datasheet: 600 GB/s, 31.2 TFLOP/s FP32,
125 TFLOP/s BF16 dense):

fp32: FLOPs 2 x 256 x 1024 x 1024 = 536,870,912; bytes (256x1024 + 1024x1024 + 256x1024 + 1024) x 4
      = 6,295,552; intensity 536,870,912 / 6,295,552 = 85.28 FLOP/B; ridge 31.2e12 / 600e9 = 52 FLOP/B;
      85.28 >= 52 -> compute-bound, attainable 31.2 TFLOP/s, shortest forward 536,870,912 / 31.2e12 = 17.21 us.
bf16: bytes halve to 3,147,776; intensity 170.56 FLOP/B; ridge 125e12 / 600e9 = 208.3 FLOP/B;
      170.56 < 208.3 -> memory-bound, attainable 170.56 x 600e9 = 102.3 TFLOP/s, shortest forward
      = bytes / bandwidth = 3,147,776 / 600e9 = 5.246 us.
"""

import math

import matplotlib
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from gpucost_lab.roofline.bound import linear_layer_cost, lookup  # noqa: E402
from gpucost_lab.roofline.plot import TABLE_COLUMNS, plot_roofline, roofline_table  # noqa: E402

FP32_INTENSITY = 536_870_912 / 6_295_552  # 85.28 FLOP/B
BF16_INTENSITY = 536_870_912 / 3_147_776  # 170.56 FLOP/B


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _line(ax, gid):
    (line,) = [ln for ln in ax.lines if ln.get_gid() == gid]
    return line


def test_fp32_linear_on_a10_is_compute_bound():
    row = roofline_table("A10", "float32", [("linear", FP32_INTENSITY)]).iloc[0]
    assert row["intensity_flops_per_byte"] == pytest.approx(85.28, abs=0.01)
    assert row["ridge_point_flops_per_byte"] == pytest.approx(52.0)
    assert row["bound"] == "compute-bound"
    assert row["attainable_tflops"] == pytest.approx(31.2)
    assert row["peak_source"] == "NVIDIA A10 Tensor Core GPU datasheet"


def test_bf16_linear_on_a10_is_memory_bound():
    row = roofline_table("A10", "bfloat16", [("linear", BF16_INTENSITY)]).iloc[0]
    assert row["intensity_flops_per_byte"] == pytest.approx(170.6, abs=0.05)
    assert row["ridge_point_flops_per_byte"] == pytest.approx(208.3, abs=0.05)
    assert row["bound"] == "memory-bound"
    assert row["attainable_tflops"] == pytest.approx(170.56 * 600e9 / 1e12, rel=1e-4)  # 102.3
    assert row["attainable_tflops"] == pytest.approx(102.3, abs=0.05)


def test_a_layer_cost_adds_flops_and_the_shortest_time():
    table = roofline_table(lookup("A10"), "float32", [("fp32", linear_layer_cost(256, 1024, 1024, "float32"))])
    assert list(table.columns) == [*TABLE_COLUMNS, "flops", "min_time_us", "peak_source"]
    assert table.loc[0, "flops"] == 536_870_912
    assert table.loc[0, "min_time_us"] == pytest.approx(17.21, abs=0.01)
    bf16 = roofline_table("A10", "bfloat16", [("bf16", linear_layer_cost(256, 1024, 1024, "bfloat16"))])
    assert bf16.loc[0, "intensity_flops_per_byte"] == pytest.approx(BF16_INTENSITY)
    # memory-bound: the time is the bytes over the bandwidth, 3,147,776 / 600e9
    assert bf16.loc[0, "min_time_us"] == pytest.approx(3_147_776 / 600e9 * 1e6)


def test_a_measured_rate_above_the_roof_is_impossible():
    # 53.7 TFLOP/s claimed for a compute-bound fp32 kernel on a 31.2 TFLOP/s card: 172% of the roof
    table = roofline_table(
        "A10", "float32", [("unsynchronized", FP32_INTENSITY, 53.7e12), ("synchronized", FP32_INTENSITY, 21.5e12)]
    )
    assert table["impossible"].tolist() == [True, False]
    assert table.loc[0, "fraction_of_attainable"] == pytest.approx(53.7 / 31.2)
    assert table.loc[1, "measured_tflops"] == pytest.approx(21.5)
    assert "flops" not in table.columns


def test_roof_lines_meet_at_the_ridge_point_and_follow_bandwidth_and_peak():
    fig = plot_roofline("A10", "float32", points=[("linear", FP32_INTENSITY)])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    memory, compute, ridge = (_line(ax, g) for g in ("memory-roof", "compute-roof", "ridge-point"))
    mx, my = memory.get_data()
    cx, cy = compute.get_data()
    # both roofs pass through (52 FLOP/B, 31.2 TFLOP/s)
    assert (mx[-1], my[-1]) == pytest.approx((52.0, 31.2))
    assert (cx[0], cy[0]) == pytest.approx((52.0, 31.2))
    assert tuple(ridge.get_data()[0]) + tuple(ridge.get_data()[1]) == pytest.approx((52.0, 31.2))
    # memory roof: y = intensity x 600 GB/s; compute roof: flat at the peak
    for x, y in zip(mx, my):
        assert y == pytest.approx(x * 600e9 / 1e12)
    assert list(cy) == pytest.approx([31.2, 31.2])
    assert "600 GB/s" in memory.get_label() and "31.2 TFLOP/s" in compute.get_label()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("ridge point: 52 FLOP/byte" in t for t in legend)


def test_points_sit_on_the_roof_and_at_the_measured_rate():
    fig = plot_roofline("A10", "bfloat16", points=[("bf16", BF16_INTENSITY, 60e12)])
    ax = fig.axes[0]
    on_roof = _line(ax, "point-attainable").get_data()
    measured = _line(ax, "point-measured").get_data()
    assert (on_roof[0][0], on_roof[1][0]) == pytest.approx((BF16_INTENSITY, BF16_INTENSITY * 0.6))  # 102.3
    assert (measured[0][0], measured[1][0]) == pytest.approx((BF16_INTENSITY, 60.0))
    lo, hi = ax.get_xlim()
    assert lo <= 208.3 <= hi and lo <= BF16_INTENSITY <= hi


def test_a_slow_measurement_below_the_memory_roof_stays_in_view():
    # 0.5 FLOP/B on the A10 can attain 0.5 x 600e9 = 0.3 TFLOP/s; 1 GFLOP/s was measured
    ax = plot_roofline("A10", "float32", [("slow", 0.5, 1e9)]).axes[0]
    bottom, top = ax.get_ylim()
    assert bottom < 1e-3 and top > 31.2


def test_two_dtypes_on_one_axes_share_the_memory_roof():
    fig, ax = plt.subplots()
    plot_roofline("A10", "float32", [("fp32", FP32_INTENSITY)], ax=ax)
    assert plot_roofline("A10", "bfloat16", [("bf16", BF16_INTENSITY)], ax=ax) is fig
    ridges = sorted(ln.get_data()[0][0] for ln in ax.lines if ln.get_gid() == "ridge-point")
    assert ridges == pytest.approx([52.0, 125e12 / 600e9])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sum("memory roof" in t for t in legend) == 1
    assert ax.get_ylim()[1] >= 125  # the higher roof stays in view


@pytest.mark.parametrize(
    "points, field",
    [
        ([("x",)], "points[0]"),
        (["ab"], "points[0]"),
        ([("", 10.0)], "points[0] label"),
        ([("x", 10.0), ("y", 0.0)], "points[1] intensity_flops_per_byte"),
        ([("x", 10.0, -1.0)], "points[0] measured_flops_per_s"),
        ([("x", math.nan)], "points[0] intensity_flops_per_byte"),
    ],
)
def test_bad_points_name_the_field(points, field):
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        roofline_table("A10", "float32", points)
    with pytest.raises(ValueError, match=field.replace("[", r"\[").replace("]", r"\]")):
        plot_roofline("A10", "float32", points)


def test_unknown_accelerator_and_dtype_are_refused():
    with pytest.raises(ValueError, match="accelerator"):
        roofline_table("B300", "float32", [("x", 10.0)])
    with pytest.raises(ValueError, match="dtype"):
        plot_roofline("A10", "float64")


def test_the_figure_records_its_alt_text_with_every_roofline_drawn_on_it():
    from gpucost_lab.formatting import description

    fig, ax = plt.subplots()
    plot_roofline("A10", "float32", [("Linear fp32", FP32_INTENSITY)], ax=ax)
    first = description(fig)
    plot_roofline("A10", "bfloat16", [("Linear bf16", BF16_INTENSITY)], ax=ax)
    alt = description(fig)
    # the module doc's figures: fp32 ridge 52, 85.28 compute-bound at 31.2; bf16 ridge 208.3, 170.6 memory-bound at 102
    assert alt.startswith("A10 roofline on log-log axes") and alt.endswith(".") and "600 GB/s" in alt
    assert (
        "float32 compute roof 31.2 TFLOP/s, ridge point 52 FLOP/byte, Linear fp32 at 85.28 FLOP/byte, compute-bound"
        in alt
    )
    assert (
        "bfloat16 compute roof 125 TFLOP/s, ridge point 208.3 FLOP/byte, Linear bf16 at 170.6 FLOP/byte, memory-bound, "
        "on the roof at 102 TFLOP/s" in alt
    )
    assert "bfloat16" not in first and alt.count("A10 roofline") == 1  # one sentence, both rooflines
    with_rate = description(plot_roofline("A10", "float32", [("fast", FP32_INTENSITY, 53.7e12)]))
    assert "measured 53.7 TFLOP/s" in with_rate
