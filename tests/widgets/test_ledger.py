"""gpucost_lab.widgets.ledger (memory_ledger_widget) without a browser: set a control, read what the widget now
shows, against hand computations on the course's numbers (chapter 04).

Course numbers: static 3.2 GB, 0.34 GB/sample, 24 GB device, 10% reserve, 10 blocks.
Budget = 24 x 0.9 = 21.6 GB; largest microbatch = floor((21.6 - 3.2) / 0.34) = floor(54.1) = 54.
  32: each block adds 0.34 x 32 / 10 = 1.088 GB -> 1.088 ... 10.88 GB; peak 3.2 + 10.88 = 14.08 GB, fits.
  60: each block adds 2.04 GB; block 9 holds 3.2 + 18.36 = 21.56 <= 21.6, block 10 holds 23.6 > 21.6.
  57: each block adds 1.938 GB; block 9 holds 3.2 + 17.442 = 20.642 fits, block 10 holds 22.58: over.
  100: each block adds 3.4 GB; block 5 holds 3.2 + 17 = 20.2 fits, block 6 holds 3.2 + 20.4 = 23.6: over
       by 2.0 GB; the whole step would need 3.2 + 34 = 37.2 GB.
  60 with checkpointing (keep 0.1): 2.04 x (9 x 0.1 + 1) = 3.876 GB; peak 7.076 GB, fits; saves 23.6 - 7.076
       = 16.524 GB; largest microbatch floor(18.4 / (0.034 x 1.9)) = 284.
  Slider: 1..128, or to one past the largest microbatch that fits when that is more: 285 with full recomputation
       (284: 3.2 + 0.034 x 284 x 1.9 = 21.546 fits; 285: 3.2 + 18.411 = 21.611 > 21.6 in the recompute).
  bf16-mixed: activations 0.34 x 2 / 4 = 0.17 GB/sample; largest floor((21.6 - 3.2) / 0.17) = floor(108.24) = 108
       (108: 3.2 + 18.36 = 21.56 fits; 109: 3.2 + 18.53 = 21.73 over); 108 + 1 < 128, so the slider stays at 128.
  Selective recomputation (keeps 1 - 0.7 = 0.3 of each block): 0.034 x (9 x 0.3 + 1) = 0.1258 GB per sample at the
       peak; largest floor(18.4 / 0.1258) = floor(146.26) = 146, slider to 147; step time x 1.027.
  Accumulation K = 2 at microbatch 30: global batch 60, memory the microbatch's (peak 3.2 + 10.2 = 13.4 GB); step
       time 1 + (2 - 1) x 0.15 = 1.15; with full recomputation too 1.15 x 4/3 = 1.5333. 60 > 54: as one microbatch
       the global batch does not fit.
"""

import re

import ipywidgets
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.widgets import cost_predictor_widget, memory_ledger_widget

from .helpers import gb_after, oom_block, rows, text


@pytest.fixture
def ledger():
    return memory_ledger_widget()  # the course ledger, microbatch 32


def test_ledger_is_a_vbox_with_its_parts_exposed(ledger):
    assert isinstance(ledger, ipywidgets.VBox)
    assert isinstance(ledger.slider, ipywidgets.IntSlider)
    assert (ledger.slider.description, ledger.slider.min, ledger.slider.max) == ("microbatch", 1, 128)
    assert set(ledger.inputs) == {"static_gb", "activation_gb_per_sample", "device_gb", "reserve_percent"}
    assert isinstance(ledger.checkpointing, (ipywidgets.Checkbox, ipywidgets.ToggleButton))
    for part, css in (
        (ledger.verdict, "gpucost-ledger-verdict"),
        (ledger.table, "gpucost-ledger-table"),
        (ledger.bar, "gpucost-ledger-bar"),
    ):
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
    assert [float(r["resident (GB)"]) for r in table] == pytest.approx(
        [3.2 + 1.088 * k for k in range(1, 11)], abs=1e-3
    )
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
    assert [float(r["activations (GB)"]) for r in table[:-1]] == pytest.approx(
        [0.204 * k for k in range(1, 11)], abs=1e-3
    )
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


