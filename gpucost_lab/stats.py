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

from gpucost_lab._validate import InputError

#: The confidence of every interval the course prints (a sequential comparison's is simultaneous over its looks).
CONFIDENCE = 0.95


def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student-t quantile t((1 + confidence) / 2, df); the normal one for infinite df."""
    if not 0 < confidence < 1:
        raise InputError("confidence", f"confidence must be in (0, 1), got {confidence!r}")
    from scipy import stats  # here, not at import: scipy.stats takes half a second to import

    return float(stats.norm.ppf((1 + confidence) / 2) if math.isinf(df) else stats.t.ppf((1 + confidence) / 2, df))


def t_quantile_95(df: float) -> float:
    """Two-sided 95% Student-t quantile t(0.975, df); the normal 1.96 for infinite df."""
    if math.isinf(df):
        return 1.959963984540054
    return t_quantile(df, 0.95)


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

    def interval_at(self, confidence: float) -> Interval:
        """The interval at another confidence (a sequential comparison's look, :func:`look_confidence`)."""
        return combine((self, 1), confidence=confidence)

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


def combine(*factors: tuple[Estimate | float, int], confidence: float = CONFIDENCE) -> Interval:
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
    df = variance**2 / df_denominator
    half = (t_quantile_95(df) if confidence == 0.95 else t_quantile(df, confidence)) * math.sqrt(variance)
    return Interval(ratio, ratio * math.exp(-half), ratio * math.exp(half))


def ratio_interval(candidate: Estimate, baseline: Estimate) -> Interval:
    """Ratio of two independent estimates, candidate / baseline, with its 95% interval (:func:`combine`)."""
    for name, e in (("candidate", candidate), ("baseline", baseline)):
        if not isinstance(e, Estimate):
            raise InputError(name, f"{name} must be an Estimate, got {type(e).__name__}")
    return combine((candidate, 1), (baseline, -1))


#: A change within 5% either way is "the same": the course acts on changes of 10-50% in cost, and a rerun of the same
#: comparison on another day moves by a few percent (quiet-machine intervals in benchmarks/RESULTS.md span 2-15%).
EQUIVALENCE_MARGIN = 0.05


def decide(interval: Interval, lower: str, higher: str, margin: float = EQUIVALENCE_MARGIN) -> str:
    """The course's one decision rule, from where the interval of a ratio lies, never from how wide it is.

    ``lower`` when all of it is below 1, ``higher`` when all of it is above 1, "same" when all of it lies within
    ``margin`` of 1 (between 1 / (1 + margin) and 1 + margin, a margin symmetric on the log scale), "inconclusive"
    otherwise. An interval far from 1 decides the direction however wide it is: its width is the precision of the
    size, reported beside the verdict.
    """
    _, low, high = interval
    if high < 1.0:
        return lower
    if low > 1.0:
        return higher
    if 1.0 / (1.0 + margin) <= low and high <= 1.0 + margin:
        return "same"
    return "inconclusive"


def ratio_texts(*ratios: float) -> list[str]:
    """Ratios as the course prints them, with one number of decimals: 3, or enough for the smallest to show 2
    significant digits (0.016x, 95% interval 0.011-0.024; 0.0016x, 0.0011-0.0024)."""
    smallest = min((r for r in ratios if r > 0), default=1.0)
    decimals = min(8, max(3, 1 - math.floor(math.log10(smallest))))
    return [f"{r:.{decimals}f}" for r in ratios]


@dataclass(frozen=True)
class RatioVerdict:
    """A candidate / baseline ratio with its interval, and what the decision rule (:func:`decide`) allows one to
    say: ``lower`` and ``higher`` name the two directions ("faster"/"slower" for step time, "cheaper"/"more
    expensive" for cost), beside "same" and "inconclusive". ``confidence`` is the interval's (0.95; lower per look
    in a sequential comparison, whose interval is then simultaneous over its ``looks``)."""

    interval: Interval
    subject: str = "cost to target"  # what the ratio measures, e.g. "step time"
    lower: str = "cheaper"  # the verdict when the whole interval is below 1
    higher: str = "more expensive"  # the verdict when the whole interval is above 1
    margin: float = EQUIVALENCE_MARGIN
    looks: int = 1  # how often the data were looked at (a sequential comparison), for the reason's wording

    @property
    def ratio(self) -> float:
        return self.interval.value

    @property
    def verdict(self) -> str:
        return decide(self.interval, self.lower, self.higher, self.margin)

    @property
    def reason(self) -> str:
        """The verdict in a sentence: the ratio, its interval (the precision of the size) and why."""
        r, low, high = self.interval
        kind = "95% interval" if self.looks <= 1 else f"95% interval, simultaneous over {self.looks} looks"
        r_text, low_text, high_text = ratio_texts(r, low, high)
        said = f"{self.subject} {r_text}x ({kind} {low_text}-{high_text})"
        word, band = self.verdict, f"{1 / (1 + self.margin):.3f}-{1 + self.margin:.3f}"
        if word == "same":
            return f"{said}: the same within +-{self.margin:.0%} (the whole interval lies in {band})"
        if word == "inconclusive":
            return (
                f"{said}: inconclusive, the interval holds 1 and reaches past the +-{self.margin:.0%} margin ({band})"
            )
        return f"{said}: {word}, the whole interval lies {'below' if word == self.lower else 'above'} 1"

    def to_dict(self) -> dict:
        return {
            **self.interval.to_dict(),
            "verdict": self.verdict,
            "reason": self.reason,
            "equivalence_margin": self.margin,
        }


def look_confidence(look: int, confidence: float = CONFIDENCE) -> float:
    """The confidence of the interval at the ``look``-th look (1-based) of a sequential comparison.

    Alpha spending with a union-bound boundary: look k spends alpha_k = alpha x 6 / (pi^2 k^2), so the alphas of
    any number of looks add up to at most alpha (the sum of 1/k^2 is pi^2 / 6). By the union (Bonferroni) bound the
    probability that any look's interval misses the true ratio is then at most alpha = 1 - confidence, whatever the
    correlation between looks: an A/A comparison is called faster or slower at most 5% of the time however many
    looks it takes. It is conservative (Lan and DeMets' spending functions, Biometrika 70(3), 1983, use the looks'
    correlation to spend less; this rule needs none of their distribution theory).
    """
    if not (isinstance(look, int) and look >= 1):
        raise InputError("look", f"look must be a whole number >= 1, got {look!r}")
    return 1.0 - (1.0 - confidence) * 6.0 / (math.pi**2 * look**2)


def rounds_to_decide(log_sd: float, log_ratio: float, margin: float = EQUIVALENCE_MARGIN) -> int | None:
    """About how many paired samples a 95% interval needs to be decided at this spread (``log_sd``, the sample
    standard deviation of the log ratios; for two independent sides of n samples each, sqrt(sd_a^2 + sd_b^2)) and
    this observed ratio: enough to exclude 1 (half-width below
    |log ratio|) or to fit within the margin (half-width below log(1 + margin) - |log ratio|), whichever is fewer.
    None where the spread is 0 (nothing more to learn). A normal approximation: a guide, not a promise."""
    if not log_sd > 0:
        return None
    room = max(abs(log_ratio), math.log1p(margin) - abs(log_ratio))
    return max(2, math.ceil((1.959963984540054 * log_sd / room) ** 2)) if room > 0 else None
