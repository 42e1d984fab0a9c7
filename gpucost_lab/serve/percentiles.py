"""Latency percentiles to trust (chapter 08, "Profile the service"): p50, p90 and p99 with distribution-free 95%
intervals, "inconclusive" when too few requests were seen for the tail, and MLPerf LoadGen's early-stopping rule.

**The value.** The q-quantile of n latencies is the value at 0-based rank ``floor(n x q)`` of the sorted latencies,
LoadGen's own convention (MLCommons inference, ``loadgen/results.cc``, ``PerformanceSummary::ProcessLatencies``:
``sample_latencies[sample_count * percentile]``), so a figure here and LoadGen's in the same run pick the same order
statistic: of 100 latencies the p99 is the largest, of 20 the median is the 11th smallest.

**The interval.** Order statistics bound a quantile whatever the distribution: the number K of latencies below the
true q-quantile is binomial(n, q), so ``P(X(l) <= x_q <= X(u)) = P(l <= K <= u - 1)`` (1-based ranks l < u). The
interval is the equal-tailed one of W. J. Conover, *Practical Nonparametric Statistics*, 3rd ed. (Wiley, 1999),
section 3.2, "confidence interval for a quantile": l is the largest rank with ``P(K <= l - 1) <= 0.025`` and u the
smallest with ``P(K <= u - 1) >= 0.975``, so each tail misses at most 2.5% and the coverage is at least 95%. For 20
latencies the median's interval is ``[X(6), X(15)]`` (coverage 0.9586). When no rank of the sample is low (high)
enough, that end is unbounded: ``ci95_low`` is 0 (no latency is negative) or ``ci95_high`` is infinite, and the
verdict is "inconclusive": too few requests were seen for that quantile. Both ends exist from
``ceil(log(0.025) / log(max(q, 1 - q)))`` latencies on: 6 for the median, 36 for p90, 368 for p99.

**Early stopping.** LoadGen asks the same question one-sided at 99%: a Server run meets its p99 bound only if, with t
of its queries over the bound, it issued at least h + t queries, h the smallest count with
``P(binomial(h + t, 1 - q) <= t) < 1 - 0.99`` (``loadgen/early_stopping.cc``, ``MinPassingQueriesFinder``; used in
``results.cc``, ``PerformanceSummary::EarlyStopping``). For p99 and t = 0 that is 459 queries (0.99^459 < 0.01), the
"would need at least N more queries" LoadGen prints. The binomial sums here are computed from log-gamma terms with no
statistics library, so a test can check them against scipy.

Latencies are counted from each request's *scheduled* send time (``loadgen.py`` and ``closed_loop.py`` say exactly
from when): a client that waits for a stalled server before it sends, and starts its clock only then, never sees
the stall (coordinated omission).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np

from gpucost_lab._validate import InputError, fraction, integer_at_least, positive
from gpucost_lab.stats import CONFIDENCE

DEFAULT_QUANTILES = (0.5, 0.9, 0.99)
#: LoadGen's early-stopping confidence (``results.cc``: ``confidence = 0.99``, ``tolerance = 0.0``).
EARLY_STOPPING_CONFIDENCE = 0.99
# The most latencies one call takes: a minute of a course run at the client's highest rate is about 10^5 requests;
# 10^7 leaves room for a long recorded run and keeps the binomial table (8 bytes a rank) under 100 MB.
MAX_LATENCIES = 10_000_000
# The most queries an early-stopping search considers: LoadGen's own runs reach about 3 x 10^5 (270,336 for a
# Server p99); a percentile so close to 1 that its minimum passes 10^12 queries is no figure a run can meet.
MAX_EARLY_STOPPING_QUERIES = 10**12


@dataclass(frozen=True)
class Percentile:
    """One quantile of a sample of latencies: its value, its 95% interval and whether the sample bounds it.

    ``rank``, ``low_rank`` and ``high_rank`` are 1-based ranks in the sorted sample; ``low_rank`` is None when the
    lower end is unbounded (``ci95_low`` = 0.0) and ``high_rank`` is None when the upper end is (``ci95_high`` =
    inf). ``coverage`` is the binomial probability that the stated interval holds the true quantile.
    """

    quantile: float
    value: float
    ci95_low: float
    ci95_high: float
    rank: int
    low_rank: int | None
    high_rank: int | None
    coverage: float
    count: int
    verdict: str  # "bounded" or "inconclusive"

    @property
    def name(self) -> str:
        """``p50``, ``p90``, ``p99``, ``p99.9``."""
        return quantile_name(self.quantile)

    @property
    def inconclusive(self) -> bool:
        return self.verdict == "inconclusive"

    def to_dict(self) -> dict:
        """``{value, ci95_low, ci95_high}`` as JSON takes it (an unbounded end is None), with the verdict."""
        high = None if math.isinf(self.ci95_high) else self.ci95_high
        low = None if self.low_rank is None else self.ci95_low
        return {"value": self.value, "ci95_low": low, "ci95_high": high, "verdict": self.verdict}


def quantile_name(quantile: float) -> str:
    """``0.5`` -> ``p50``, ``0.999`` -> ``p99.9``."""
    return "p" + f"{quantile * 100:.4f}".rstrip("0").rstrip(".")


def _latencies(name: str, values: Iterable[float]) -> np.ndarray:
    """``values`` as a sorted float array, refused when empty, too long, or holding anything but finite numbers >= 0."""
    if isinstance(values, (str, bytes)):
        raise InputError(name, f"{name} must be numbers of milliseconds, got {values!r}")
    try:
        items = list(values)
    except TypeError:
        raise InputError(name, f"{name} must be an iterable of milliseconds, got {values!r}") from None
    if not items:
        raise InputError(name, f"{name} must hold at least one latency, got none")
    if len(items) > MAX_LATENCIES:
        raise InputError(name, f"{name} must hold at most {MAX_LATENCIES} latencies, got {len(items)}")
    for i, v in enumerate(items):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, Real) or not math.isfinite(v) or v < 0:
            raise InputError(f"{name}[{i}]", f"{name}[{i}] must be a finite number of milliseconds >= 0, got {v!r}")
    return np.sort(np.asarray(items, dtype=float))


def binomial_cdf(n: int, prob: float) -> np.ndarray:
    """``P(K <= k)`` for k = 0..n, K binomial(n, prob), 0 < prob < 1: the probabilities summed in log space (the
    log-pmf by the ratio ``C(n, k + 1) / C(n, k) = (n - k) / (k + 1)``), so no term underflows before it is scaled."""
    k = np.arange(n, dtype=float)
    steps = np.log(n - k) - np.log(k + 1.0) + (math.log(prob) - math.log1p(-prob))
    log_pmf = np.concatenate(([n * math.log1p(-prob)], n * math.log1p(-prob) + np.cumsum(steps)))
    pmf = np.exp(log_pmf - log_pmf.max())
    cdf = np.cumsum(pmf)
    return np.minimum(cdf / cdf[-1], 1.0)


def interval_ranks(count: int, quantile: float, confidence: float = CONFIDENCE) -> tuple[int | None, int | None, float]:
    """The 1-based ranks ``(l, u)`` of the equal-tailed interval for the ``quantile`` of ``count`` values, and the
    interval's coverage ``P(l <= K <= u - 1)``; an end beyond the sample is None (and covers its whole tail)."""
    count = integer_at_least("count", count, 1, MAX_LATENCIES)
    quantile = fraction("quantile", quantile, include_zero=False)
    confidence = fraction("confidence", confidence, include_zero=False)
    tail = (1.0 - confidence) / 2.0
    cdf = binomial_cdf(count, quantile)
    # l - 1 = the largest k with P(K <= k) <= tail; none when P(K <= 0) already exceeds it
    below = int(np.searchsorted(cdf, tail, side="right"))  # how many k have cdf[k] <= tail
    low_rank = below if below >= 1 else None
    # u - 1 = the smallest k with P(K <= k) >= 1 - tail; beyond the sample when only k = n reaches it
    up = int(np.searchsorted(cdf, 1.0 - tail, side="left"))
    high_rank = up + 1 if up + 1 <= count else None
    low_mass = float(cdf[low_rank - 1]) if low_rank is not None else 0.0
    high_mass = float(cdf[high_rank - 1]) if high_rank is not None else 1.0
    return low_rank, high_rank, high_mass - low_mass


