"""The course widgets without a browser: set a control, read what the widget now shows.

Ledger (chapter 04), course numbers: static 3.2 GB, 0.34 GB/sample, 24 GB device, 10% reserve, 10 blocks.
Budget = 24 x 0.9 = 21.6 GB; largest microbatch = floor((21.6 - 3.2) / 0.34) = floor(54.1) = 54.
  32: each block adds 0.34 x 32 / 10 = 1.088 GB -> 1.088 ... 10.88 GB; peak 3.2 + 10.88 = 14.08 GB, fits.
  60: each block adds 2.04 GB; block 9 holds 3.2 + 18.36 = 21.56 <= 21.6, block 10 holds 23.6 > 21.6.
  57: each block adds 1.938 GB; block 9 holds 3.2 + 17.442 = 20.642 fits, block 10 holds 22.58: over.
  100: each block adds 3.4 GB; block 5 holds 3.2 + 17 = 20.2 fits, block 6 holds 3.2 + 20.4 = 23.6: over
       by 2.0 GB; the whole step would need 3.2 + 34 = 37.2 GB.
  60 with checkpointing (keep 0.1): 2.04 x (9 x 0.1 + 1) = 3.876 GB; peak 7.076 GB, fits; saves 23.6 - 7.076
       = 16.524 GB; largest microbatch floor(18.4 / (0.034 x 1.9)) = 284.
Predictor (chapter 03): (1 + 0.25) / (1 + 0.20) = 1.0417 -> more expensive; (1 + 0.20) / (1 + 0.25) = 0.96 ->
  cheaper. Baseline 8 h at $2.10/h = $16.80; candidate 8 x 1.25 / 1.2 = 8.333 h = $17.50, misses an 8 h window.
"""
import re
from html.parser import HTMLParser

import ipywidgets
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.widgets import cost_predictor_widget, memory_ledger_widget


class _Cells(HTMLParser):
    """Collect the text of every <tr>'s cells (th and td)."""

    def __init__(self):
        super().__init__()
        self.rows, self._row, self._cell = [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def rows(html_text):
    parser = _Cells()
    parser.feed(html_text)
    header, *body = parser.rows
    return [dict(zip(header, r)) for r in body]


def text(html_text):
    """What a reader sees: tags dropped, whitespace collapsed, no space before punctuation."""
    plain = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html_text)).replace("&gt;", ">").strip()
    return re.sub(r" ([:;,.])", r"\1", plain)


def gb_after(label, s):
    """The number of GB printed right after ``label`` in ``s``."""
    return float(re.search(re.escape(label) + r"\s*([-\d.]+) GB", s).group(1))


def oom_block(s):
    m = re.search(r"out of memory at block (\d+)", s)
    return int(m.group(1)) if m else None


# ---- memory ledger ----------------------------------------------------------------------------------

@pytest.fixture
def ledger():
    return memory_ledger_widget()  # the course ledger, microbatch 32


def test_ledger_is_a_vbox_with_its_parts_exposed(ledger):
    assert isinstance(ledger, ipywidgets.VBox)
    assert isinstance(ledger.slider, ipywidgets.IntSlider)
    assert (ledger.slider.description, ledger.slider.min, ledger.slider.max) == ("microbatch", 1, 128)
    assert set(ledger.inputs) == {"static_gb", "activation_gb_per_sample", "device_gb", "reserve_percent"}
    assert isinstance(ledger.checkpointing, (ipywidgets.Checkbox, ipywidgets.ToggleButton))
    for part, css in ((ledger.verdict, "gpucost-ledger-verdict"), (ledger.table, "gpucost-ledger-table"),
                      (ledger.bar, "gpucost-ledger-bar")):
        assert isinstance(part, ipywidgets.HTML)
        assert css in part._dom_classes


def test_reserve_is_entered_in_percent(ledger):
    assert "%" in ledger.inputs["reserve_percent"].description
    assert ledger.inputs["reserve_percent"].value == pytest.approx(10.0)


def test_course_ledger_at_32(ledger):
    v = text(ledger.verdict.value)
    assert "fits" in v and oom_block(v) is None
    assert gb_after("peak", v) == pytest.approx(14.08)
    assert gb_after("headroom", v) == pytest.approx(7.52)
    assert re.search(r"largest microbatch that fits: 54\b", v)
    table = rows(ledger.table.value)
    assert [r["block"] for r in table] == [f"block {k}" for k in range(1, 11)]
    assert [float(r["activations (GB)"]) for r in table] == pytest.approx([1.088 * k for k in range(1, 11)], abs=1e-3)
    assert [float(r["resident (GB)"]) for r in table] == pytest.approx([3.2 + 1.088 * k for k in range(1, 11)],
                                                                       abs=1e-3)
    assert {r["state"] for r in table} == {"fits"}
    assert ledger.result.peak_gb == pytest.approx(14.08)


