"""Cost per useful unit and the course's predictor, against hand-computed figures (chapter 03)."""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gpucost_lab import cost
from gpucost_lab.measure.timing import Measurement
from gpucost_lab.stats import Estimate


def test_course_question_20_percent_faster_25_percent_more_steps():
    r = cost.relative_cost(throughput_gain=0.20, steps_change=0.25)
    assert r == pytest.approx(1.25 / 1.20)
    assert round(r, 3) == 1.042  # about 4% MORE expensive
    assert cost.verdict(r) == "more expensive"
    assert cost.verdict(cost.relative_cost(0.25, 0.20)) == "cheaper"  # 1.20 / 1.25 = 0.96
    assert cost.verdict(cost.relative_cost(0.1, 0.1)) == "same cost"


def test_cost_per_sample_and_per_million_tokens():
    # $2.10 per hour = $0.000583 per second; at 1,000 samples/s a sample costs $5.83e-7
    assert cost.cost_per_unit_usd(1000, 2.10) == pytest.approx(2.10 / 3600 / 1000)
    # half the paid time idle doubles the cost of each useful sample
    assert cost.cost_per_unit_usd(1000, 2.10, utilization=0.5) == pytest.approx(2 * 2.10 / 3600 / 1000)
    # 10,000 tokens/s: 1e6 tokens take 100 s = $0.0583
    assert cost.cost_per_million_tokens_usd(10_000, 2.10) == pytest.approx(100 * 2.10 / 3600)


def test_cost_to_target():
    # 0.5 s steps at $3.60/h cost $0.0005 each; 20,000 steps to the target cost $10
    per_step = cost.cost_per_step_usd(0.5, 3.60)
    assert per_step == pytest.approx(0.0005)
    assert cost.cost_to_target_usd(per_step, 20_000) == pytest.approx(10.0)


def test_measured_cost_carries_the_repeats_uncertainty(contract):
    # 3 repeats of 10 x 256 samples in 0.5, 0.4, 0.625 s at $3.60/h ($0.001/s):
    # cost per sample = t x 0.001 / 2,560 -> 1.953e-7, 1.5625e-7, 2.441e-7
    m = Measurement(contract(), (0.5, 0.4, 0.625))
    est = cost.measured_cost_per_unit(m, 3.60)
    expected = [t * 0.001 / 2560 for t in (0.5, 0.4, 0.625)]
    assert est.values == pytest.approx(tuple(expected))
    # 0.5 x 0.4 x 0.625 = 0.125, whose cube root is 0.5: the geometric-mean repeat is 0.5 s
    assert est.geomean == pytest.approx(0.5 * 0.001 / 2560)  # 1.953e-7
    assert est.ci95_low < min(expected) and est.ci95_high > max(expected)
    # and it is the price per second over the geometric-mean throughput, 2,560 / 0.5 = 5,120 samples/s
    assert est.geomean == pytest.approx(0.001 / m.units_per_s.geomean) and m.units_per_s.geomean == pytest.approx(5120)
    to_target = cost.measured_cost_to_target(m, steps_to_target=1000, price_per_hour_usd=3.60)
    assert to_target.value == pytest.approx(0.05 * 0.001 * 1000)  # 0.05 s per step x $0.001/s x 1,000 steps
    assert to_target.ci95_low == pytest.approx(est.ci95_low * 2560 / 10 * 1000)  # the same relative interval


def test_cost_to_target_over_seeds_carries_both_spreads(contract):
    # step times all 0.05 s (no timing spread); steps to target 80 and 125 over two seeds: geometric mean 100,
    # logs ln 100 -+ 0.2231, log std 0.3156, se 0.2231 ; df 1, t = 12.706 -> 100 x e^(-+2.835) = 5.87 to 1,703 steps
    m = Measurement(contract(), (0.5, 0.5, 0.5))
    to_target = cost.measured_cost_to_target(m, [80, 125], price_per_hour_usd=3.60)
    assert to_target.value == pytest.approx(0.05 * 0.001 * 100)
    half = 12.706205 * math.log(125 / 80) / 2
    assert (to_target.ci95_low, to_target.ci95_high) == (
        pytest.approx(0.005 * math.exp(-half), rel=1e-6),
        pytest.approx(0.005 * math.exp(half), rel=1e-6),
    )
    with pytest.raises(ValueError, match="steps_to_target"):
        cost.measured_cost_to_target(m, [80, 0], price_per_hour_usd=3.60)


