"""The release gate (chapter 06): promote a candidate only when it is safe.

A faster run must not win silently. :func:`gate` promotes a candidate over a baseline only if

1. **contract**: both were measured under the same :class:`~gpucost_lab.measure.contract.BenchmarkContract`,
   except the fields named in ``allow`` (the change under test, e.g. ``dtype``);
2. **parity**: the candidate still reaches the same quality (the check is done elsewhere and passed in);
3. **memory**: its peak memory fits the budget;
4. **window**: its full run finishes inside the nightly window;
5. **cost**: its cost to the quality target is lower *with 95% confidence*: the whole 95% interval of the
   ratio candidate / baseline lies below 1, the verdict "cheaper" of the course's one decision rule
   (:func:`gpucost_lab.stats.decide`; the interval's width is the precision of the saving, not a condition).
   Pass the ratio measured by an interleaved comparison (:meth:`gpucost_lab.measure.compare.Comparison.cost_to_target`);
   without one, the two results' own estimates are compared as independent samples
   (:func:`gpucost_lab.stats.ratio_interval`). "Same", "inconclusive" and "more expensive" never promote.

Anything else falls back: to the ``fallback`` named (e.g. the registry's last known-good release) or to
the baseline. Every check's outcome, passed ones too, is written in the :class:`Decision`'s reasons.
Each side is a :class:`~gpucost_lab.release.candidate.CandidateResult`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields

from gpucost_lab._validate import InputError, integer_at_least, one_of, positive
from gpucost_lab.formatting import format_bytes, format_hours, format_pair
from gpucost_lab.measure.contract import ContractMismatch
from gpucost_lab.release.candidate import CandidateResult
from gpucost_lab.stats import Estimate, Interval, RatioVerdict, ratio_interval

ACTIONS = ("promote", "fallback")
# The gate's checks, in the order they are reported.
CHECKS = ("contract", "parity", "memory", "window", "cost")


# --------------------------------------------------------------------------------------------------
# the decision


@dataclass(frozen=True)
class Decision:
    """What the gate decided, and why: every check's outcome, passed ones too."""

    action: str  # "promote" or "fallback"
    to: str  # the release in production after this decision
    candidate: str  # the candidate's name
    baseline: str  # the baseline's name
    fallback: str  # where production goes when the candidate is unsafe: the fallback given, else the baseline
    reasons: tuple[str, ...]  # one sentence per check, in CHECKS order, e.g. "memory: 25.1 GB > 21.6 GB budget"
    checks: Mapping[str, bool] = field(hash=False)  # check name (CHECKS) -> passed
    cost_ratio: float | None  # candidate / baseline cost to target (geometric means); None when the contracts differ
    cost_ratio_ci95: tuple[float, float] | None  # 95% interval of cost_ratio; None when the contracts differ

    def __post_init__(self) -> None:
        one_of("action", self.action, ACTIONS)
        for name in ("to", "candidate", "baseline", "fallback"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise InputError(name, f"{name} must be a non-empty string, got {value!r}")
        given = dict(self.checks) if isinstance(self.checks, Mapping) else self.checks
        if (
            not isinstance(given, dict)
            or set(given) != set(CHECKS)
            or not all(isinstance(v, bool) for v in given.values())
        ):
            raise InputError("checks", f"checks must map exactly {list(CHECKS)} to True/False, got {self.checks!r}")
        checks = {name: given[name] for name in CHECKS}  # always in CHECKS order
        object.__setattr__(self, "checks", checks)
        object.__setattr__(self, "reasons", tuple(self.reasons))
        if self.action == "promote" and not (all(checks.values()) and self.to == self.candidate):
            raise InputError(
                "to",
                f"to must be the candidate {self.candidate!r} and every check must pass for "
                f"action 'promote', got to={self.to!r}, checks={checks!r}",
            )
        if self.action == "fallback" and (all(checks.values()) or self.to != self.fallback):
            raise InputError(
                "to",
                f"to must be the fallback {self.fallback!r} and some check must fail for "
                f"action 'fallback', got to={self.to!r}, checks={checks!r}",
            )
        if (self.cost_ratio is None) != (self.cost_ratio_ci95 is None):
            raise InputError(
                "cost_ratio",
                f"cost_ratio and cost_ratio_ci95 must both be given or both be None, "
                f"got {self.cost_ratio!r} and {self.cost_ratio_ci95!r}",
            )
        if self.cost_ratio_ci95 is not None:
            object.__setattr__(self, "cost_ratio_ci95", tuple(float(x) for x in self.cost_ratio_ci95))

    @property
    def promoted(self) -> bool:
        return self.action == "promote"

    def to_dict(self) -> dict:
        """Plain JSON types: lists for tuples."""
        return {
            "action": self.action,
            "to": self.to,
            "candidate": self.candidate,
            "baseline": self.baseline,
            "fallback": self.fallback,
            "reasons": list(self.reasons),
            "checks": dict(self.checks),
            "cost_ratio": self.cost_ratio,
            "cost_ratio_ci95": None if self.cost_ratio_ci95 is None else list(self.cost_ratio_ci95),
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> Decision:
        names = {f.name for f in fields(cls)}
        if not isinstance(data, Mapping) or set(data) != names:
            got = sorted(data) if isinstance(data, Mapping) else type(data).__name__
            raise InputError("decision", f"decision fields must be exactly {sorted(names)}, got {got}")
        return cls(**data)


def _contract_check(baseline: CandidateResult, candidate: CandidateResult, allow: tuple[str, ...]) -> tuple[bool, str]:
    try:
        baseline.contract.require_same(candidate.contract, allow=allow)
    except ContractMismatch as mismatch:
        listed = ", ".join(f"{c.field} ({c.before!r} -> {c.after!r})" for c in mismatch.changes)
        return False, f"contract: differs in {listed}; allowed to differ: {list(allow) or 'none'}"
    allowed = baseline.contract.diff(candidate.contract)
    if allowed:
        listed = ", ".join(f"{c.field} ({c.before!r} -> {c.after!r})" for c in allowed)
        return True, f"contract: same except the allowed {listed}"
    return True, "contract: same"


def _parity_check(candidate: CandidateResult) -> tuple[bool, str]:
    found = "; ".join(candidate.parity_reasons)
    if candidate.parity_passed:
        return True, "parity: passed" + (f" ({found})" if found else "")
    return False, "parity: failed" + (f" ({found})" if found else " (no reason given)")


def _memory_check(candidate: CandidateResult, budget_bytes: int) -> tuple[bool, str]:
    fits = candidate.peak_memory_bytes <= budget_bytes
    peak, budget = format_pair(candidate.peak_memory_bytes, budget_bytes, format_bytes, lambda b: f"{b:,} bytes")
    return fits, f"memory: {peak} {'<=' if fits else '>'} {budget} budget"


def _window_check(candidate: CandidateResult, window_hours: float) -> tuple[bool, str]:
    fits = candidate.run_hours <= window_hours
    run, window = format_pair(candidate.run_hours, window_hours, format_hours, lambda h: f"{h!r} h")
    return fits, f"window: run {run} {'<=' if fits else '>'} {window} window"


def _cost_check(
    baseline: CandidateResult, candidate: CandidateResult, cost: RatioVerdict | None
) -> tuple[bool, str, Interval]:
    """Whether the candidate is cheaper to the target with 95% confidence, why, and the ratio with its interval."""
    comparison = cost if cost is not None else _independent_cost(baseline, candidate)
    reason = comparison.reason.removeprefix("cost to target ").replace(
        "x (95% interval", "x baseline cost to target (95% interval", 1
    )
    return comparison.verdict == "cheaper", "cost: " + reason, comparison.interval


def _gate_inputs(
    baseline: CandidateResult,
    candidate: CandidateResult,
    budget_bytes: int,
    window_hours: float,
    allow: Iterable[str],
    fallback: str | None,
) -> tuple[int, tuple[str, ...]]:
    """:func:`gate`'s arguments checked: the budget as an int and ``allow`` as a tuple."""
    for name, result in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(result, CandidateResult):
            raise InputError(name, f"{name} must be a CandidateResult, got {type(result).__name__}")
    if candidate.name == baseline.name:
        raise InputError(
            "candidate.name", f"candidate.name must differ from baseline.name, got {candidate.name!r} for both"
        )
    budget = integer_at_least("budget_bytes", budget_bytes, 1)
    positive("window_hours", window_hours)
    allowed = (allow,) if isinstance(allow, str) else tuple(allow)
    if fallback is not None and (not isinstance(fallback, str) or not fallback.strip()):
        raise InputError("fallback", f"fallback must be a release name or None, got {fallback!r}")
    if fallback == candidate.name:
        raise InputError("fallback", f"fallback must not be the candidate it replaces, got {fallback!r}")
    return budget, allowed


def gate(
    baseline: CandidateResult,
    candidate: CandidateResult,
    *,
    budget_bytes: int,
    window_hours: float,
    allow: Iterable[str] = (),
    fallback: str | None = None,
    cost: RatioVerdict | None = None,
) -> Decision:
    """Promote ``candidate`` only if every check passes (see the module docstring); else fall back.

    ``budget_bytes`` is the peak memory allowed (bytes), ``window_hours`` the nightly window, ``allow``
    the contract fields the candidate may change, ``fallback`` where production goes when the candidate
    is unsafe (default: the baseline's name), ``cost`` the interleaved comparison's cost-to-target ratio
    (without it, both ``cost_to_target_usd`` must be Estimates, compared as independent samples).
    """
    budget_bytes, allowed = _gate_inputs(baseline, candidate, budget_bytes, window_hours, allow, fallback)
    checks: dict[str, bool] = {}
    reasons: list[str] = []
    for name, (passed, reason) in (
        ("contract", _contract_check(baseline, candidate, allowed)),
        ("parity", _parity_check(candidate)),
        ("memory", _memory_check(candidate, budget_bytes)),
        ("window", _window_check(candidate, window_hours)),
    ):
        checks[name] = passed
        reasons.append(reason)

    cost_ratio: float | None = None
    cost_ratio_ci95: tuple[float, float] | None = None
    if not checks["contract"]:
        checks["cost"] = False
        reasons.append("cost: not compared, the contracts differ")
    else:
        checks["cost"], reason, (cost_ratio, low, high) = _cost_check(baseline, candidate, cost)
        cost_ratio_ci95 = (low, high)
        reasons.append(reason)

    fallback_to = fallback if fallback is not None else baseline.name
    promote = all(checks.values())
    return Decision(
        action="promote" if promote else "fallback",
        to=candidate.name if promote else fallback_to,
        candidate=candidate.name,
        baseline=baseline.name,
        fallback=fallback_to,
        reasons=tuple(reasons),
        checks=checks,
        cost_ratio=cost_ratio,
        cost_ratio_ci95=cost_ratio_ci95,
    )


def _independent_cost(baseline: CandidateResult, candidate: CandidateResult) -> RatioVerdict:
    """The ratio of two costs to target measured apart: candidate / baseline, as independent samples."""
    costs: dict[str, Estimate] = {}
    for name, result in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(result.cost_to_target_usd, Estimate):
            raise InputError(
                "cost",
                f"cost is needed when {name}.cost_to_target_usd is an Interval (a derived figure "
                "has no repeats to compare): pass Comparison.cost_to_target(...)",
            )
        costs[name] = result.cost_to_target_usd
    return RatioVerdict(ratio_interval(costs["candidate"], costs["baseline"]))


__all__ = ["ACTIONS", "CHECKS", "Decision", "gate"]