def test_bar_names_every_segment_against_the_device(ledger):
    bar = text(ledger.bar.value)
    assert "<svg" in ledger.bar.value and "matplotlib" not in ledger.bar.value
    assert gb_after("static", bar) == pytest.approx(3.2)
    assert gb_after("peak activations", bar) == pytest.approx(10.88)
    assert gb_after("headroom", bar) == pytest.approx(7.52)
    assert gb_after("reserve", bar) == pytest.approx(2.4)  # 10% of 24
    assert gb_after("device", bar) == pytest.approx(24)


def test_moving_to_60_runs_out_of_memory_at_block_10(ledger):
    ledger.slider.value = 60
    v = text(ledger.verdict.value)
    assert oom_block(v) == 10
    assert gb_after("out of memory at block 10:", v) == pytest.approx(23.6)
    assert gb_after("resident,", v) == pytest.approx(2.0)  # 23.6 - 21.6 over the budget
    states = [r["state"] for r in rows(ledger.table.value)]
    assert states == ["fits"] * 9 + ["over budget"]
    assert "over budget by 2 gb" in text(ledger.bar.value).lower()
    assert ledger.result.fits is False


def test_57_also_crosses_at_block_10(ledger):
    ledger.slider.value = 57
    assert oom_block(text(ledger.verdict.value)) == 10
    table = rows(ledger.table.value)
    assert float(table[8]["resident (GB)"]) == pytest.approx(20.642, abs=1e-3)
    assert float(table[9]["resident (GB)"]) == pytest.approx(22.58, abs=1e-3)


def test_100_crosses_earlier_at_block_6(ledger):
    ledger.slider.value = 100
    v = text(ledger.verdict.value)
    assert oom_block(v) == 6
    assert gb_after("out of memory at block 6:", v) == pytest.approx(23.6)
    assert gb_after("would need", v) == pytest.approx(37.2)
    states = [r["state"] for r in rows(ledger.table.value)]
    assert states == ["fits"] * 5 + ["over budget"] * 5


def test_checkpointing_at_60_fits(ledger):
    ledger.slider.value = 60
    ledger.checkpointing.value = True
    v = text(ledger.verdict.value)
    assert oom_block(v) is None and "fits" in v
    assert gb_after("peak", v) == pytest.approx(7.076)
    assert gb_after("saves", v) == pytest.approx(16.524)
    assert "4/3" in v  # the recompute cost
    assert re.search(r"with activation checkpointing: 284\b", v)
    table = rows(ledger.table.value)
    assert table[-1]["block"] == "recompute block 10"
    assert float(table[-1]["resident (GB)"]) == pytest.approx(7.076, abs=1e-3)
    assert [float(r["activations (GB)"]) for r in table[:-1]] == pytest.approx([0.204 * k for k in range(1, 11)],
                                                                               abs=1e-3)
    assert ledger.result.checkpointing is True


def test_unchecking_checkpointing_restores_the_verdict(ledger):
    ledger.slider.value = 60
    ledger.checkpointing.value = True
    ledger.checkpointing.value = False
    assert oom_block(text(ledger.verdict.value)) == 10
    assert "recompute" not in ledger.table.value


def test_checkpointing_oom_in_the_recompute_is_named():
    # microbatch 120, static 12: per block 0.34 x 120 / 10 = 4.08; forward block 10 holds 12 + 4.08 = 16.08 (fits),
    # the recompute holds 12 + 4.08 x 1.9 = 19.752 > the 18 GB budget of a 20 GB device with a 10% reserve
    w = memory_ledger_widget(static_gb=12.0, device_gb=20.0, microbatch=120)
    w.checkpointing.value = True
    v = text(w.verdict.value)
    assert "while recomputing block 10" in v
    assert gb_after("block 10 in backward:", v) == pytest.approx(19.752)


@pytest.mark.parametrize("field,value,label", [
    ("device_gb", 0.0, "device (GB)"), ("reserve_percent", 100.0, "reserve (%)"),
    ("activation_gb_per_sample", -1.0, "activations per sample"), ("static_gb", -0.5, "static (GB)"),
])
def test_bad_input_shows_a_message_not_an_exception(ledger, field, value, label):
    ledger.inputs[field].value = value  # must not raise
    v = text(ledger.verdict.value)
    assert "Invalid input" in v and label in v
    assert ledger.table.value == "" and ledger.bar.value == ""
    assert ledger.result is None
    ledger.slider.value = 40  # still no exception while the input is bad
    assert "Invalid input" in text(ledger.verdict.value)


