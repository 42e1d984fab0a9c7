"""gpucost_lab.release.candidate: a candidate's measured result (chapter 06), its checks and the fields a report
needs."""

import dataclasses

import pytest

from gpucost_lab.release import CandidateResult, gate
from gpucost_lab.stats import Estimate

from .helpers import BASE_COSTS, GB, GOOD_COSTS, result


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
