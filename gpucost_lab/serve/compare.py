"""Two services compared under one arrival pattern (chapter 08, "Profile the service").

:func:`compare_services` runs ONE MLPerf LoadGen Server run (Poisson arrivals at ``qps``) and sends its requests to
the two services interleaved by request order: in blocks of four, each block ABBA (baseline, candidate, candidate,
baseline) or BAAB, the order of each block drawn at random from ``seed`` (:func:`block_sides`), as
``measure.compare.compare_steps`` interleaves two steps. Both sides therefore see the same arrival process and the
same moments of load on the machine (another program's burst, the client's own garbage collection), each gets half
of the requests (two of every block), and a drift over the run falls on both alike. Within a side, its instances are
taken in turn. Latencies are LoadGen's run's own: from each request's *scheduled* send time (``loadgen.py``).

**The ratio and its interval** (:func:`ratio_of_quantiles`). For a quantile q (the median, the p99) the ratio is the
candidate's q-latency over the baseline's, each the order statistic LoadGen's convention picks
(``percentiles.value_rank``). Each side's quantile gets a distribution-free order-statistic interval at 97.5%
(``percentiles.interval_ranks`` with confidence 0.975: each side misses its true quantile with probability at most
2.5%). When both intervals hold their true quantiles, the true ratio lies in ``[cand_low / base_high, cand_high /
base_low]``; by the union (Bonferroni) bound, the probability that either misses is at most 2.5% + 2.5% = 5%, so that
ratio interval covers with at least 95%, whatever the two distributions and however the sides are correlated. An end
a side cannot bound (too few requests for the tail: ``percentiles.min_count_for_interval`` says how many a bounded
97.5% interval needs) is 0 or infinite, and so is the ratio's end it enters: with both sides short of the tail the
interval is (0, inf) and the verdict "inconclusive". The verdict is the course's one rule (``stats.decide``):
"faster" when the whole interval lies below 1, "slower" above, "same" within 5%, else "inconclusive".
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from gpucost_lab._validate import InputError, integer_at_least, non_empty_text
from gpucost_lab.serve.client import infer
from gpucost_lab.serve.instances import Service
from gpucost_lab.serve.loadgen import MAX_SEED, LoadGenError, LoadGenRun, check_run, run_loadgen
from gpucost_lab.serve.percentiles import min_count_for_interval, percentile_of, quantile_name
from gpucost_lab.stats import CONFIDENCE, Interval, RatioVerdict

BLOCK_ORDERS = ("ABBA", "BAAB")
_BLOCK_SIDES = {"ABBA": (0, 1, 1, 0), "BAAB": (1, 0, 0, 1)}  # 0: the baseline, 1: the candidate
BLOCK_REQUESTS = 4  # requests in one block, two a side
# Each side's interval: the ratio's 95% is the union bound over the two sides, 2.5% each.
SIDE_CONFIDENCE = 1.0 - (1.0 - CONFIDENCE) / 2.0
COMPARED_QUANTILES = (0.5, 0.99)
# The fewest queries a run issues whatever its duration: 8 a side is more than a bounded 97.5% interval of a median
# needs (7: 0.5^7 <= 0.0125 < 0.5^6); the tail's needs more than a course run sends (436 a side for p99), which the
# text then says.
DEFAULT_MIN_QUERIES = 16
# Requests to each instance before the run (not counted): torch's first calls in a fresh server and the first
# connection are slower than the service's latency (as the serve-bench command warms up).
WARM_UP_REQUESTS = 5
MAX_WARM_UP_REQUESTS = 100  # a few dozen warm any instance; more only delays the run
MAX_BLOCKS = 10**7  # 4 x 10^7 requests: far beyond any run LoadGen issues (loadgen.MAX_SCHEDULED_QUERIES)


def block_sides(count: int, seed: int = 0) -> tuple[int, ...]:
    """The side (0 the baseline, 1 the candidate) of each of the first ``count`` requests: blocks of four, each ABBA
    or BAAB as ``random.Random(seed).choice`` draws them block by block."""
    count = integer_at_least("count", count, 1, MAX_BLOCKS * BLOCK_REQUESTS)
    seed = integer_at_least("seed", seed, 0, MAX_SEED)
    rng = random.Random(seed)
    blocks = math.ceil(count / BLOCK_REQUESTS)
    sides = [side for _ in range(blocks) for side in _BLOCK_SIDES[rng.choice(BLOCK_ORDERS)]]
    return tuple(sides[:count])


class _BlockRoute:
    """LoadGen's route for an interleaved run: a request's order to the URL index of its side's next instance, the
    block orders drawn as :func:`block_sides` draws them (extended as the run goes, from any pool thread)."""

    def __init__(self, seed: int, instances: tuple[int, int]) -> None:
        self._rng = random.Random(seed)
        self._orders: list[str] = []
        self._lock = threading.Lock()
        self._instances = instances
        self._offsets = (0, instances[0])  # the baseline's URLs first, then the candidate's

    def _pattern(self, block: int) -> tuple[int, ...]:
        with self._lock:
            while len(self._orders) <= block:
                self._orders.append(self._rng.choice(BLOCK_ORDERS))
            return _BLOCK_SIDES[self._orders[block]]

    def __call__(self, order: int) -> int:
        block, place = divmod(order, BLOCK_REQUESTS)
        pattern = self._pattern(block)
        side = pattern[place]
        side_request = 2 * block + pattern[:place].count(side)  # the side's own count, 0-based: its instances in turn
        return self._offsets[side] + side_request % self._instances[side]


def _positive_latencies(name: str, values: Sequence[float]) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise InputError(name, f"{name} must be a non-empty list of latencies in milliseconds, got {values!r}")
    checked = list(values)
    for i, v in enumerate(checked):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise InputError(f"{name}[{i}]", f"{name}[{i}] must be a finite latency > 0 milliseconds, got {v!r}")
    return [float(v) for v in checked]


def ratio_of_quantiles(
    baseline_ms: Sequence[float], candidate_ms: Sequence[float], quantile: float, confidence: float = CONFIDENCE
) -> Interval:
    """The candidate's ``quantile`` latency over the baseline's, with the interval ``[cand_low / base_high,
    cand_high / base_low]`` of each side's order-statistic interval at ``1 - (1 - confidence) / 2``: it covers the
    true ratio with at least ``confidence`` by the union bound (module docstring). An end a side cannot bound makes
    the ratio's low end 0 or its high end infinite. Latencies must be > 0 (a ratio needs them)."""
    base = _positive_latencies("baseline_ms", baseline_ms)
    cand = _positive_latencies("candidate_ms", candidate_ms)
    side_confidence = 1.0 - (1.0 - confidence) / 2.0
    b = percentile_of(base, quantile, side_confidence)
    c = percentile_of(cand, quantile, side_confidence)
    low = c.ci95_low / b.ci95_high if c.low_rank is not None and b.high_rank is not None else 0.0
    high = c.ci95_high / b.ci95_low if c.high_rank is not None and b.low_rank is not None else math.inf
    return Interval(c.value / b.value, low, high)


