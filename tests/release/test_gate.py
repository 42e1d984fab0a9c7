"""gpucost_lab.release.gate: the release gate's checks, decision and reasons (chapter 06), against hand-computed
ratios and intervals (t values from a t table).
"""

import dataclasses
import json
import math

import pytest

from gpucost_lab.release import CHECKS, Decision
from gpucost_lab.stats import Interval, RatioVerdict

from .helpers import GB, GOOD_COSTS, decide, result

T_975 = {2: 4.302653, 4: 2.776445}  # t(0.975, df) from a t table


def test_a_good_candidate_is_promoted_with_every_check_reported(contract):
    d = decide(contract)
    assert (d.action, d.to, d.candidate, d.baseline, d.fallback) == (
        "promote",
        "bf16-candidate",
        "bf16-candidate",
        "fp32-baseline",
        "fp32-baseline",
    )
    assert d.checks == {name: True for name in CHECKS}
    assert d.reasons == (
        "contract: same",
        "parity: passed",
        "memory: 20.0 GB <= 21.6 GB budget",
        "window: run 6.00 h <= 8.00 h window",
        # r = 0.8 ; var(log r) = 0.05^2 / 3 + 0.05^2 / 3 = 1.6667e-3, se 0.0408248 ; Welch df = 4 -> t = 2.776445
        # half = 0.113348 ; 0.8 e^-0.113348 = 0.714276 ; 0.8 e^0.113348 = 0.896013
        "cost: 0.800x baseline cost to target (95% interval 0.714-0.896): cheaper, the whole interval lies below 1",
    )
    assert d.cost_ratio == pytest.approx(0.8)
    assert d.cost_ratio_ci95 == (pytest.approx(0.714276, abs=1e-5), pytest.approx(0.896013, abs=1e-5))


@pytest.mark.parametrize(
    "change, check, reason",
    [
        (
            dict(parity=False, reasons=("final accuracy 0.861 < 0.900 target",)),
            "parity",
            "parity: failed (final accuracy 0.861 < 0.900 target)",
        ),
        (dict(parity=False), "parity", "parity: failed (no reason given)"),
        (dict(peak=int(25.1 * GB)), "memory", "memory: 25.1 GB > 21.6 GB budget"),
        (dict(peak=int(21.6 * GB) + 1), "memory", "memory: 21,600,000,001 bytes > 21,600,000,000 bytes budget"),
        (dict(hours=9.1), "window", "window: run 9.10 h > 8.00 h window"),
    ],
)
def test_each_failing_check_alone_falls_back_to_the_baseline(contract, change, check, reason):
    d = decide(contract, result(contract, "bf16-candidate", GOOD_COSTS, **change))
    assert (d.action, d.to) == ("fallback", "fp32-baseline")
    assert reason in d.reasons
    assert d.checks == {name: name != check for name in CHECKS}


def test_exactly_at_the_limits_passes(contract):
    d = decide(contract, result(contract, "c", GOOD_COSTS, peak=int(21.6 * GB), hours=8.0))
    assert d.action == "promote"
    assert "memory: 21.6 GB <= 21.6 GB budget" in d.reasons and "window: run 8.00 h <= 8.00 h window" in d.reasons


def test_overlapping_costs_are_not_cheaper_with_95_confidence(contract):
    # candidate 10 x e^(-0.1, 0, 0.1): geometric mean 10 -> ratio 1.0 ; its interval straddles 1
    d = decide(contract, result(contract, "c", [10 * math.exp(-0.1), 10.0, 10 * math.exp(0.1)]))
    assert (d.action, d.to) == ("fallback", "fp32-baseline")
    assert d.checks == {"contract": True, "parity": True, "memory": True, "window": True, "cost": False}
    assert d.cost_ratio == pytest.approx(1.0)
    assert d.cost_ratio_ci95[0] < 1 < d.cost_ratio_ci95[1]
    assert d.reasons[-1].startswith("cost: 1.000x baseline cost to target (95% interval ")
    assert d.reasons[-1].endswith("inconclusive, the interval holds 1 and reaches past the +-5% margin (0.952-1.050)")


def test_cheaper_on_average_but_too_noisy_is_not_promoted(contract):
    # candidate 9 x e^(-0.4, 0, 0.4): geometric mean 9 (10% cheaper), log std 0.4 ; se^2 0.16 / 3 = 0.05333,
    # baseline's 0.0025 / 3 = 8.333e-4 ; var 0.054167 ; df = var^2 / (0.05333^2 / 2 + 8.333e-4^2 / 2) = 2.0625
    # t(0.975, 2.0625) = 4.22 (between 4.30 at 2 and 3.18 at 3) ; high = 0.9 e^(4.22 x 0.23274) ~ 2.40
    d = decide(contract, result(contract, "c", [9 * math.exp(-0.4), 9.0, 9 * math.exp(0.4)]))
    assert d.cost_ratio == pytest.approx(0.9)
    assert d.cost_ratio_ci95[1] == pytest.approx(2.40, abs=0.05)
    assert (d.action, d.checks["cost"]) == ("fallback", False)


