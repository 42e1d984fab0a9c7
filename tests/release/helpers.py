"""Candidates and gate decisions built by hand, shared by the tests of the gate, the candidate result and the
registry."""

import math

from gpucost_lab.release import CandidateResult, gate
from gpucost_lab.stats import Estimate

GB = 10**9


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
