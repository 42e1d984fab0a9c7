"""Statistics across repeats (chapter 03): one estimator for every positive quantity the course measures.

Times, rates, costs and ratios are positive and multiply: a cost is a time times a price, a rate is
units over a time, a cost to target is a cost per step times steps. So the course summarises repeats
on the log scale: the centre is the **geometric mean** and the 95% interval is a Student-t interval of
the mean log, mapped back with ``exp``. That interval can never reach zero or go negative, and the
estimator commutes with every product and quotient the course takes: the geometric mean of
per-repeat costs is the price times the geometric mean of per-repeat times, and the ratio of two
geometric means is the geometric mean of the paired ratios. Every figure a chapter prints therefore
agrees with every other figure derived from the same raw times, by construction.

Raw values are kept; centre, spread and interval are derived from them, so every figure can be
recomputed by hand from the per-repeat numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from ._validate import InputError


def t_quantile_95(df: float) -> float:
    """Two-sided 95% Student-t quantile t(0.975, df); the normal 1.96 for infinite df."""
    if math.isinf(df):
        return 1.959963984540054
    from scipy import stats  # here, not at import: scipy.stats takes half a second to import

    return float(stats.t.ppf(0.975, df))


@dataclass(frozen=True)
class Estimate:
    """A positive quantity measured once per repeat: its geometric mean and a log-scale 95% interval."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.values) < 2:
            raise InputError(
                "values", f"values must hold at least 2 repeats to give an interval, got {len(self.values)}"
            )
        if not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in self.values
        ):
            raise InputError(
                "values", f"values must all be finite numbers > 0 (times, rates and costs), got {self.values!r}"
            )
        object.__setattr__(self, "values", tuple(float(v) for v in self.values))

    @classmethod
    def of(cls, values: Iterable[float]) -> Estimate:
        return cls(tuple(float(v) for v in values))

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def logs(self) -> tuple[float, ...]:
        return tuple(math.log(v) for v in self.values)

    @property
    def mean_log(self) -> float:
        return math.fsum(self.logs) / self.n

    @property
    def geomean(self) -> float:
        """The centre: exp(mean of the logs) = the n-th root of the product of the values."""
        return math.exp(self.mean_log)

    @property
    def value(self) -> float:
        """The figure a table shows: the geometric mean (as :attr:`Interval.value`)."""
        return self.geomean

    @property
    def log_std(self) -> float:
        """Sample standard deviation of the logs (n - 1 in the denominator): about the relative spread."""
        m = self.mean_log
        return math.sqrt(math.fsum((v - m) ** 2 for v in self.logs) / (self.n - 1))

    @property
    def log_se(self) -> float:
        """Standard error of the mean log: log_std / sqrt(n)."""
        return self.log_std / math.sqrt(self.n)

    @property
    def ci95_low(self) -> float:
        return self.interval.ci95_low

    @property
    def ci95_high(self) -> float:
        return self.interval.ci95_high

    @property
    def interval(self) -> Interval:
        """geomean x exp(-+ t(0.975, n - 1) x log_se)."""
        return combine((self, 1))

    @property
    def width_factor(self) -> float:
        """ci95_high / ci95_low: 1.10 means the interval spans 10%."""
        return self.interval.width_factor

    def to_dict(self) -> dict:
        """``{geomean, ci95_low, ci95_high}``, the shape every CLI figure with uncertainty takes."""
        return {"geomean": self.geomean, "ci95_low": self.ci95_low, "ci95_high": self.ci95_high}


class Interval(NamedTuple):
    """A positive figure derived from estimates (a ratio, a cost to target) with its 95% interval;
    unpacks as ``(value, low, high)``."""

    value: float
    ci95_low: float
    ci95_high: float

    @property
    def width_factor(self) -> float:
        """ci95_high / ci95_low (1.0 for an exact figure)."""
        return self.ci95_high / self.ci95_low

    def to_dict(self) -> dict:
        return {"value": self.value, "ci95_low": self.ci95_low, "ci95_high": self.ci95_high}