def test_a_wide_interval_wholly_below_one_is_cheaper_and_its_width_is_reported(contract):
    # a loaded machine's comparison: 0.035x, 95% interval 0.002 to 0.518 (the quiet machine measures about 0.49x):
    # which way is decided, the whole interval lies below 1; how much is known only to a factor 259, said beside it
    cost = RatioVerdict(Interval(0.035, 0.002, 0.518))
    d = decide(contract, cost=cost)
    assert (d.action, d.checks["cost"]) == ("promote", True)
    assert cost.verdict == "cheaper"
    assert d.reasons[-1] == (
        "cost: 0.0350x baseline cost to target (95% interval 0.0020-0.5180): cheaper, the whole interval lies below 1"
    )


def test_an_interval_across_one_falls_back_and_one_within_the_margin_is_same(contract):
    # 0.90x with 95% interval 0.70-1.16 holds 1 and reaches past 5%: inconclusive; 0.99x within 0.97-1.02: the same
    for interval, word in ((Interval(0.90, 0.70, 1.16), "inconclusive"), (Interval(0.99, 0.97, 1.02), "same")):
        cost = RatioVerdict(interval)
        d = decide(contract, cost=cost)
        assert cost.verdict == word and (d.action, d.checks["cost"]) == ("fallback", False)


def test_a_derived_cost_without_a_comparison_is_refused(contract):
    derived = dataclasses.replace(result(contract, "c", GOOD_COSTS), cost_to_target_usd=Interval(8.0, 7.0, 9.0))
    with pytest.raises(ValueError, match="cost is needed"):
        decide(contract, derived)


def test_a_more_expensive_candidate_falls_back(contract):
    d = decide(contract, result(contract, "c", [12 * math.exp(-0.05), 12.0, 12 * math.exp(0.05)]))  # 20% dearer
    assert d.cost_ratio == pytest.approx(1.2) and d.action == "fallback"


def test_contract_drift_falls_back_naming_the_field(contract):
    drifted = dataclasses.replace(contract, dtype="bfloat16")
    d = decide(contract, result(drifted, "c", GOOD_COSTS))
    assert (d.action, d.to) == ("fallback", "fp32-baseline")
    assert d.reasons[0] == "contract: differs in dtype ('float32' -> 'bfloat16'); allowed to differ: none"
    # costs measured under different contracts are not compared at all
    assert d.checks == {"contract": False, "parity": True, "memory": True, "window": True, "cost": False}
    assert d.reasons[-1] == "cost: not compared, the contracts differ"
    assert d.cost_ratio is None and d.cost_ratio_ci95 is None


def test_drift_beyond_the_allowed_field_names_only_the_rest(contract):
    drifted = dataclasses.replace(contract, dtype="bfloat16", input_shapes=((128, 32),))
    d = decide(contract, result(drifted, "c", GOOD_COSTS), allow=("dtype",))
    assert d.reasons[0] == (
        "contract: differs in input_shapes (((64, 32),) -> ((128, 32),)); allowed to differ: ['dtype']"
    )
    assert d.action == "fallback"


def test_the_allowed_change_under_test_is_promoted_and_named(contract):
    drifted = dataclasses.replace(contract, dtype="bfloat16")
    d = decide(contract, result(drifted, "c", GOOD_COSTS), allow=("dtype",))
    assert d.action == "promote"
    assert d.reasons[0] == "contract: same except the allowed dtype ('float32' -> 'bfloat16')"


def test_an_unknown_allowed_field_is_bad_input(contract):
    with pytest.raises(ValueError, match="allow must name contract fields"):
        decide(contract, allow=("precision",))


def test_a_given_fallback_replaces_the_baseline(contract):
    d = decide(contract, result(contract, "c", GOOD_COSTS, hours=9.0), fallback="v7-last-good")
    assert (d.action, d.to, d.fallback) == ("fallback", "v7-last-good", "v7-last-good")
    promoted = decide(contract, fallback="v7-last-good")
    assert (promoted.action, promoted.to, promoted.fallback) == ("promote", "bf16-candidate", "v7-last-good")


def test_several_failures_are_all_reported(contract):
    d = decide(contract, result(contract, "c", [9.0, 10.0, 11.0], parity=False, peak=30 * GB, hours=12.0))
    assert d.checks == {"contract": True, "parity": False, "memory": False, "window": False, "cost": False}
    assert d.reasons[1:4] == (
        "parity: failed (no reason given)",
        "memory: 30.0 GB > 21.6 GB budget",
        "window: run 12.00 h > 8.00 h window",
    )


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(budget_bytes=0), "budget_bytes must be an integer >= 1, got 0"),
        (dict(budget_bytes=2.5e9 + 0.5), "budget_bytes must be an integer >= 1"),
        (dict(window_hours=0), "window_hours must be > 0, got 0"),
        (dict(fallback=""), "fallback must be a release name or None"),
        (dict(fallback="bf16-candidate"), "fallback must not be the candidate"),
    ],
)
def test_gate_rejects_bad_input(contract, kw, message):
    with pytest.raises(ValueError, match=message):
        decide(contract, **kw)


def test_decision_dict_round_trip_and_invariants(contract):
    d = decide(contract, result(contract, "c", GOOD_COSTS, hours=9.0))
    data = json.loads(json.dumps(d.to_dict(), sort_keys=True))  # JSON reorders the checks
    assert Decision.from_dict(data) == d
    assert list(Decision.from_dict(data).checks) == list(CHECKS)
    with pytest.raises(ValueError, match="must be the candidate"):
        dataclasses.replace(decide(contract), to="fp32-baseline")  # a promotion must name its candidate
    with pytest.raises(ValueError, match="action must be one of 'promote', 'fallback', got 'ship'"):
        dataclasses.replace(d, action="ship")