@pytest.mark.parametrize(
    "field,value,label",
    [
        ("device_gb", 0.0, "device (GB)"),
        ("reserve_percent", 100.0, "reserve (%)"),
        ("activation_gb_per_sample", -1.0, "activations per sample"),
        ("static_gb", -0.5, "static (GB)"),
    ],
)
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


@pytest.mark.parametrize(
    "kwargs", [dict(device_gb=0), dict(reserve_fraction=1.0), dict(blocks=0), dict(microbatch=0), dict(microbatch=129)]
)
def test_bad_construction_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        memory_ledger_widget(**kwargs)


# ---- precision, recomputation and accumulation -----------------------------------------------------------------------


def test_ledger_has_precision_recomputation_and_accumulation_controls(ledger):
    assert isinstance(ledger.precision, ipywidgets.RadioButtons)
    assert ledger.precision.options == ("fp32", "bf16-mixed", "fp16-mixed")
    assert isinstance(ledger.recompute, ipywidgets.RadioButtons)
    choices = dict(ledger.recompute.options)  # label -> value
    assert list(choices.values()) == ["none", "selective", "full"]
    assert choices["full (activation checkpointing)"] == "full"  # the checkbox became this choice
    assert isinstance(ledger.accumulation, ipywidgets.IntSlider)
    assert (ledger.accumulation.min, ledger.accumulation.max) == (1, 16)
    for part, css in (
        (ledger.precision, "gpucost-ledger-precision"),
        (ledger.recompute, "gpucost-ledger-recompute"),
        (ledger.accumulation, "gpucost-ledger-accumulation"),
    ):
        assert css in part._dom_classes
        assert any(part in getattr(child, "children", ()) for child in ledger.children)  # displayed
    assert ledger.checkpointing not in [w for c in ledger.children for w in (c, *getattr(c, "children", ()))]


def test_defaults_are_the_plain_run(ledger):
    assert (ledger.precision.value, ledger.recompute.value, ledger.accumulation.value) == ("fp32", "none", 1)
    assert (ledger.slider.min, ledger.slider.max, ledger.slider.value) == (1, 128, 32)
    r = ledger.result
    assert (r.precision, r.recomputation, r.accumulation_steps, r.global_batch) == ("fp32", "none", 1, 32)
    assert r.step_time_factor == 1.0
    v = text(ledger.verdict.value)
    assert "global batch 32: one microbatch of 32, no recomputation. This is the plain run" in v
    assert "parity" not in v and "recomput" not in v.replace("no recomputation", "")
    caption = re.search(r"<caption[^>]*>(.*?)</caption>", ledger.table.value).group(1)
    assert caption == "Memory resident at microbatch 32 (without activation checkpointing; budget 21.6 GB)"


def test_full_recomputation_takes_the_slider_past_284(ledger):
    ledger.recompute.value = "full"
    assert ledger.slider.max == 285 and ledger.slider.value == 32  # still in range: kept
    assert ledger.checkpointing.value is True
    ledger.slider.value = 284
    v = text(ledger.verdict.value)
    assert "fits" in v and gb_after("peak", v) == pytest.approx(21.546)
    assert re.search(r"with activation checkpointing: 284 \(54 without\)", v)
    ledger.slider.value = 285
    v = text(ledger.verdict.value)
    assert "while recomputing block 10" in v and gb_after("block 10 in backward:", v) == pytest.approx(21.611)
    assert rows(ledger.table.value)[-1]["state"] == "over budget"


def test_going_back_to_no_recomputation_clips_the_slider(ledger):
    ledger.recompute.value = "full"
    ledger.slider.value = 200
    ledger.recompute.value = "none"
    assert (ledger.slider.max, ledger.slider.value) == (128, 128)  # 200 is out of range: clipped to the new end
    # redrawn at 128: each block adds 0.034 x 128 = 4.352 GB; block 4 holds 20.608, block 5 holds 24.96 > 21.6
    assert ledger.result.microbatch == 128 and oom_block(text(ledger.verdict.value)) == 5
    ledger.recompute.value = "full"
    ledger.slider.value = 100
    ledger.recompute.value = "none"
    assert (ledger.slider.max, ledger.slider.value) == (128, 100)  # in range: kept


