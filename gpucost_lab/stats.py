"""Statistics across repeats (chapter 03): a mean with its Student-t 95% confidence interval.

Raw values are kept; mean, spread and interval are derived from them, so every figure can be
recomputed by hand from the per-repeat numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from scipy import stats


@dataclass(frozen=True)
class Estimate:
    """A quantity measured once per repeat: the values, their mean and a 95% interval for the mean."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.values) < 2:
            raise ValueError(f"values must hold at least 2 repeats to give an interval, got {len(self.values)}")
        if not all(math.isfinite(v) for v in self.values):
            raise ValueError(f"values must all be finite, got {self.values!r}")

    @classmethod
    def of(cls, values: Iterable[float]) -> "Estimate":
        return cls(tuple(float(v) for v in values))

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return math.fsum(self.values) / self.n

    @property
    def std(self) -> float:
        """Sample standard deviation (n - 1 in the denominator)."""
        m = self.mean
        return math.sqrt(math.fsum((v - m) ** 2 for v in self.values) / (self.n - 1))

    @property
    def half_width(self) -> float:
        """Half the 95% interval: t(0.975, n - 1) x std / sqrt(n)."""
        return float(stats.t.ppf(0.975, self.n - 1)) * self.std / math.sqrt(self.n)

    @property
    def ci95_low(self) -> float:
        return self.mean - self.half_width

    @property
    def ci95_high(self) -> float:
        return self.mean + self.half_width

    @property
    def relative_half_width(self) -> float:
        """Half-width over the mean: how precisely the repeats pin the mean down."""
        return self.half_width / abs(self.mean) if self.mean else math.inf

    def to_dict(self) -> dict:
        """``{mean, ci95_low, ci95_high}``, the shape every CLI figure with uncertainty takes."""
        return {"mean": self.mean, "ci95_low": self.ci95_low, "ci95_high": self.ci95_high}