def min_count_for_interval(quantile: float, confidence: float = CONFIDENCE) -> int:
    """The fewest values for which both ends of the ``quantile``'s interval are ranks of the sample:
    ``max(q, 1 - q)^n <= (1 - confidence) / 2``. 6 for the median, 36 for p90, 368 for p99."""
    quantile = fraction("quantile", quantile, include_zero=False)
    confidence = fraction("confidence", confidence, include_zero=False)
    n = math.ceil(math.log((1.0 - confidence) / 2.0) / math.log(max(quantile, 1.0 - quantile)))
    while max(quantile, 1.0 - quantile) ** n > (1.0 - confidence) / 2.0:  # the float log rounded down
        n += 1
    return max(n, 1)


def value_rank(count: int, quantile: float) -> int:
    """LoadGen's order statistic for a quantile, 1-based: ``floor(count x quantile) + 1`` in float arithmetic, as
    ``results.cc`` indexes ``sample_latencies[sample_count * percentile]``."""
    return int(count * quantile) + 1


def percentile_of(latencies_ms: Iterable[float], quantile: float, confidence: float = CONFIDENCE) -> Percentile:
    """One quantile of ``latencies_ms`` with its interval (see the module docstring)."""
    quantile = fraction("quantile", quantile, include_zero=False)
    return _percentile(_latencies("latencies_ms", latencies_ms), quantile, confidence)