def test_fixing_a_bad_input_recovers(ledger):
    ledger.inputs["device_gb"].value = 0.0
    ledger.inputs["device_gb"].value = 24.0
    assert gb_after("peak", text(ledger.verdict.value)) == pytest.approx(14.08)


def test_editing_inputs_recomputes(ledger):
    # 80 GB device, 10% reserve: budget 72; largest microbatch floor((72 - 3.2) / 0.34) = floor(202.35) = 202
    ledger.inputs["device_gb"].value = 80.0
    assert re.search(r"largest microbatch that fits: 202\b", text(ledger.verdict.value))


def test_static_memory_over_budget_has_no_microbatch():
    w = memory_ledger_widget(static_gb=22.0, microbatch=1)  # 22 > 21.6 budget
    v = text(w.verdict.value)
    assert oom_block(v) == 1
    assert "largest microbatch that fits: none" in v


def test_two_widgets_keep_separate_state():
    a, b = memory_ledger_widget(), memory_ledger_widget()
    a.slider.value = 60
    assert oom_block(text(a.verdict.value)) == 10 and oom_block(text(b.verdict.value)) is None


@pytest.mark.parametrize("kwargs", [dict(device_gb=0), dict(reserve_fraction=1.0), dict(blocks=0),
                                    dict(microbatch=0), dict(microbatch=129)])
def test_bad_construction_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        memory_ledger_widget(**kwargs)


# ---- cost predictor ---------------------------------------------------------------------------------

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
    for part, css in ((predictor.verdict, "gpucost-predictor-verdict"), (predictor.table, "gpucost-predictor-table"),
                      (predictor.chart, "gpucost-predictor-chart")):
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
    line = re.search(r'<line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)" stroke="#000" stroke-width',
                     chart)
    x1, y1, x2, y2 = map(float, line.groups())  # (-0.5, -0.5) to (1.0, 1.0)
    cx, cy = map(float, re.search(r'<circle cx="([\d.]+)" cy="([\d.]+)"', chart).groups())
    gain = -0.5 + 1.5 * (cx - x1) / (x2 - x1)
    steps = -0.5 + 1.5 * (cy - y1) / (y2 - y1)
    assert gain == pytest.approx(0.20, abs=0.01) and steps == pytest.approx(0.25, abs=0.01)


@pytest.mark.parametrize("field,value,label", [
    ("price_per_hour_usd", 0.0, "price per hour"), ("baseline_hours", -1.0, "baseline run"),
    ("window_hours", 0.0, "nightly window"),
])
def test_predictor_bad_input_shows_a_message(predictor, field, value, label):
    predictor.inputs[field].value = value
    v = text(predictor.verdict.value)
    assert "Invalid input" in v and label in v
    assert predictor.prediction is None
    predictor.gain.value = 0.5  # no exception
    predictor.inputs[field].value = 8.0
    assert predictor.prediction is not None


@pytest.mark.parametrize("kwargs", [dict(throughput_gain=1.5), dict(steps_change=-0.9), dict(price_per_hour_usd=0),
                                    dict(window_hours=-1)])
def test_predictor_bad_construction_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        cost_predictor_widget(**kwargs)


def test_docstrings_name_their_chapters():
    assert "chapter 04" in memory_ledger_widget.__doc__
    assert "chapter 03" in cost_predictor_widget.__doc__


# ---- properties ---------------------------------------------------------------------------------------

_LEDGER = memory_ledger_widget()
_PREDICTOR = cost_predictor_widget()


@given(st.integers(1, 128))
def test_ledger_verdict_matches_the_hand_rule(microbatch):
    # fits iff 3.2 + 0.34 m <= 21.6, i.e. m <= 54; else the first block k with 3.2 + 0.034 m k > 21.6
    _LEDGER.checkpointing.value = False
    _LEDGER.slider.value = microbatch
    v = text(_LEDGER.verdict.value)
    if microbatch <= 54:
        assert oom_block(v) is None and "fits" in v
    else:
        first = next(k for k in range(1, 11) if 3.2 + 0.034 * microbatch * k > 21.6 + 1e-9)
        assert oom_block(v) == first


@given(st.integers(-50, 100), st.integers(-50, 100))
def test_predictor_verdict_is_the_side_of_the_equal_cost_line(gain_pct, steps_pct):
    _PREDICTOR.gain.value, _PREDICTOR.steps.value = gain_pct / 100, steps_pct / 100
    v = text(_PREDICTOR.verdict.value)
    expected = "same cost" if gain_pct == steps_pct else ("cheaper" if steps_pct < gain_pct else "more expensive")
    assert f"→ {expected}" in v
