"""The release gate and the release registry (chapter 06)."""

import dataclasses
import json
import math
import os
from datetime import datetime, timedelta, timezone

import pytest

from gpucost_lab import atomic
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.release import CHECKS, CandidateResult, Decision, Registry, gate
from gpucost_lab.release import registry as registry_module
from gpucost_lab.stats import Estimate, Interval, RatioVerdict

T_975 = {2: 4.302653, 4: 2.776445}  # t(0.975, df) from a t table
GB = 10**9
T0 = datetime(2025, 1, 6, 2, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def contract():
    return BenchmarkContract.capture(inputs=[(64, 32)], device="cpu", repeats=3, model_name="MLP")


def result(contract, name, costs, *, parity=True, reasons=(), peak=20 * GB, hours=6.0):
    return CandidateResult(
        name=name,
        contract=contract,
        cost_to_target_usd=Estimate.of(costs),
        parity_passed=parity,
        parity_reasons=reasons,
        peak_memory_bytes=peak,
        run_hours=hours,
    )


# logs ln 10 -+ 0.05: geometric mean 10, log std 0.05 ; GOOD: the same 5% spread around 8, 20% cheaper
BASE_COSTS = [10 * math.exp(-0.05), 10.0, 10 * math.exp(0.05)]
GOOD_COSTS = [8 * math.exp(-0.05), 8.0, 8 * math.exp(0.05)]


def decide(contract, candidate=None, **kw):
    args = dict(budget_bytes=int(21.6 * GB), window_hours=8.0)
    args.update(kw)
    base = result(contract, "fp32-baseline", BASE_COSTS)
    return gate(base, candidate or result(contract, "bf16-candidate", GOOD_COSTS), **args)


# --------------------------------------------------------------------------------------------------
# the gate


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


def test_candidate_result_rejects_bad_fields(contract):
    with pytest.raises(ValueError, match="values must all be finite numbers > 0"):
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


def test_candidate_result_report_fields_are_optional_and_checked(contract):
    r = result(contract, "c", GOOD_COSTS, reasons=("accuracy 0.91 vs 0.92",))
    assert (r.samples_per_s, r.cost_per_sample_usd, r.steps_to_target, r.parity_summary) == (None, None, None, None)
    assert r.parity == "passed: accuracy 0.91 vs 0.92"  # no summary given: said from the parity check
    assert result(contract, "c", GOOD_COSTS, parity=False).parity == "failed"
    assert dataclasses.replace(r, parity_summary="reference").parity == "reference"
    assert dataclasses.replace(r, steps_to_target=1250).steps_to_target == 1250.0
    with pytest.raises(ValueError, match="samples_per_s must be an Estimate or None, got list"):
        dataclasses.replace(r, samples_per_s=[1.0, 2.0])
    with pytest.raises(ValueError, match="cost_per_sample_usd must be an Estimate or None, got float"):
        dataclasses.replace(r, cost_per_sample_usd=1e-7)
    with pytest.raises(ValueError, match="steps_to_target must be > 0, got 0"):
        dataclasses.replace(r, steps_to_target=0)
    with pytest.raises(ValueError, match="parity_summary must be a non-empty string, got ' '"):
        dataclasses.replace(r, parity_summary=" ")


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
        "v2": gate(
            result(contract, "v1", BASE_COSTS),
            result(contract, "v2", GOOD_COSTS),
            budget_bytes=21 * GB,
            window_hours=8.0,
        ),
        "v3-unsafe": gate(
            result(contract, "v2", BASE_COSTS),
            result(contract, "v3", GOOD_COSTS, hours=9.0),
            budget_bytes=21 * GB,
            window_hours=8.0,
            fallback="v2",
        ),
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
    assert [e["recorded_at"] for e in history] == [
        "2025-01-06T02:00:00+00:00",
        "2025-01-06T03:00:00+00:00",
        "2025-01-09T00:00:00+00:00",
    ]
    assert [(e["decision"]["action"], e["decision"]["candidate"]) for e in history] == [
        ("promote", "v1"),
        ("promote", "v2"),
        ("fallback", "v3"),
    ]
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
    d = gate(
        result(contract, "fp32-reference", BASE_COSTS),
        result(contract, "v2", GOOD_COSTS, parity=False),
        budget_bytes=21 * GB,
        window_hours=8.0,
        fallback=reg.last_known_good(),
    )
    assert (d.action, d.to) == ("fallback", "v1")
    reg.record(d, at=T0)
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")


def test_a_fallback_to_a_named_baseline_moves_production_and_rollback_returns(tmp_path, contract, decisions):
    reg = Registry(tmp_path / "releases.json")
    reg.record(decisions["v1"], at=T0)
    d = gate(
        result(contract, "fp32-reference", BASE_COSTS),
        result(contract, "v2", GOOD_COSTS, peak=30 * GB),
        budget_bytes=21 * GB,
        window_hours=8.0,
    )  # no fallback given: production degrades to the baseline
    reg.record(d, at=T0)
    assert (reg.current(), reg.last_known_good()) == ("fp32-reference", "v1")
    assert reg.rollback(at=T0) == "v1"
    assert (reg.current(), reg.last_known_good()) == ("v1", "v1")
    assert reg.history()[-1] == {
        "event": "rollback",
        "recorded_at": T0.isoformat(),
        "from": "fp32-reference",
        "to": "v1",
    }


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

    monkeypatch.setattr(registry_module.json, "dump", crash_halfway)
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

    monkeypatch.setattr(atomic.os, "replace", no_rename)
    with pytest.raises(OSError, match="No space left"):
        Registry(path).record(decisions["v2"], at=T0)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["releases.json"]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"format": "gpucost-lab release registry", "vers',
        b"\xff\xfe\x00",
        b"[]",
        b'{"format": "gpucost-lab release registry", "version": 99}',
    ],
)
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