def test_the_old_checkbox_still_switches_full_recomputation(ledger):
    ledger.checkpointing.value = True
    assert ledger.recompute.value == "full" and ledger.slider.max == 285
    ledger.recompute.value = "selective"
    assert ledger.checkpointing.value is False and ledger.recompute.value == "selective"
    ledger.checkpointing.value = True
    ledger.checkpointing.value = False
    assert ledger.recompute.value == "none" and ledger.slider.max == 128


def test_bf16_mixed_halves_the_activations(ledger):
    ledger.precision.value = "bf16-mixed"
    assert ledger.result.max_microbatch == 108  # floor((24 x 0.9 - 3.2) / 0.17), by hand
    assert ledger.slider.max == 128  # 108 + 1 < 128
    v = text(ledger.verdict.value)
    assert re.search(r"largest microbatch that fits with bf16-mixed: 108 \(54 without\)", v)
    assert "0.17 GB per sample instead of 0.34 GB" in v
    assert "parity check (chapter 03)" in v
    block10 = rows(ledger.table.value)[-1]
    assert (float(block10["activations (GB)"]), float(block10["resident (GB)"])) == pytest.approx((5.44, 8.64))
    ledger.slider.value = 108
    assert gb_after("peak", text(ledger.verdict.value)) == pytest.approx(21.56)
    ledger.slider.value = 109
    assert oom_block(text(ledger.verdict.value)) == 10
    assert ledger.result.peak_gb == pytest.approx(21.73)
    ledger.precision.value = "fp16-mixed"
    v = text(ledger.verdict.value)
    assert "fp16-mixed with a loss scale" in v and "parity check (chapter 03)" in v
    ledger.precision.value = "fp32"
    assert "parity" not in text(ledger.verdict.value)


def test_bf16_with_full_recomputation_reaches_569():
    w = memory_ledger_widget(precision="bf16-mixed", recompute="full", microbatch=500)
    # floor(18.4 / (0.017 x 1.9)) = floor(569.66) = 569
    assert w.result.max_microbatch == 569 and w.slider.max == 570 and w.slider.value == 500


def test_selective_recomputation(ledger):
    ledger.recompute.value = "selective"
    assert ledger.result.max_microbatch == 146 and ledger.slider.max == 147
    v = text(ledger.verdict.value)
    assert re.search(r"with selective recomputation: 146 \(54 without\)", v)
    assert "each optimizer step takes 1.027 times as long as the plain run's (selective recomputation)" in v.lower()
    assert "cost to target rises by the same factor" in v
    table = rows(ledger.table.value)
    assert len(table) == 11 and table[-1]["block"] == "recompute block 10"
    # at 32 each block holds 1.088 GB, keeps 30%: block k 0.3264 k; recompute 0.3264 x 9 + 1.088 = 4.0256
    assert float(table[0]["activations (GB)"]) == pytest.approx(0.326, abs=1e-3)
    assert float(table[-1]["activations (GB)"]) == pytest.approx(4.026, abs=1e-3)
    assert "30% kept" in table[0]["phase"]


def test_accumulation_states_the_global_batch_and_its_cost(ledger):
    ledger.slider.value = 30
    ledger.accumulation.value = 2
    v = text(ledger.verdict.value)
    assert "global batch 60: 2 microbatches of 30, accumulated" in v
    assert "takes 1.15 times as long as the plain run's (accumulation: 0.15 more for the extra microbatch" in v
    assert "cost to target rises by the same factor" in v and v.count("1.15") == 1  # each factor said once
    assert "does not fit here as one microbatch without recomputation (the largest is 54)" in v
    assert gb_after("peak", v) == pytest.approx(13.4)  # memory follows the microbatch
    assert (ledger.result.global_batch, ledger.result.step_time_factor) == (60, pytest.approx(1.15))
    assert "global batch 60" in ledger.table.value
    ledger.recompute.value = "full"  # the factors multiply: 1.15 x 4/3
    assert "takes 1.533 times as long" in text(ledger.verdict.value)
    ledger.recompute.value = "none"
    ledger.slider.value = 20  # 40 fits as one microbatch: accumulation only adds time
    assert "fits here as one microbatch" in text(ledger.verdict.value)


