"""compare_services and its pieces: the ratio interval of two quantiles by hand (order statistics picked, ranks from
scipy's binomial), its symmetries as properties, the ABBA/BAAB routing, and bad input refused before any request. A
real interleaved run against two servers is tests/serve/test_compare_runs.py.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom

from gpucost_lab._validate import InputError
from gpucost_lab.serve.compare import (
    SIDE_CONFIDENCE,
    ServiceComparison,
    _BlockRoute,
    _verdict,
    block_sides,
    compare_services,
    ratio_of_quantiles,
)
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.instances import Service

latencies = st.lists(st.floats(0.01, 1e4, allow_nan=False), min_size=1, max_size=300)


def _ranks_975(n: int, q: float) -> tuple[int | None, int | None]:
    """The equal-tailed 97.5% ranks from scipy: l the largest with P(K <= l - 1) <= 0.0125, u the smallest with
    P(K <= u - 1) >= 0.9875, K ~ binomial(n, q); None beyond the sample."""
    cdf = binom.cdf(np.arange(n + 1), n, q)
    lows = [rank for rank in range(1, n + 1) if cdf[rank - 1] <= 0.0125]
    highs = [rank for rank in range(1, n + 1) if cdf[rank - 1] >= 0.9875]
    return (max(lows) if lows else None), (min(highs) if highs else None)


def test_the_ratio_of_medians_by_hand():
    # 20 latencies a side, rank r holding r ms (baseline) and 100 + r ms (candidate). The median is the 11th
    # (floor(20 x 0.5) + 1). Each side's 97.5% ranks: K ~ binomial(20, 1/2), P(K <= 4) = (1 + 20 + 190 + 1140 + 4845)
    # / 2^20 = 0.0059 <= 0.0125 < P(K <= 5) = 0.0207, so l = 5 and by symmetry u = 16.
    assert _ranks_975(20, 0.5) == (5, 16)
    baseline = [float(r) for r in range(20, 0, -1)]  # any order
    candidate = [100.0 + r for r in range(1, 21)]
    value, low, high = ratio_of_quantiles(baseline, candidate, 0.5)
    assert value == pytest.approx(111 / 11)
    assert low == pytest.approx(105 / 16)  # candidate's low end over the baseline's high end
    assert high == pytest.approx(116 / 5)  # candidate's high end over the baseline's low end
    assert _verdict(baseline, candidate, 0.5).verdict == "slower"
    assert _verdict(candidate, baseline, 0.5).verdict == "faster"


def test_a_tail_too_few_requests_bound_is_inconclusive_by_hand():
    # p99 of 20: no rank bounds it from above at 97.5% (P(K <= 19) = 1 - 0.99^20 = 0.182 < 0.9875); from below
    # P(K <= 17) = 1 - (0.99^20 + 20 x 0.01 x 0.99^19 + 190 x 0.01^2 x 0.99^18) = 0.0010 <= 0.0125 < P(K <= 18) =
    # 0.0169: l = 18. Both sides lack the high end: the ratio's interval is (0, inf).
    assert _ranks_975(20, 0.99) == (18, None)
    side = [float(r) for r in range(1, 21)]
    value, low, high = ratio_of_quantiles(side, [3 * v for v in side], 0.99)
    assert value == pytest.approx(3.0) and (low, high) == (0.0, math.inf)
    verdict = _verdict(side, [3 * v for v in side], 0.99)
    assert verdict.verdict == "inconclusive"


def test_one_side_short_of_the_tail_leaves_a_one_sided_interval():
    # The baseline's 1000 values bound its p99 at 97.5%; the candidate's 20 only from below (rank 18 = 18 x 10 ms):
    # the ratio's low end is 180 / the baseline's high end, its high end unbounded.
    baseline = [float(r) for r in range(1, 1001)]
    low_rank, high_rank = _ranks_975(1000, 0.99)
    assert low_rank is not None and high_rank is not None
    candidate = [10.0 * r for r in range(1, 21)]
    value, low, high = ratio_of_quantiles(baseline, candidate, 0.99)
    assert value == pytest.approx(200.0 / 991.0)  # 20 x 10 over the 991st (floor(1000 x 0.99) + 1)
    assert low == pytest.approx(180.0 / high_rank) and high == math.inf


@given(latencies)
def test_identical_sides_give_an_interval_holding_one(values):
    value, low, high = ratio_of_quantiles(values, list(values), 0.5)
    assert value == 1.0 and low <= 1.0 <= high
    value, low, high = ratio_of_quantiles(values, list(values), 0.99)
    assert value == 1.0 and low <= 1.0 <= high


@given(latencies, latencies, st.sampled_from([0.5, 0.9, 0.99]), st.floats(0.1, 10.0))
def test_swapping_sides_inverts_and_scaling_scales(base, cand, quantile, factor):
    value, low, high = ratio_of_quantiles(base, cand, quantile)
    swapped = ratio_of_quantiles(cand, base, quantile)
    assert swapped.value == pytest.approx(1 / value)
    assert swapped.ci95_low == pytest.approx(1 / high if high != math.inf else 0.0)
    assert swapped.ci95_high == (math.inf if low == 0 else pytest.approx(1 / low))
    scaled = ratio_of_quantiles(base, [factor * v for v in cand], quantile)
    assert scaled.value == pytest.approx(factor * value)
    assert scaled.ci95_low == pytest.approx(factor * low)
    assert low <= value <= high


def test_each_block_of_four_is_abba_or_baab_and_the_sides_are_seeded():
    sides = block_sides(400, seed=7)
    blocks = {sides[i : i + 4] for i in range(0, 400, 4)}
    assert blocks == {(0, 1, 1, 0), (1, 0, 0, 1)}  # both orders drawn over 100 blocks, nothing else
    assert block_sides(400, seed=7) == sides and block_sides(10, seed=7) == sides[:10]
    assert block_sides(400, seed=8) != sides
    assert abs(sides[:10].count(0) - sides[:10].count(1)) <= 1  # two and two a block; a partial block at most one


def test_the_route_follows_the_blocks_and_takes_each_sides_instances_in_turn():
    route = _BlockRoute(seed=3, instances=(1, 2))  # urls: the baseline's one, then the candidate's two
    orders = list(range(200))
    indices = [route(order) for order in reversed(orders)][::-1]  # asked out of order, as pool threads may
    sides = block_sides(200, seed=3)
    assert [0 if i == 0 else 1 for i in indices] == list(sides)
    candidate = [i for i in indices if i > 0]
    assert candidate == [1, 2] * (len(candidate) // 2) + [1] * (len(candidate) % 2)


def _comparison(baseline_ms, candidate_ms) -> ServiceComparison:
    return ServiceComparison(
        "healthy",
        "stalled",
        60.0,
        1.5,
        0,
        tuple(baseline_ms),
        tuple(candidate_ms),
        _verdict(baseline_ms, candidate_ms, 0.5),
        _verdict(baseline_ms, candidate_ms, 0.99),
        run=None,
    )


def test_table_and_text_of_a_comparison_by_hand():
    baseline = [float(r) for r in range(1, 21)]
    candidate = [100.0 + r for r in range(1, 21)]
    comparison = _comparison(baseline, candidate)
    table = comparison.table()
    assert list(table.index) == ["p50", "p99"]
    assert list(table.columns) == ["baseline_ms", "candidate_ms", "ratio", "ci95_low", "ci95_high", "verdict"]
    assert (table.loc["p50", "baseline_ms"], table.loc["p50", "candidate_ms"]) == (11.0, 111.0)
    assert (table.loc["p99", "baseline_ms"], table.loc["p99", "candidate_ms"]) == (20.0, 120.0)  # the 20th of 20
    assert list(table["verdict"]) == ["slower", "inconclusive"]
    lines = comparison.text().splitlines()
    assert len(lines) == 2 and lines[0].startswith("stalled against healthy, p50 latency")
    assert "slower" in lines[0] and "too few" not in lines[0]
    # a bounded 97.5% interval of a p99 needs 0.99^n <= 0.0125: n = 437 (0.99^436 = 0.012501, 0.99^437 = 0.012376)
    assert 0.99**436 > 0.0125 >= 0.99**437 and SIDE_CONFIDENCE == 0.975
    assert "(20 and 20 a side)" in lines[1] and "at least 437 requests a side" in lines[1]


FAKE = Service(urls=("http://127.0.0.1:1",), ports=(1,), pids=(), config=ServeConfig())


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"baseline": "http://127.0.0.1:1"}, "baseline"),
        ({"candidate": None}, "candidate"),
        ({"candidate": Service(("http://127.0.0.1:2",), (2,), (), ServeConfig(input_width=8))}, "candidate"),
        ({"labels": ("only one",)}, "labels"),
        ({"labels": ("a", " ")}, "labels[1]"),
        ({"qps": 0}, "qps"),
        ({"duration_s": 1e4}, "duration_s"),
        ({"seed": -1}, "seed"),
        ({"warm_up": -1}, "warm_up"),
        ({"min_queries": 0}, "min_queries"),
    ],
)
def test_bad_input_is_refused_before_any_request(kwargs, field):
    # the fake services answer nothing: a request sent would be an InferError, not an InputError
    arguments = {"baseline": FAKE, "candidate": FAKE, "qps": 60.0, "duration_s": 1.0, **kwargs}
    with pytest.raises(InputError) as err:
        compare_services(arguments.pop("baseline"), arguments.pop("candidate"), **arguments)
    assert err.value.field == field


@pytest.mark.parametrize("values", [[], [1.0, 0.0], [1.0, -2.0], "12", [math.nan]])
def test_latencies_a_ratio_cannot_take_are_refused(values):
    with pytest.raises(InputError):
        ratio_of_quantiles([1.0, 2.0], values, 0.5)
