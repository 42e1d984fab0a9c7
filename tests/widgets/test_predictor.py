"""gpucost_lab.widgets.predictor (cost_predictor_widget) without a browser: move a slider, read the verdict, the
table and the chart, against hand computations (chapter 03).

By hand: (1 + 0.25) / (1 + 0.20) = 1.0417 -> more expensive; (1 + 0.20) / (1 + 0.25) = 0.96 ->
  cheaper. Baseline 8 h at $2.10/h = $16.80; candidate 8 x 1.25 / 1.2 = 8.333 h = $17.50, misses an 8 h window.
"""

import re

import ipywidgets
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.widgets import cost_predictor_widget

from .helpers import rows, text


@pytest.fixture
def predictor():
    return cost_predictor_widget()  # +20% throughput, +25% steps, $2.10/h, 8 h baseline, 8 h window


def test_predictor_is_a_vbox_with_its_parts_exposed(predictor):
    assert isinstance(predictor, ipywidgets.VBox)
    for s in (predictor.gain, predictor.steps):
        assert isinstance(s, ipywidgets.FloatSlider)
        assert (s.min, s.max, s.step) == (-0.5, 1.0, 0.01)
        assert "%" in s.readout_format
    assert set(predictor.inputs) == {"price_per_hour_usd", "baseline_hours", "window_hours"}
    for part, css in (
        (predictor.verdict, "gpucost-predictor-verdict"),
        (predictor.table, "gpucost-predictor-table"),
        (predictor.chart, "gpucost-predictor-chart"),
    ):
        assert css in part._dom_classes


def test_predictor_default_is_more_expensive(predictor):
    v = text(predictor.verdict.value)
    assert "1.042" in v and "more expensive" in v
    assert predictor.prediction["relative_cost"] == pytest.approx(1.25 / 1.20)


def test_predictor_table_prices_both_runs_against_the_window(predictor):
    table = {r["run"]: r for r in rows(predictor.table.value)}
    assert float(table["baseline"]["hours"]) == pytest.approx(8.0)
    assert table["baseline"]["cost (USD)"] == "$16.80"  # 8 x 2.10
    assert float(table["candidate"]["hours"]) == pytest.approx(8.33)  # 8 x 1.25 / 1.2
    assert table["candidate"]["cost (USD)"] == "$17.50"  # 8.333 x 2.10
    window = "inside the 8 h window?"
    assert table["baseline"][window] == "yes"  # 8 <= 8
    assert table["candidate"][window].startswith("no")


def test_predictor_flips_to_cheaper(predictor):
    predictor.gain.value = 0.25
    predictor.steps.value = 0.20
    v = text(predictor.verdict.value)
    assert "0.960" in v and "cheaper" in v and "more expensive" not in v
    table = {r["run"]: r for r in rows(predictor.table.value)}
    assert float(table["candidate"]["hours"]) == pytest.approx(7.68)  # 8 x 0.96
    assert table["candidate"]["inside the 8 h window?"] == "yes"


def test_chart_marks_the_point_and_describes_it(predictor):
    chart = predictor.chart.value
    assert "<svg" in chart and "<circle" in chart
    sentence = text(chart)
    assert "steps change = throughput gain" in sentence
    assert "above the line" in sentence and "more expensive" in sentence
    predictor.gain.value, predictor.steps.value = 0.25, 0.20
    assert "below the line" in text(predictor.chart.value)
    predictor.steps.value = 0.25  # on the equal-cost line: (1 + 0.25) / (1 + 0.25) = 1
    assert "same cost" in text(predictor.verdict.value)
    assert "on the line" in text(predictor.chart.value)


def test_chart_point_sits_where_the_sliders_say(predictor):
    # the point's position, read back through the axes: the equal-cost line's two ends map gain = steps
    chart = predictor.chart.value
    line = re.search(r'<line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)" stroke="#000" stroke-width', chart)
    x1, y1, x2, y2 = map(float, line.groups())  # (-0.5, -0.5) to (1.0, 1.0)
    cx, cy = map(float, re.search(r'<circle cx="([\d.]+)" cy="([\d.]+)"', chart).groups())
    gain = -0.5 + 1.5 * (cx - x1) / (x2 - x1)
    steps = -0.5 + 1.5 * (cy - y1) / (y2 - y1)
    assert gain == pytest.approx(0.20, abs=0.01) and steps == pytest.approx(0.25, abs=0.01)


@pytest.mark.parametrize(
    "field,value,label",
    [
        ("price_per_hour_usd", 0.0, "price per hour"),
        ("baseline_hours", -1.0, "baseline run"),
        ("window_hours", 0.0, "nightly window"),
    ],
)
def test_predictor_bad_input_shows_a_message(predictor, field, value, label):
    predictor.inputs[field].value = value
    v = text(predictor.verdict.value)
    assert "Invalid input" in v and label in v
    assert predictor.prediction is None
    predictor.gain.value = 0.5  # no exception
    predictor.inputs[field].value = 8.0
    assert predictor.prediction is not None


@pytest.mark.parametrize(
    "kwargs", [dict(throughput_gain=1.5), dict(steps_change=-0.9), dict(price_per_hour_usd=0), dict(window_hours=-1)]
)
def test_predictor_bad_construction_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        cost_predictor_widget(**kwargs)


def test_docstring_names_its_chapter():
    assert "chapter 03" in cost_predictor_widget.__doc__


# ---- properties ------------------------------------------------------------------------------------------------------


_PREDICTOR = cost_predictor_widget()


@given(st.integers(-50, 100), st.integers(-50, 100))
def test_predictor_verdict_is_the_side_of_the_equal_cost_line(gain_pct, steps_pct):
    _PREDICTOR.gain.value, _PREDICTOR.steps.value = gain_pct / 100, steps_pct / 100
    v = text(_PREDICTOR.verdict.value)
    expected = "same cost" if gain_pct == steps_pct else ("cheaper" if steps_pct < gain_pct else "more expensive")
    assert f"): {expected};" in v
