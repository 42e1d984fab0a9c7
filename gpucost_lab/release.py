"""Release the result (chapter 06): a release gate that promotes a candidate only when it is safe,
and a registry that remembers what is in production.

A faster run must not win silently. :func:`gate` promotes a candidate over a baseline only if

1. **contract**: both were measured under the same :class:`~gpucost_lab.contract.BenchmarkContract`,
   except the fields named in ``allow`` (the change under test, e.g. ``dtype``);
2. **parity**: the candidate still reaches the same quality (the check is done elsewhere and passed in);
3. **memory**: its peak memory fits the budget;
4. **window**: its full run finishes inside the nightly window;
5. **cost**: its cost to the quality target is lower *with 95% confidence*: the upper end of the 95%
   interval of the ratio candidate / baseline is below 1, and the interval is narrow enough to act on
   (:data:`gpucost_lab.compare.MAX_WIDTH_FACTOR`). Pass the ratio measured by an interleaved comparison
   (:meth:`gpucost_lab.compare.Comparison.cost_to_target`); without one, the two results' own estimates
   are compared as independent samples. An "inconclusive" cost never promotes.

Anything else falls back: to the ``fallback`` named (e.g. the registry's last known-good release) or to
the baseline. Every check's outcome, passed ones too, is written in the :class:`Decision`'s reasons.

:class:`Registry` keeps the release history in a JSON file written atomically (temporary file in the
same folder, flush, ``fsync``, ``os.replace``, ``fsync`` of the folder), so a crash mid-write leaves the
previous registry intact; a corrupt file raises ``ValueError`` naming it and is never silently reset.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path

from ._validate import integer_at_least, one_of, positive
from .atomic import atomic_write, atomic_write_text
from .compare import RatioVerdict
from .contract import BenchmarkContract, ContractMismatch
from .stats import Estimate, Interval, ratio_interval

ACTIONS = ("promote", "fallback")
# The gate's checks, in the order they are reported.
CHECKS = ("contract", "parity", "memory", "window", "cost")
REGISTRY_FORMAT = "gpucost-lab release registry"
REGISTRY_VERSION = 1


# --------------------------------------------------------------------------------------------------
# formatting shared with the report (one format per quantity, everywhere)


def format_bytes(n_bytes: int) -> str:
    """Decimal units (GB = 10^9 bytes), one decimal: ``25_100_000_000`` -> ``"25.1 GB"``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n_bytes) >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{int(n_bytes)} B"


def format_hours(hours: float) -> str:
    """Two decimals: ``7.5`` -> ``"7.50 h"``."""
    return f"{hours:.2f} h"


def format_ratio(ratio: float) -> str:
    """Three decimals: ``0.8`` -> ``"0.800x"``."""
    return f"{ratio:.3f}x"


def _pair(a: float, b: float, short: Callable[[float], str], exact: Callable[[float], str]) -> tuple[str, str]:
    """Format two values to compare; exactly when the short forms would hide a difference."""
    sa, sb = short(a), short(b)
    if a != b and sa == sb:
        return exact(a), exact(b)
    return sa, sb


# --------------------------------------------------------------------------------------------------
# results and the ratio of two costs