def _percentile(ordered: np.ndarray, quantile: float, confidence: float) -> Percentile:
    n = int(ordered.size)
    rank = value_rank(n, quantile)
    low_rank, high_rank, coverage = interval_ranks(n, quantile, confidence)
    return Percentile(
        quantile=quantile,
        value=float(ordered[rank - 1]),
        ci95_low=float(ordered[low_rank - 1]) if low_rank is not None else 0.0,
        ci95_high=float(ordered[high_rank - 1]) if high_rank is not None else math.inf,
        rank=rank,
        low_rank=low_rank,
        high_rank=high_rank,
        coverage=coverage,
        count=n,
        verdict="bounded" if low_rank is not None and high_rank is not None else "inconclusive",
    )


def latency_percentiles(
    latencies_ms: Iterable[float], quantiles: Sequence[float] = DEFAULT_QUANTILES, confidence: float = CONFIDENCE
) -> dict[str, Percentile]:
    """``{"p50": Percentile, "p90": ..., "p99": ...}`` for ``latencies_ms`` (each request's latency counted from
    its scheduled send time), in the order of ``quantiles``; a quantile whose interval the sample cannot bound says
    "inconclusive"."""
    ordered = _latencies("latencies_ms", latencies_ms)
    if isinstance(quantiles, (str, bytes)) or not isinstance(quantiles, Sequence) or not quantiles:
        raise InputError("quantiles", f"quantiles must be a non-empty sequence of numbers in (0, 1), got {quantiles!r}")
    checked = [fraction(f"quantiles[{i}]", q, include_zero=False) for i, q in enumerate(quantiles)]
    names = [quantile_name(q) for q in checked]
    if len(set(names)) != len(names):
        raise InputError("quantiles", f"quantiles must not repeat, got {list(quantiles)!r}")
    confidence = fraction("confidence", confidence, include_zero=False)
    return {name: _percentile(ordered, q, confidence) for name, q in zip(names, checked)}


def _log_binomial_cdf_at(k: int, n: int, prob: float) -> float:
    """``log P(K <= k)`` for K binomial(n, prob): the k + 1 terms' logs (``log C(n, x)`` by the ratio
    ``(n - x) / (x + 1)``) summed in log space, so no term underflows however large n is."""
    x = np.arange(k, dtype=float)
    log_choose = np.concatenate(([0.0], np.cumsum(np.log(n - x) - np.log(x + 1.0))))
    terms = log_choose + np.arange(k + 1) * math.log(prob) + (n - np.arange(k + 1)) * math.log1p(-prob)
    top = float(terms.max())
    return top + math.log(float(np.exp(terms - top).sum()))