def combine(*factors: tuple[Estimate | float, int]) -> Interval:
    """The product of independent factors, each raised to the power +1 or -1, with its 95% interval.

    ``combine((cost_per_step, 1), (steps, 1))`` is a cost to target; ``combine((a, 1), (b, -1))`` is
    a / b. A plain number is exact (no variance). On the log scale the variances add:
    ``var = sum(log_se_i^2)``; the quantile is Student t with the Welch-Satterthwaite degrees of freedom
    ``var^2 / sum(log_se_i^4 / (n_i - 1))``. The interval is ``product x exp(-+ t x sqrt(var))``: positive,
    and the interval of 1 / x is the reciprocal of the interval of x.
    """
    log_centre, variance, df_denominator = 0.0, 0.0, 0.0
    for factor, power in factors:
        if power not in (1, -1):
            raise InputError("power", f"power must be 1 or -1, got {power!r}")
        if isinstance(factor, Estimate):
            log_centre += power * factor.mean_log
            v = factor.log_se**2
            variance += v
            df_denominator += v * v / (factor.n - 1)
        elif isinstance(factor, (int, float)) and not isinstance(factor, bool) and math.isfinite(factor) and factor > 0:
            log_centre += power * math.log(factor)
        else:
            raise InputError("factor", f"factor must be an Estimate or a finite number > 0, got {factor!r}")
    ratio = math.exp(log_centre)
    if variance == 0:
        return Interval(ratio, ratio, ratio)
    half = t_quantile_95(variance**2 / df_denominator) * math.sqrt(variance)
    return Interval(ratio, ratio * math.exp(-half), ratio * math.exp(half))


def ratio_interval(candidate: Estimate, baseline: Estimate) -> Interval:
    """Ratio of two independent estimates, candidate / baseline, with its 95% interval (:func:`combine`)."""
    for name, e in (("candidate", candidate), ("baseline", baseline)):
        if not isinstance(e, Estimate):
            raise InputError(name, f"{name} must be an Estimate, got {type(e).__name__}")
    return combine((candidate, 1), (baseline, -1))


# An interval whose high end is more than twice its low end is too wide to act on. Why 2: such an interval says
# the noise was as large as the effects the course prices (10-50% changes in cost), and a Student-t interval
# from ten rounds of noise that large no longer deserves trust, since timing noise on a busy machine is
# heavy-tailed, not normal. Measured here (benchmarks/RESULTS.md): the course's comparisons span a factor
# 1.02-1.15 on a quiet machine and 1.2-1.6 with two busy programs beside them; the loaded run that once
# promoted a candidate at 0.035x the baseline's cost spanned a factor 259.
MAX_WIDTH_FACTOR = 2.0


@dataclass(frozen=True)
class RatioVerdict:
    """A candidate / baseline ratio with its 95% interval, and what it allows one to say.

    ``lower`` and ``higher`` name the two conclusions ("faster"/"slower" for step time, "cheaper"/"more
    expensive" for cost); the verdict is one of them only when the interval excludes 1 and spans at most
    ``max_width_factor``, else "inconclusive".
    """

    interval: Interval
    subject: str = "cost to target"  # what the ratio measures, e.g. "step time"
    lower: str = "cheaper"  # the verdict when the whole interval is below 1
    higher: str = "more expensive"  # the verdict when the whole interval is above 1
    max_width_factor: float = MAX_WIDTH_FACTOR

    @property
    def ratio(self) -> float:
        return self.interval.value

    def _judge(self) -> tuple[str, str]:
        r, low, high = self.interval
        said = f"{self.subject} {r:.3f}x (95% CI {low:.3f} to {high:.3f})"
        if low <= 1.0 <= high:
            return "inconclusive", f"{said}: the interval contains 1, no difference can be claimed"
        if self.interval.width_factor > self.max_width_factor:
            return "inconclusive", (
                f"{said}: the interval spans a factor {self.interval.width_factor:.2f}, wider "
                f"than the {self.max_width_factor:g} allowed; measure more rounds or quiet the "
                "machine"
            )
        word = self.lower if high < 1.0 else self.higher
        return word, f"{said}: {word} with 95% confidence"

    @property
    def verdict(self) -> str:
        return self._judge()[0]

    @property
    def reason(self) -> str:
        """The verdict in a sentence, with the ratio and its interval."""
        return self._judge()[1]

    def to_dict(self) -> dict:
        return {
            **self.interval.to_dict(),
            "verdict": self.verdict,
            "reason": self.reason,
            "max_width_factor": self.max_width_factor,
        }
