"""One measured configuration (chapter 06): the record the release gate judges and the release report shows.

A :class:`CandidateResult` holds what was measured for one configuration, a baseline or a candidate: its
contract, its cost to the quality target with an interval, its quality parity, its peak memory and the length
of its nightly run. :func:`gpucost_lab.release.gate` reads those. The report also shows throughput, cost per
sample and steps to target; they are optional here (``None``) because the gate needs none of them, and
:class:`gpucost_lab.release.report.ReportData` refuses a record that lacks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpucost_lab._validate import InputError, integer_at_least, non_empty_text, positive
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.stats import Estimate, Interval

# The fields a report needs beyond what the gate reads.
REPORT_FIELDS = ("samples_per_s", "cost_per_sample_usd", "steps_to_target")


@dataclass(frozen=True)
class CandidateResult:
    """One measured configuration (baseline or candidate), in plain fields: the gate's input and a report's row."""

    name: str  # the release name, e.g. "mlp-bf16-v3"
    contract: BenchmarkContract  # what was measured and how
    cost_to_target_usd: Estimate | Interval  # cost to reach the quality target, with its interval (USD, > 0)
    parity_passed: bool  # the candidate reaches the same quality as the baseline
    parity_reasons: tuple[str, ...]  # what the parity check found, in words
    peak_memory_bytes: int  # peak device memory of a training step
    run_hours: float  # the full nightly run at the measured (mean) throughput
    details: Mapping[str, object] = field(default_factory=dict, compare=False, hash=False)  # extra, for reports
    samples_per_s: Estimate | None = None  # throughput, one value per repeat (for reports)
    cost_per_sample_usd: Estimate | None = None  # cost of one sample, one value per repeat (for reports)
    steps_to_target: float | None = None  # training steps to the quality target, geometric mean over seeds
    parity_summary: str | None = None  # e.g. "reference"; None: said from parity_passed and parity_reasons

    def __post_init__(self) -> None:
        non_empty_text("name", self.name)
        if not isinstance(self.contract, BenchmarkContract):
            raise InputError("contract", f"contract must be a BenchmarkContract, got {type(self.contract).__name__}")
        if not isinstance(self.cost_to_target_usd, (Estimate, Interval)):
            raise InputError(
                "cost_to_target_usd",
                f"cost_to_target_usd must be an Estimate or an Interval, got {type(self.cost_to_target_usd).__name__}",
            )
        if not isinstance(self.parity_passed, bool):
            raise InputError("parity_passed", f"parity_passed must be True or False, got {self.parity_passed!r}")
        reasons = (self.parity_reasons,) if isinstance(self.parity_reasons, str) else tuple(self.parity_reasons)
        if not all(isinstance(r, str) for r in reasons):
            raise InputError("parity_reasons", f"parity_reasons must be strings, got {self.parity_reasons!r}")
        object.__setattr__(self, "parity_reasons", reasons)
        object.__setattr__(self, "peak_memory_bytes", integer_at_least("peak_memory_bytes", self.peak_memory_bytes, 0))
        object.__setattr__(self, "run_hours", positive("run_hours", self.run_hours))
        if not isinstance(self.details, Mapping):
            raise InputError("details", f"details must be a mapping, got {type(self.details).__name__}")
        object.__setattr__(self, "details", dict(self.details))
        for name in ("samples_per_s", "cost_per_sample_usd"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Estimate):
                raise InputError(name, f"{name} must be an Estimate or None, got {type(value).__name__}")
        if self.steps_to_target is not None:
            object.__setattr__(self, "steps_to_target", positive("steps_to_target", self.steps_to_target))
        if self.parity_summary is not None:
            non_empty_text("parity_summary", self.parity_summary)

    @property
    def parity(self) -> str:
        """The quality parity in words: ``parity_summary`` when given, else ``"passed: <reasons>"`` or
        ``"failed: <reasons>"``."""
        if self.parity_summary is not None:
            return self.parity_summary
        said = "passed" if self.parity_passed else "failed"
        return f"{said}: {'; '.join(self.parity_reasons)}" if self.parity_reasons else said

    def require_report_fields(self, name: str = "result") -> CandidateResult:
        """``self`` if it has every field a report shows (:data:`REPORT_FIELDS`); else ValueError naming the first
        missing one as ``<name>.<field>``."""
        for attr in REPORT_FIELDS:
            if getattr(self, attr) is None:
                raise ValueError(f"{name}.{attr} must be given for a report, got None")
        return self


__all__ = ["REPORT_FIELDS", "CandidateResult"]