def early_stopping_min_queries(
    percentile: float, overlatency_count: int = 0, confidence: float = EARLY_STOPPING_CONFIDENCE
) -> int:
    """LoadGen's early-stopping minimum: the fewest queries h + t a run with ``overlatency_count`` (t) queries over
    its latency bound must have issued for its ``percentile`` to count as within the bound, h the smallest count of
    queries under the bound with ``P(binomial(h + t, 1 - percentile) <= t) < 1 - confidence``.

    p99: 459 with t = 0, 662 with t = 1 (a SingleStream run's minimum, which LoadGen states as t = 1); p90: 44 and 64.
    """
    percentile = fraction("percentile", percentile, include_zero=False)
    t = integer_at_least("overlatency_count", overlatency_count, 0, MAX_LATENCIES)  # a count of latencies
    confidence = fraction("confidence", confidence, include_zero=False)
    threshold = math.log(1.0 - confidence)

    def passes(h: int) -> bool:
        return _log_binomial_cdf_at(t, h + t, 1.0 - percentile) < threshold

    # P(...) falls as h grows. The answer lies above t x q / (1 - q) (the count at which the overlatency share is
    # exactly 1 - q, LoadGen's own lower bound): step up from there by doubling steps, then bisect.
    low = max(1, int(t * percentile / (1.0 - percentile)))
    if passes(low):
        low = 1
    step = max(1, math.ceil(threshold / math.log(percentile)))  # h for t = 0
    high = low + step
    while high + t <= MAX_EARLY_STOPPING_QUERIES and not passes(high):
        low, step = high + 1, 2 * step
        high = low + step
    if high + t > MAX_EARLY_STOPPING_QUERIES:
        raise InputError(
            "percentile",
            f"percentile must leave early stopping within {MAX_EARLY_STOPPING_QUERIES:.0e} queries, got "
            f"{percentile!r} (with {t} over the bound)",
        )
    while low < high:
        mid = (low + high) // 2
        if passes(mid):
            high = mid
        else:
            low = mid + 1
    return high + t


@dataclass(frozen=True)
class EarlyStopping:
    """LoadGen's Server-scenario early-stopping verdict computed from our latencies (``early_stopping``)."""

    met: bool
    queries: int
    overlatency_count: int  # latencies above the bound
    queries_needed: int  # early_stopping_min_queries(percentile, overlatency_count)
    percentile: float
    slo_ms: float

    @property
    def more_needed(self) -> int:
        """How many more queries, all under the bound, would meet it (0 once met)."""
        return max(0, self.queries_needed - self.queries)

    @property
    def sentence(self) -> str:
        name = quantile_name(self.percentile)
        over = f"{self.overlatency_count} of {self.queries} queries over {self.slo_ms:g} ms"
        if self.met:
            return f"early stopping met for {name}: {over}, at least {self.queries_needed} needed"
        return f"early stopping not met for {name}: {over}; would need at least {self.more_needed} more queries"


def early_stopping(
    latencies_ms: Iterable[float],
    slo_ms: float,
    percentile: float = 0.99,
    confidence: float = EARLY_STOPPING_CONFIDENCE,
) -> EarlyStopping:
    """LoadGen's Server rule on ``latencies_ms``: t = the latencies above ``slo_ms`` (strictly, as LoadGen counts),
    met when at least ``early_stopping_min_queries(percentile, t)`` queries were seen."""
    ordered = _latencies("latencies_ms", latencies_ms)
    slo = positive("slo_ms", slo_ms)
    t = int(ordered.size - np.searchsorted(ordered, slo, side="right"))
    needed = early_stopping_min_queries(percentile, t, confidence)
    return EarlyStopping(
        met=ordered.size >= needed,
        queries=int(ordered.size),
        overlatency_count=t,
        queries_needed=needed,
        percentile=float(percentile),
        slo_ms=slo,
    )


def early_stopping_rank(count: int, percentile: float, confidence: float = EARLY_STOPPING_CONFIDENCE) -> int | None:
    """LoadGen's SingleStream early-stopping estimate, as a rank from the top: the estimate of ``percentile`` from
    ``count`` latencies is the t-th largest, t the largest with ``count >= early_stopping_min_queries(percentile,
    t)`` (LoadGen prints "Would discard t - 1 highest latency queries"); None below the minimum for t = 1."""
    count = integer_at_least("count", count, 1, MAX_LATENCIES)
    if count < early_stopping_min_queries(percentile, 1, confidence):
        return None
    low, high = 1, count  # the minimum grows with t: bisect for the largest t that count still meets
    while low < high:
        mid = (low + high + 1) // 2
        if count >= early_stopping_min_queries(percentile, mid, confidence):
            low = mid
        else:
            high = mid - 1
    return low


def early_stopping_estimate_ms(
    latencies_ms: Iterable[float], percentile: float, confidence: float = EARLY_STOPPING_CONFIDENCE
) -> float | None:
    """The SingleStream early-stopping estimate of ``percentile`` (``early_stopping_rank``): an upper bound at
    ``confidence`` that LoadGen reports beside the plain percentile; None when too few latencies were seen."""
    ordered = _latencies("latencies_ms", latencies_ms)
    t = early_stopping_rank(int(ordered.size), percentile, confidence)
    return None if t is None else float(ordered[ordered.size - t])