def test_changing_an_input_moves_the_slider_end(ledger):
    ledger.inputs["device_gb"].value = 80.0  # largest 202 (test_editing_inputs_recomputes)
    assert ledger.slider.max == 203
    ledger.inputs["device_gb"].value = 0.0  # invalid: the message, the range left as it was
    ledger.precision.value = "bf16-mixed"
    assert "Invalid input" in text(ledger.verdict.value) and ledger.slider.max == 203
    ledger.inputs["device_gb"].value = 24.0
    assert ledger.slider.max == 128 and ledger.result.max_microbatch == 108


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "fp16-mixed"])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("k", [1, 16])
@pytest.mark.parametrize("microbatch", [1, 60, "end"])
def test_every_state_has_its_table_beside_the_bar(ledger, precision, recompute, k, microbatch):
    ledger.precision.value, ledger.recompute.value, ledger.accumulation.value = precision, recompute, k
    ledger.slider.value = ledger.slider.max if microbatch == "end" else microbatch
    r = ledger.result
    assert r is not None and (r.precision, r.recomputation, r.accumulation_steps) == (precision, recompute, k)
    assert "<svg" in ledger.bar.value and 'aria-label="static' in ledger.bar.value
    table = rows(ledger.table.value)
    assert len(table) == (10 if recompute == "none" else 11)
    assert [float(t["resident (GB)"]) for t in table] == pytest.approx([b.total_gb for b in r.rows], abs=1e-3)
    assert [t["state"] for t in table] == [b.state for b in r.rows]
    assert f"microbatch {r.microbatch} " in ledger.table.value
    v = text(ledger.verdict.value)
    assert f"global batch {r.microbatch * k}: " in v
    assert ("parity check" in v) == (precision != "fp32")
    if microbatch == "end":  # one past the largest that fits, or 128 when that is further: out of memory either way
        assert r.microbatch == max(128, r.max_microbatch + 1) and not r.fits


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(precision="int8"),
        dict(recompute="some"),
        dict(accumulation_steps=0),
        dict(accumulation_steps=17),
        dict(recompute="full", microbatch=286),
    ],
)
def test_bad_settings_at_construction_raise(kwargs):
    with pytest.raises(ValueError):
        memory_ledger_widget(**kwargs)


def test_construction_settings():
    w = memory_ledger_widget(microbatch=30, precision="bf16-mixed", recompute="full", accumulation_steps=2)
    assert (w.precision.value, w.recompute.value, w.accumulation.value, w.checkpointing.value) == (
        "bf16-mixed",
        "full",
        2,
        True,
    )
    assert w.result.global_batch == 60 and w.result.step_time_factor == pytest.approx(1.15 * 4 / 3)


def test_docstring_names_its_chapter():
    assert "chapter 04" in memory_ledger_widget.__doc__


# ---- properties ------------------------------------------------------------------------------------------------------


_LEDGER = memory_ledger_widget()


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


# ---- the course's figures, defined once ------------------------------------------------------------------------------


def test_the_widgets_and_the_cli_start_from_the_same_course_figures():
    from gpucost_lab import cost
    from gpucost_lab.cli.main import build_parser as _build_parser
    from gpucost_lab.memory import figures as memory_model

    course = {"static_gb": 3.2, "activation_gb_per_sample": 0.34, "device_gb": 24.0, "reserve_fraction": 0.10}
    one_definition = {
        "static_gb": memory_model.COURSE_STATIC_GB,
        "activation_gb_per_sample": memory_model.COURSE_ACTIVATION_GB_PER_SAMPLE,
        "device_gb": memory_model.DEFAULT_DEVICE_GB,
        "reserve_fraction": memory_model.DEFAULT_RESERVE_FRACTION,
    }
    assert one_definition == course and cost.DEFAULT_PRICE_PER_HOUR_USD == 2.10
    w = memory_ledger_widget()
    shown = {name: w.inputs[name].value for name in ("static_gb", "activation_gb_per_sample", "device_gb")}
    assert shown == {k: course[k] for k in shown} and w.inputs["reserve_percent"].value == 10.0
    assert cost_predictor_widget().inputs["price_per_hour_usd"].value == 2.10
    args = _build_parser().parse_args(["ledger", "--microbatch", "32"])
    assert (args.activation_gb_per_sample, args.device_gb, args.reserve) == (0.34, 24.0, 0.10)
    fix = _build_parser().parse_args(["fix-oom", "--global-batch", "60"])
    assert fix.price_per_hour == 2.10