def _verdict(baseline_ms: Sequence[float], candidate_ms: Sequence[float], quantile: float) -> RatioVerdict:
    interval = ratio_of_quantiles(baseline_ms, candidate_ms, quantile)
    return RatioVerdict(interval, subject=f"{quantile_name(quantile)} latency", lower="faster", higher="slower")


@dataclass(frozen=True)
class ServiceComparison:
    """One interleaved comparison (module docstring): each side's latencies from their scheduled send times, the
    candidate / baseline ratios of their p50 and p99 with the verdicts, and the LoadGen run itself."""

    baseline_label: str
    candidate_label: str
    qps: float
    duration_s: float
    seed: int
    baseline_ms: tuple[float, ...]
    candidate_ms: tuple[float, ...]
    p50: RatioVerdict
    p99: RatioVerdict
    run: LoadGenRun

    def _verdicts(self) -> dict[str, RatioVerdict]:
        return {"p50": self.p50, "p99": self.p99}

    def table(self) -> pd.DataFrame:
        """One row per quantile (index ``p50``, ``p99``): each side's value in ms, the ratio, its 95% interval and
        the verdict."""
        rows = []
        for verdict, quantile in zip(self._verdicts().values(), COMPARED_QUANTILES):
            rows.append(
                {
                    "baseline_ms": percentile_of(self.baseline_ms, quantile).value,
                    "candidate_ms": percentile_of(self.candidate_ms, quantile).value,
                    "ratio": verdict.ratio,
                    "ci95_low": verdict.interval.ci95_low,
                    "ci95_high": verdict.interval.ci95_high,
                    "verdict": verdict.verdict,
                }
            )
        return pd.DataFrame(rows, index=pd.Index(list(self._verdicts()), name="quantile"))

    def text(self) -> str:
        """Two lines, the p50's and the p99's verdict in a sentence (``RatioVerdict.reason``), each saying, where a
        side had too few requests to bound its quantile, how many a bounded interval needs."""
        lines = []
        counts = (len(self.baseline_ms), len(self.candidate_ms))
        for (name, verdict), quantile in zip(self._verdicts().items(), COMPARED_QUANTILES):
            line = f"{self.candidate_label} against {self.baseline_label}, {verdict.reason}"
            needed = min_count_for_interval(quantile, SIDE_CONFIDENCE)
            if min(counts) < needed:
                line += (
                    f"; too few requests to bound the {name} ({counts[0]} and {counts[1]} a side): a bounded "
                    f"{SIDE_CONFIDENCE:.1%} interval of each side's {name} needs at least {needed} requests a side"
                )
            lines.append(line)
        return "\n".join(lines)