@dataclass(frozen=True)
class CandidateResult:
    """One measured configuration (baseline or candidate), in plain fields, ready for :func:`gate`."""

    name: str  # the release name, e.g. "mlp-bf16-v3"
    contract: BenchmarkContract  # what was measured and how
    cost_to_target_usd: Estimate | Interval  # cost to reach the quality target, with its interval (USD, > 0)
    parity_passed: bool  # the candidate reaches the same quality as the baseline
    parity_reasons: tuple[str, ...]  # what the parity check found, in words
    peak_memory_bytes: int  # peak device memory of a training step
    run_hours: float  # the full nightly run at the measured (mean) throughput
    details: Mapping[str, object] = field(default_factory=dict, compare=False, hash=False)  # extra, for reports

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.contract, BenchmarkContract):
            raise ValueError(f"contract must be a BenchmarkContract, got {type(self.contract).__name__}")
        if not isinstance(self.cost_to_target_usd, (Estimate, Interval)):
            raise ValueError(
                f"cost_to_target_usd must be an Estimate or an Interval, got {type(self.cost_to_target_usd).__name__}"
            )
        if not isinstance(self.parity_passed, bool):
            raise ValueError(f"parity_passed must be True or False, got {self.parity_passed!r}")
        reasons = (self.parity_reasons,) if isinstance(self.parity_reasons, str) else tuple(self.parity_reasons)
        if not all(isinstance(r, str) for r in reasons):
            raise ValueError(f"parity_reasons must be strings, got {self.parity_reasons!r}")
        object.__setattr__(self, "parity_reasons", reasons)
        object.__setattr__(self, "peak_memory_bytes", integer_at_least("peak_memory_bytes", self.peak_memory_bytes, 0))
        object.__setattr__(self, "run_hours", positive("run_hours", self.run_hours))
        object.__setattr__(self, "details", dict(self.details))


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
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        given = dict(self.checks) if isinstance(self.checks, Mapping) else self.checks
        if (
            not isinstance(given, dict)
            or set(given) != set(CHECKS)
            or not all(isinstance(v, bool) for v in given.values())
        ):
            raise ValueError(f"checks must map exactly {list(CHECKS)} to True/False, got {self.checks!r}")
        checks = {name: given[name] for name in CHECKS}  # always in CHECKS order
        object.__setattr__(self, "checks", checks)
        object.__setattr__(self, "reasons", tuple(self.reasons))
        if self.action == "promote" and not (all(checks.values()) and self.to == self.candidate):
            raise ValueError(
                f"to must be the candidate {self.candidate!r} and every check must pass for "
                f"action 'promote', got to={self.to!r}, checks={checks!r}"
            )
        if self.action == "fallback" and (all(checks.values()) or self.to != self.fallback):
            raise ValueError(
                f"to must be the fallback {self.fallback!r} and some check must fail for "
                f"action 'fallback', got to={self.to!r}, checks={checks!r}"
            )
        if (self.cost_ratio is None) != (self.cost_ratio_ci95 is None):
            raise ValueError(
                f"cost_ratio and cost_ratio_ci95 must both be given or both be None, "
                f"got {self.cost_ratio!r} and {self.cost_ratio_ci95!r}"
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
            raise ValueError(f"decision fields must be exactly {sorted(names)}, got {got}")
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
    for name, result in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(result, CandidateResult):
            raise ValueError(f"{name} must be a CandidateResult, got {type(result).__name__}")
    if candidate.name == baseline.name:
        raise ValueError(f"candidate.name must differ from baseline.name, got {candidate.name!r} for both")
    budget_bytes = integer_at_least("budget_bytes", budget_bytes, 1)
    positive("window_hours", window_hours)
    allow = (allow,) if isinstance(allow, str) else tuple(allow)
    if fallback is not None and (not isinstance(fallback, str) or not fallback.strip()):
        raise ValueError(f"fallback must be a release name or None, got {fallback!r}")
    if fallback == candidate.name:
        raise ValueError(f"fallback must not be the candidate it replaces, got {fallback!r}")

    checks: dict[str, bool] = {}
    reasons: list[str] = []

    checks["contract"], reason = _contract_check(baseline, candidate, allow)
    reasons.append(reason)

    checks["parity"] = candidate.parity_passed
    found = "; ".join(candidate.parity_reasons)
    if candidate.parity_passed:
        reasons.append("parity: passed" + (f" ({found})" if found else ""))
    else:
        reasons.append("parity: failed" + (f" ({found})" if found else " (no reason given)"))

    checks["memory"] = candidate.peak_memory_bytes <= budget_bytes
    peak, budget = _pair(candidate.peak_memory_bytes, budget_bytes, format_bytes, lambda b: f"{b:,} bytes")
    reasons.append(f"memory: {peak} {'<=' if checks['memory'] else '>'} {budget} budget")

    checks["window"] = candidate.run_hours <= window_hours
    run, window = _pair(candidate.run_hours, window_hours, format_hours, lambda h: f"{h!r} h")
    reasons.append(f"window: run {run} {'<=' if checks['window'] else '>'} {window} window")

    cost_ratio = cost_ratio_ci95 = None
    if not checks["contract"]:
        checks["cost"] = False
        reasons.append("cost: not compared, the contracts differ")
    else:
        comparison = cost if cost is not None else _independent_cost(baseline, candidate)
        r, low, high = comparison.interval
        cost_ratio, cost_ratio_ci95 = r, (low, high)
        checks["cost"] = comparison.verdict == "cheaper"
        reasons.append(
            "cost: "
            + comparison.reason.removeprefix("cost to target ").replace(
                "x (95% CI", "x baseline cost to target (95% CI", 1
            )
        )

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
    for name, result in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(result.cost_to_target_usd, Estimate):
            raise ValueError(
                f"cost is needed when {name}.cost_to_target_usd is an Interval (a derived figure "
                "has no repeats to compare): pass Comparison.cost_to_target(...)"
            )
    return RatioVerdict(ratio_interval(candidate.cost_to_target_usd, baseline.cost_to_target_usd))


# --------------------------------------------------------------------------------------------------
# the registry


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Registry:
    """The releases of one workload, in a JSON file: what is in production and what was decided.

    - ``current()``: the release in production now (``None`` before anything was recorded).
    - ``last_known_good()``: the newest promoted release that has not been rolled back (``None`` before
      the first promotion). Pass it as ``gate(..., fallback=registry.last_known_good())``.
    - ``record(decision)``: appends the decision with its time. A promotion makes the candidate both the
      current and the last known-good release; a fallback never makes its candidate either: production
      stays on, or returns to, the release the decision names in ``to`` (the fallback), and the last
      known-good release does not change.
    - ``rollback()``: production leaves the release it runs now for the last known-good release. If it
      runs the last known-good release itself (it misbehaved after promotion), that release is no longer
      known good and production returns to the known-good release before it (for the first promotion,
      the baseline it was measured against).

    The state is replayed from the history on every read, so several ``Registry`` objects on one file
    agree; writes are atomic (:func:`atomic_write`). There is no lock: one writer at a time.
    """

    def __init__(self, path: str | os.PathLike, clock: Callable[[], datetime] = _utc_now):
        self.path = Path(path)
        self.clock = clock

    def __repr__(self) -> str:
        return f"Registry({str(self.path)!r})"

    # reading

    def _load(self) -> list[dict]:
        """The history, validated; an absent file is an empty registry, anything unreadable raises."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"release registry {str(self.path)!r} cannot be read: {e}") from e
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"release registry {str(self.path)!r} is not valid JSON ({e}); "
                f"it was left untouched, restore it from a backup"
            ) from e
        if not isinstance(data, dict) or data.get("format") != REGISTRY_FORMAT:
            raise ValueError(
                f"release registry {str(self.path)!r} must be a JSON object with "
                f"format {REGISTRY_FORMAT!r}, got {str(data)[:80]!r}"
            )
        if data.get("version") != REGISTRY_VERSION:
            raise ValueError(
                f"release registry {str(self.path)!r} must have version {REGISTRY_VERSION}, got {data.get('version')!r}"
            )
        history = data.get("history")
        if not isinstance(history, list):
            raise ValueError(f"release registry {str(self.path)!r} must hold a history list, got {history!r}")
        try:
            state = _replay(history)
        except (ValueError, TypeError, KeyError) as e:
            raise ValueError(f"release registry {str(self.path)!r} has a broken history: {e}") from e
        stored = {k: data.get(k) for k in state}
        if stored != state:
            raise ValueError(
                f"release registry {str(self.path)!r} says {stored!r} but its history gives "
                f"{state!r}; it was edited by hand or is corrupt"
            )
        return history

    def current(self) -> str | None:
        return _replay(self._load())["current"]

    def last_known_good(self) -> str | None:
        return _replay(self._load())["last_known_good"]

    def history(self) -> list[dict]:
        """Every recorded event, oldest first: ``{"event": "decision", "recorded_at", "decision"}`` or
        ``{"event": "rollback", "recorded_at", "from", "to"}`` (copies; editing them changes nothing)."""
        return json.loads(json.dumps(self._load()))

    def decisions(self) -> list[Decision]:
        """The recorded decisions, oldest first."""
        return [Decision.from_dict(e["decision"]) for e in self._load() if e["event"] == "decision"]

    # writing

    def _timestamp(self, at: datetime | None) -> str:
        at = self.clock() if at is None else at
        if not isinstance(at, datetime) or at.tzinfo is None:
            raise ValueError(f"at must be a timezone-aware datetime (e.g. datetime.now(timezone.utc)), got {at!r}")
        return at.isoformat()

    def _save(self, history: list[dict]) -> None:
        data = {"format": REGISTRY_FORMAT, "version": REGISTRY_VERSION, **_replay(history), "history": history}
        atomic_write(self.path, lambda f: json.dump(data, f, indent=2, sort_keys=True))

    def record(self, decision: Decision, at: datetime | None = None) -> dict:
        """Append ``decision``, stamped ``at`` (default: the clock). Returns the entry written."""
        if not isinstance(decision, Decision):
            raise ValueError(f"decision must be a Decision, got {type(decision).__name__}")
        history = self._load()
        entry = {"event": "decision", "recorded_at": self._timestamp(at), "decision": decision.to_dict()}
        self._save(history + [entry])
        return entry

    def rollback(self, at: datetime | None = None) -> str:
        """Return production to the last known-good release (see the class docstring); the name."""
        history = self._load()
        state = _replay(history)
        target = _rollback_target(state)
        if target is None:
            raise ValueError(
                f"rollback needs a known-good release other than the current "
                f"{state['current']!r}; release registry {str(self.path)!r} has known good "
                f"{state['known_good']!r}"
            )
        entry = {"event": "rollback", "recorded_at": self._timestamp(at), "from": state["current"], "to": target}
        self._save(history + [entry])
        return target


def _rollback_target(state: dict) -> str | None:
    good = state["known_good"]
    if not good:
        return None
    if state["current"] != good[-1]:
        return good[-1]
    return good[-2] if len(good) >= 2 else None


def _replay(history: list) -> dict:
    """The registry's state after ``history``: current, last known good and the known-good stack."""
    current: str | None = None
    good: list[str] = []  # known-good releases, oldest first; the first promotion's baseline at the bottom
    for i, entry in enumerate(history):
        if not isinstance(entry, dict) or entry.get("event") not in ("decision", "rollback"):
            raise ValueError(f"entry {i} must be a decision or a rollback, got {str(entry)[:80]!r}")
        if not isinstance(entry.get("recorded_at"), str):
            raise ValueError(f"entry {i} must have a recorded_at time, got {entry.get('recorded_at')!r}")
        if entry["event"] == "decision":
            decision = Decision.from_dict(entry["decision"])
            if decision.promoted:
                if not good:
                    good.append(decision.baseline)
                good.append(decision.candidate)
            current = decision.to
        else:
            expected = _rollback_target({"current": current, "known_good": good})
            if entry.get("from") != current or entry.get("to") != expected or expected is None:
                raise ValueError(
                    f"entry {i} rolls back {entry.get('from')!r} -> {entry.get('to')!r}, "
                    f"but production was {current!r} with known good {good!r}"
                )
            if current == good[-1]:
                good.pop()
            current = expected
    return {"current": current, "last_known_good": good[-1] if good else None, "known_good": list(good)}


__all__ = [
    "ACTIONS",
    "CHECKS",
    "CandidateResult",
    "Decision",
    "Registry",
    "atomic_write",
    "atomic_write_text",
    "format_bytes",
    "format_hours",
    "format_ratio",
    "gate",
]
