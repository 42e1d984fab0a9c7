"""The release gate, the ratio interval and the release registry (chapter 06)."""
import dataclasses
import json
import math
import os
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab import release
from gpucost_lab.contract import BenchmarkContract
from gpucost_lab.release import CHECKS, CandidateResult, Decision, Registry, gate, ratio_interval
from gpucost_lab.stats import Estimate

T_975 = {2: 4.302653, 4: 2.776445}  # t(0.975, df) from a t table
GB = 10**9
T0 = datetime(2025, 1, 6, 2, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def contract():
    return BenchmarkContract.capture(inputs=[(64, 32)], device="cpu", repeats=3, model_name="MLP")


def result(contract, name, costs, *, parity=True, reasons=(), peak=20 * GB, hours=6.0):
    return CandidateResult(name=name, contract=contract, cost_to_target_usd=Estimate.of(costs), parity_passed=parity,
                           parity_reasons=reasons, peak_memory_bytes=peak, run_hours=hours)


BASE_COSTS = [9.5, 10.0, 10.5]  # mean 10, sample std 0.5
GOOD_COSTS = [7.6, 8.0, 8.4]  # mean 8, sample std 0.4: the same 5% spread, 20% cheaper


def decide(contract, candidate=None, **kw):
    args = dict(budget_bytes=int(21.6 * GB), window_hours=8.0)
    args.update(kw)
    base = result(contract, "fp32-baseline", BASE_COSTS)
    return gate(base, candidate or result(contract, "bf16-candidate", GOOD_COSTS), **args)


# --------------------------------------------------------------------------------------------------
# ratio_interval


def test_ratio_interval_by_hand():
    c, b = Estimate.of(GOOD_COSTS), Estimate.of(BASE_COSTS)
    # r = 8 / 10 = 0.8
    # a_c = 0.4^2 / (3 x 8^2) = 0.16 / 192 = 8.3333e-4 ; a_b = 0.5^2 / (3 x 10^2) = 0.25 / 300 = 8.3333e-4
    # var(log r) = 1.6667e-3, se = 0.0408248
    # Welch-Satterthwaite: (2a)^2 / (a^2/2 + a^2/2) = 4 degrees of freedom -> t = 2.776445 (table)
    # half = 2.776445 x 0.0408248 = 0.113348 ; low = 0.8 e^-0.113348 = 0.714276 ; high = 0.8 e^0.113348 = 0.896013
    ratio, low, high = ratio_interval(c, b)
    se = math.sqrt(0.16 / 192 + 0.25 / 300)
    assert ratio == pytest.approx(0.8)
    assert low == pytest.approx(0.8 * math.exp(-T_975[4] * se), rel=1e-6)
    assert high == pytest.approx(0.8 * math.exp(T_975[4] * se), rel=1e-6)
    assert (low, high) == (pytest.approx(0.714276, abs=1e-5), pytest.approx(0.896013, abs=1e-5))


def test_ratio_interval_one_constant_sample_uses_the_other_samples_degrees_of_freedom():
    # baseline constant: a_b = 0, so df = a_c^2 / (a_c^2 / (n_c - 1)) = n_c - 1 = 2 -> t = 4.302653
    # candidate [90, 100, 110]: mean 100, std 10 ; a_c = 100 / (3 x 10^4) = 1/300 ; se = 0.0577350
    ratio, low, high = ratio_interval(Estimate.of([90.0, 100.0, 110.0]), Estimate.of([200.0, 200.0, 200.0]))
    assert ratio == pytest.approx(0.5)
    assert low == pytest.approx(0.5 * math.exp(-T_975[2] * math.sqrt(1 / 300)), rel=1e-6)  # 0.39 (0.390)
    assert high == pytest.approx(0.5 * math.exp(T_975[2] * math.sqrt(1 / 300)), rel=1e-6)  # 0.641


def test_ratio_interval_of_constant_samples_has_no_width():
    assert tuple(ratio_interval(Estimate.of([3.0, 3.0]), Estimate.of([4.0, 4.0]))) == (0.75, 0.75, 0.75)


@pytest.mark.parametrize("values", [[-1.0, 1.0], [0.0, 0.0]])
def test_ratio_interval_needs_positive_means(values):
    with pytest.raises(ValueError, match="candidate mean must be > 0"):
        ratio_interval(Estimate.of(values), Estimate.of([1.0, 2.0]))


positive_samples = st.lists(st.floats(0.1, 1e3), min_size=2, max_size=8)


@given(positive_samples, positive_samples, st.floats(0.01, 100))
def test_ratio_interval_properties(c_values, b_values, k):
    c, b = Estimate.of(c_values), Estimate.of(b_values)
    r, low, high = ratio_interval(c, b)
    assert low <= r * (1 + 1e-12) and r <= high * (1 + 1e-12) and low > 0
    # swapping the two inverts the interval
    r2, low2, high2 = ratio_interval(b, c)
    assert r2 == pytest.approx(1 / r, rel=1e-9)
    assert (low2, high2) == (pytest.approx(1 / high, rel=1e-9), pytest.approx(1 / low, rel=1e-9))
    # a change of currency (every cost x k) scales the ratio and its bounds by k
    rk, lowk, highk = ratio_interval(Estimate.of(v * k for v in c_values), b)
    assert (rk, lowk, highk) == (pytest.approx(r * k, rel=1e-9), pytest.approx(low * k, rel=1e-6),
                                 pytest.approx(high * k, rel=1e-6))


# --------------------------------------------------------------------------------------------------
# the gate


def test_a_good_candidate_is_promoted_with_every_check_reported(contract):
    d = decide(contract)
    assert (d.action, d.to, d.candidate, d.baseline, d.fallback) == (
        "promote", "bf16-candidate", "bf16-candidate", "fp32-baseline", "fp32-baseline")
    assert d.checks == {name: True for name in CHECKS}
    assert d.reasons == (
        "contract: same",
        "parity: passed",
        "memory: 20.0 GB <= 21.6 GB budget",
        "window: run 6.00 h <= 8.00 h window",
        # 0.8 (0.714 to 0.896): see test_ratio_interval_by_hand
        "cost: 0.800x baseline cost to target (95% CI 0.714x to 0.896x), lower with 95% confidence",
    )
    assert d.cost_ratio == pytest.approx(0.8)
    assert d.cost_ratio_ci95 == (pytest.approx(0.714276, abs=1e-5), pytest.approx(0.896013, abs=1e-5))


@pytest.mark.parametrize("change, check, reason", [
    (dict(parity=False, reasons=("final accuracy 0.861 < 0.900 target",)), "parity",
     "parity: failed (final accuracy 0.861 < 0.900 target)"),
    (dict(parity=False), "parity", "parity: failed (no reason given)"),
    (dict(peak=int(25.1 * GB)), "memory", "memory: 25.1 GB > 21.6 GB budget"),
    (dict(peak=int(21.6 * GB) + 1), "memory", "memory: 21,600,000,001 bytes > 21,600,000,000 bytes budget"),
    (dict(hours=9.1), "window", "window: run 9.10 h > 8.00 h window"),
])
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
    # candidate [9, 10, 11]: mean 10, std 1 -> ratio 10 / 10 = 1.0 ; its interval straddles 1
    d = decide(contract, result(contract, "c", [9.0, 10.0, 11.0]))
    assert (d.action, d.to) == ("fallback", "fp32-baseline")
    assert d.checks == {"contract": True, "parity": True, "memory": True, "window": True, "cost": False}
    assert d.cost_ratio == pytest.approx(1.0)
    assert d.cost_ratio_ci95[0] < 1 < d.cost_ratio_ci95[1]
    assert d.reasons[-1].startswith("cost: 1.000x baseline cost to target (95% CI ")
    assert d.reasons[-1].endswith("not lower with 95% confidence (upper bound >= 1)")


def test_cheaper_on_average_but_too_noisy_is_not_promoted(contract):
    # candidate [5, 9, 13]: mean 9 (10% cheaper), std 4 ; a_c = 16 / (3 x 81) = 0.06584 ; a_b = 8.333e-4
    # df = (0.06667)^2 / (0.06584^2 / 2 + 8.333e-4^2 / 2) = 2.05 ; t(0.975, 2.05) ~ 4.2 (between 4.30 at 2 and 3.18 at 3)
    # se = sqrt(0.06667) = 0.258 ; high = 0.9 e^(4.2 x 0.258) ~ 2.65
    d = decide(contract, result(contract, "c", [5.0, 9.0, 13.0]))
    assert d.cost_ratio == pytest.approx(0.9)
    assert d.cost_ratio_ci95[1] == pytest.approx(2.65, abs=0.1)
    assert (d.action, d.checks["cost"]) == ("fallback", False)


def test_a_more_expensive_candidate_falls_back(contract):
    d = decide(contract, result(contract, "c", [11.4, 12.0, 12.6]))  # 20% dearer, the same 5% spread
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
    assert d.reasons[0] == ("contract: differs in input_shapes (((64, 32),) -> ((128, 32),)); "
                            "allowed to differ: ['dtype']")
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
    assert d.reasons[1:4] == ("parity: failed (no reason given)", "memory: 30.0 GB > 21.6 GB budget",
                              "window: run 12.00 h > 8.00 h window")


@pytest.mark.parametrize("kw, message", [
    (dict(budget_bytes=0), "budget_bytes must be an integer >= 1, got 0"),
    (dict(budget_bytes=2.5e9 + 0.5), "budget_bytes must be an integer >= 1"),
    (dict(window_hours=0), "window_hours must be > 0, got 0"),
    (dict(fallback=""), "fallback must be a release name or None"),
    (dict(fallback="bf16-candidate"), "fallback must not be the candidate"),
])
def test_gate_rejects_bad_input(contract, kw, message):
    with pytest.raises(ValueError, match=message):
        decide(contract, **kw)


def test_candidate_result_rejects_bad_fields(contract):
    with pytest.raises(ValueError, match="cost_to_target_usd values must all be > 0"):
        result(contract, "c", [0.0, 1.0])
    with pytest.raises(ValueError, match="peak_memory_bytes must be an integer >= 0, got -1"):
        result(contract, "c", GOOD_COSTS, peak=-1)
    with pytest.raises(ValueError, match="run_hours must be > 0"):
        result(contract, "c", GOOD_COSTS, hours=0.0)
    with pytest.raises(ValueError, match="parity_passed must be True or False"):
        result(contract, "c", GOOD_COSTS, parity="yes")
    with pytest.raises(ValueError, match="candidate.name must differ from baseline.name"):
        gate(result(contract, "x", BASE_COSTS), result(contract, "x", GOOD_COSTS), budget_bytes=GB, window_hours=1)


def test_candidate_result_details_are_kept_but_not_compared(contract):
    a = CandidateResult("c", contract, Estimate.of(GOOD_COSTS), True, ["ok"], 1, 1.0, details={"lr": 0.1})
    b = dataclasses.replace(a, details={"lr": 0.2})
    assert a == b and a.details == {"lr": 0.1} and a.parity_reasons == ("ok",)


def test_decision_dict_round_trip_and_invariants(contract):
    d = decide(contract, result(contract, "c", GOOD_COSTS, hours=9.0))
    data = json.loads(json.dumps(d.to_dict(), sort_keys=True))  # JSON reorders the checks
    assert Decision.from_dict(data) == d
    assert list(Decision.from_dict(data).checks) == list(CHECKS)
    with pytest.raises(ValueError, match="must be the candidate"):
        dataclasses.replace(decide(contract), to="fp32-baseline")  # a promotion must name its candidate
    with pytest.raises(ValueError, match="action must be one of 'promote', 'fallback', got 'ship'"):
        dataclasses.replace(d, action="ship")


# --------------------------------------------------------------------------------------------------
# the registry


@pytest.fixture
def decisions(contract):
    return {
        "v1": decide(contract, result(contract, "v1", GOOD_COSTS)),  # promote v1 over fp32-baseline
        "v2": gate(result(contract, "v1", BASE_COSTS), result(contract, "v2", GOOD_COSTS),
                   budget_bytes=21 * GB, window_hours=8.0),
        "v3-unsafe": gate(result(contract, "v2", BASE_COSTS), result(contract, "v3", GOOD_COSTS, hours=9.0),
                          budget_bytes=21 * GB, window_hours=8.0, fallback="v2"),
    }


def test_an_empty_registry_has_nothing_in_production(tmp_path):
    reg = Registry(tmp_path / "releases.json")
    assert (reg.current(), reg.last_known_good(), reg.history()) == (None, None, [])
    assert not (tmp_path / "releases.json").exists()  # reading never writes


def test_record_promotions_and_a_fallback(tmp_path, decisions):
    ticks = iter(range(10))
    reg = Registry(tmp_path / "releases.json", clock=lambda: T0 + timedelta(hours=next(ticks)))
    reg.record(decisions["v1"])
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")
    reg.record(decisions["v2"])
    assert (reg.current(), reg.last_known_good()) == ("v2", "v2")
    reg.record(decisions["v3-unsafe"], at=datetime(2025, 1, 9, tzinfo=timezone.utc))
    assert (reg.current(), reg.last_known_good()) == ("v2", "v2")  # the unsafe candidate never enters
    history = reg.history()
    assert [e["recorded_at"] for e in history] == ["2025-01-06T02:00:00+00:00", "2025-01-06T03:00:00+00:00",
                                                    "2025-01-09T00:00:00+00:00"]
    assert [(e["decision"]["action"], e["decision"]["candidate"]) for e in history] == [
        ("promote", "v1"), ("promote", "v2"), ("fallback", "v3")]
    assert reg.decisions() == list(decisions.values())


def test_a_second_registry_on_the_same_file_sees_the_decisions(tmp_path, decisions):
    path = tmp_path / "releases.json"
    Registry(path).record(decisions["v1"], at=T0)
    other = Registry(str(path))
    assert (other.current(), other.last_known_good()) == ("v1", "v1")
    assert other.history()[0]["decision"] == decisions["v1"].to_dict()
    on_disk = json.loads(path.read_text())
    assert (on_disk["current"], on_disk["last_known_good"]) == ("v1", "v1")  # readable by a person too


def test_the_last_known_good_is_the_fallback_for_the_next_gate(tmp_path, contract, decisions):
    reg = Registry(tmp_path / "releases.json")
    reg.record(decisions["v1"], at=T0)
    # the next candidate is measured against a reference configuration, not against v1
    d = gate(result(contract, "fp32-reference", BASE_COSTS), result(contract, "v2", GOOD_COSTS, parity=False),
             budget_bytes=21 * GB, window_hours=8.0, fallback=reg.last_known_good())
    assert (d.action, d.to) == ("fallback", "v1")
    reg.record(d, at=T0)
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")


def test_a_fallback_to_a_named_baseline_moves_production_and_rollback_returns(tmp_path, contract, decisions):
    reg = Registry(tmp_path / "releases.json")
    reg.record(decisions["v1"], at=T0)
    d = gate(result(contract, "fp32-reference", BASE_COSTS), result(contract, "v2", GOOD_COSTS, peak=30 * GB),
             budget_bytes=21 * GB, window_hours=8.0)  # no fallback given: production degrades to the baseline
    reg.record(d, at=T0)
    assert (reg.current(), reg.last_known_good()) == ("fp32-reference", "v1")
    assert reg.rollback(at=T0) == "v1"
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")
    assert reg.history()[-1] == {"event": "rollback", "recorded_at": T0.isoformat(), "from": "fp32-reference",
                                 "to": "v1"}


def test_rollback_of_a_bad_promotion_returns_to_the_release_before_it(tmp_path, decisions):
    reg = Registry(tmp_path / "releases.json")
    reg.record(decisions["v1"], at=T0)
    reg.record(decisions["v2"], at=T0)
    assert reg.rollback(at=T0) == "v1"  # v2 misbehaved in production: it is no longer known good
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")
    assert reg.rollback(at=T0) == "fp32-baseline"  # the baseline v1 was measured against
    assert (reg.current(), reg.last_known_good()) == ("fp32-baseline", "fp32-baseline")
    with pytest.raises(ValueError, match="rollback needs a known-good release"):
        reg.rollback(at=T0)
    assert len(Registry(reg.path).history()) == 4  # the refused rollback wrote nothing


def test_rollback_of_an_empty_registry_is_refused(tmp_path):
    with pytest.raises(ValueError, match="rollback needs a known-good release"):
        Registry(tmp_path / "r.json").rollback(at=T0)


def test_timestamps_must_be_timezone_aware(tmp_path, decisions):
    with pytest.raises(ValueError, match="at must be a timezone-aware datetime"):
        Registry(tmp_path / "r.json").record(decisions["v1"], at=datetime(2025, 1, 6))
    assert not (tmp_path / "r.json").exists()


def test_an_interrupted_write_keeps_the_old_registry_and_leaves_no_temporary_file(tmp_path, monkeypatch, decisions):
    path = tmp_path / "releases.json"
    reg = Registry(path)
    reg.record(decisions["v1"], at=T0)
    before = path.read_bytes()
    real_dumps = json.dumps

    def crash_halfway(obj, f, **kw):
        text = real_dumps(obj, **kw)
        f.write(text[: len(text) // 2])  # half the new registry reaches the temporary file...
        raise KeyboardInterrupt("power cut")  # ...then the process dies

    monkeypatch.setattr(release.json, "dump", crash_halfway)
    with pytest.raises(KeyboardInterrupt):
        reg.record(decisions["v2"], at=T0)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["releases.json"]
    assert (Registry(path).current(), len(Registry(path).history())) == ("v1", 1)


def test_a_failed_rename_keeps_the_old_registry(tmp_path, monkeypatch, decisions):
    path = tmp_path / "releases.json"
    Registry(path).record(decisions["v1"], at=T0)
    before = path.read_bytes()

    def no_rename(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(release.os, "replace", no_rename)
    with pytest.raises(OSError, match="No space left"):
        Registry(path).record(decisions["v2"], at=T0)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["releases.json"]


@pytest.mark.parametrize("content", [b"", b'{"format": "gpucost-lab release registry", "vers', b"\xff\xfe\x00",
                                     b"[]", b'{"format": "gpucost-lab release registry", "version": 99}'])
def test_a_corrupt_registry_is_an_error_naming_the_file_and_is_never_reset(tmp_path, decisions, content):
    path = tmp_path / "releases.json"
    path.write_bytes(content)
    reg = Registry(path)
    for call in (reg.current, reg.last_known_good, reg.history, lambda: reg.record(decisions["v1"], at=T0)):
        with pytest.raises(ValueError, match="releases.json"):
            call()
    assert path.read_bytes() == content


def test_a_registry_whose_summary_disagrees_with_its_history_is_an_error(tmp_path, decisions):
    path = tmp_path / "releases.json"
    Registry(path).record(decisions["v1"], at=T0)
    data = json.loads(path.read_text())
    data["current"] = "v9"  # edited by hand
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="edited by hand or is corrupt"):
        Registry(path).current()


def test_an_unreadable_registry_is_an_error_naming_the_file(tmp_path):
    folder = tmp_path / "releases.json"
    folder.mkdir()  # a folder where the file should be
    with pytest.raises(ValueError, match="releases.json.*cannot be read"):
        Registry(folder).current()