def _check_services(baseline: object, candidate: object, labels: object) -> tuple[str, str]:
    for name, service in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(service, Service):
            raise InputError(name, f"{name} must be a Service (serve_instances, serve_many), got {service!r}")
    assert isinstance(baseline, Service) and isinstance(candidate, Service)
    if baseline.config.input_width != candidate.config.input_width:
        raise InputError(
            "candidate",
            f"candidate must take the baseline's inputs: input_width {candidate.config.input_width} against "
            f"{baseline.config.input_width} (one arrival pattern sends the same requests to both)",
        )
    if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence) or len(labels) != 2:
        raise InputError("labels", f"labels must be two names (baseline, candidate), got {labels!r}")
    first, second = (non_empty_text(f"labels[{i}]", label) for i, label in enumerate(labels))
    return first, second


def _warm_up(services: Sequence[Service], requests: int) -> None:
    """``requests`` to each instance, then every phase record cleared: the services' phases hold the run alone."""
    for service in services:
        row = [0.0] * service.config.input_width
        for url in service.urls:
            for _ in range(requests):
                infer(url, [row])
    for service in services:
        service.clear_phases()


def compare_services(
    baseline: Service,
    candidate: Service,
    *,
    qps: float,
    duration_s: float,
    slo_ms: float = 200.0,
    seed: int = 0,
    labels: tuple[str, str] = ("baseline", "candidate"),
    min_queries: int = DEFAULT_MIN_QUERIES,
    warm_up: int = WARM_UP_REQUESTS,
) -> ServiceComparison:
    """``baseline`` against ``candidate`` under one LoadGen Server run at ``qps`` for about ``duration_s`` seconds
    (at least ``min_queries`` queries), its requests interleaved between them in seeded ABBA/BAAB blocks (module
    docstring); the p50 and p99 ratios with their 95% intervals and verdicts. ``slo_ms`` is LoadGen's latency bound
    (its early-stopping figures, in ``run``). First ``warm_up`` requests go to each instance and every phase record
    is cleared, so each service's ``phases()`` afterwards holds the run's requests alone.

    Raises InputError for a bad argument (two services whose models take different inputs included) and
    LoadGenError when a side got no answer at all; requests that failed otherwise are counted in ``run.errors``.
    """
    names = _check_services(baseline, candidate, labels)
    check_run("server", qps, slo_ms, 0.99, duration_s, min_queries, 1, seed)
    warm_up = integer_at_least("warm_up", warm_up, 0, MAX_WARM_UP_REQUESTS)
    _warm_up((baseline, candidate), warm_up)
    run = run_loadgen(
        (*baseline.urls, *candidate.urls),
        "server",
        qps=qps,
        slo_ms=slo_ms,
        duration_s=duration_s,
        min_queries=min_queries,
        input_width=baseline.config.input_width,
        seed=seed,
        route=_BlockRoute(seed, (len(baseline.urls), len(candidate.urls))),
    )
    sides: tuple[list[float], list[float]] = ([], [])
    for latency_ms, index in zip(run.latencies_ms, run.served_by):
        sides[0 if index < len(baseline.urls) else 1].append(latency_ms)
    for label, side in zip(names, sides):
        if not side:
            raise LoadGenError(
                f"no request to {label} was answered ({run.errors} failed; the first: {run.first_error})"
            )
    return ServiceComparison(
        baseline_label=names[0],
        candidate_label=names[1],
        qps=float(qps),
        duration_s=float(duration_s),
        seed=int(seed),
        baseline_ms=tuple(sides[0]),
        candidate_ms=tuple(sides[1]),
        p50=_verdict(sides[0], sides[1], 0.5),
        p99=_verdict(sides[0], sides[1], 0.99),
        run=run,
    )