def test_nightly_window():
    # 1e8 samples at 5,000 samples/s take 20,000 s = 5.56 h
    check = cost.nightly_window(1e8, 5000, window_hours=6)
    assert check.run_hours == pytest.approx(20_000 / 3600)
    assert check.fits and check.margin_hours == pytest.approx(6 - 20_000 / 3600)
    assert not cost.nightly_window(1e8, 5000, window_hours=5).fits


def test_nightly_window_with_uncertainty():
    # 5,000 x e^(-0.2, 0, 0.2) samples/s: geometric mean 5,000 fits 6 h (5.56 h); log std 0.2, half-width
    # 4.302653 x 0.2 / sqrt(3) = 0.496828 on the log scale, so the low end is 5,000 e^-0.496828 = 3,042.2
    # samples/s and 1e8 samples may take 1e8 / 3,042.2 / 3600 = 9.13 h
    check = cost.nightly_window(1e8, Estimate.of([5000 * math.exp(-0.2), 5000, 5000 * math.exp(0.2)]), window_hours=6)
    assert check.fits and check.run_hours == pytest.approx(1e8 / 5000 / 3600)
    assert not check.fits_with_95_confidence
    assert check.run_hours_ci95_high == pytest.approx(1e8 / (5000 * math.exp(-0.496828)) / 3600, rel=1e-5)
    # however wide the spread, the low end of a log-scale interval stays above 0: a finite worst case
    assert math.isfinite(cost.nightly_window(1e8, Estimate.of([1000, 5000, 9000]), 6).run_hours_ci95_high)


def test_predict_prices_the_run():
    # baseline 8 h at $2.10/h = $16.80; the candidate takes 8 x 1.25 / 1.2 = 8.33 h = $17.50 and misses an 8 h window
    out = cost.predict(0.20, 0.25, price_per_hour_usd=2.10, baseline_hours=8, window_hours=8)
    assert out["baseline_cost_usd"] == pytest.approx(16.80)
    assert out["candidate_hours"] == pytest.approx(8 * 1.25 / 1.2)
    assert out["candidate_cost_usd"] == pytest.approx(17.50)
    assert out["savings_usd"] == pytest.approx(-0.70)
    assert out["baseline_fits_window"] is True and out["candidate_fits_window"] is False


@pytest.mark.parametrize(
    "call,field",
    [
        (lambda: cost.cost_per_unit_usd(1000, 0), "price_per_hour_usd"),
        (lambda: cost.cost_per_unit_usd(1000, -2.1), "price_per_hour_usd"),
        (lambda: cost.cost_per_unit_usd(0, 2.1), "units_per_s"),
        (lambda: cost.cost_per_unit_usd(math.nan, 2.1), "units_per_s"),
        (lambda: cost.cost_per_unit_usd(1000, math.inf), "price_per_hour_usd"),
        (lambda: cost.cost_per_unit_usd(1000, 2.1, utilization=0), "utilization"),
        (lambda: cost.cost_per_unit_usd(1000, 2.1, utilization=1.5), "utilization"),
        (lambda: cost.cost_to_target_usd(0.1, 0), "steps_to_target"),
        (lambda: cost.relative_cost(-1.0, 0.2), "throughput_gain"),
        (lambda: cost.relative_cost(0.2, -1.5), "steps_change"),
        (lambda: cost.nightly_window(0, 100, 8), "units"),
        (lambda: cost.predict(0.2, 0.2, window_hours=8), "window_hours"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ValueError, match=field):
        call()


changes = st.floats(-0.9, 10, allow_nan=False)


@given(changes, changes)
def test_relative_cost_properties(gain, steps):
    r = cost.relative_cost(gain, steps)
    assert r > 0
    assert cost.relative_cost(gain, gain) == pytest.approx(1.0)
    assume(steps < 9)
    assert cost.relative_cost(gain, steps + 0.5) > r  # more steps: dearer
    assert cost.relative_cost(gain + 0.5, steps) < r  # more throughput: cheaper


@given(st.floats(1e-3, 1e9), st.floats(1e-3, 1e3), st.floats(0.01, 1.0))
def test_cost_per_unit_scales_inversely_with_throughput(units_per_s, price, utilization):
    c = cost.cost_per_unit_usd(units_per_s, price, utilization)
    assert c * units_per_s * utilization * 3600 == pytest.approx(price)
    assert cost.cost_per_unit_usd(2 * units_per_s, price, utilization) == pytest.approx(c / 2)


@given(changes, changes, st.floats(0.1, 100), st.floats(0.1, 50))
def test_predicted_candidate_cost_is_baseline_times_relative_cost(gain, steps, price, hours):
    out = cost.predict(gain, steps, price, hours)
    assert out["candidate_cost_usd"] == pytest.approx(out["baseline_cost_usd"] * out["relative_cost"])
