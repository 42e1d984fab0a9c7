import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom

from gpucost_lab._validate import InputError
from gpucost_lab.serve.percentiles import (
    binomial_cdf,
    early_stopping,
    early_stopping_estimate_ms,
    early_stopping_min_queries,
    early_stopping_rank,
    interval_ranks,
    latency_percentiles,
    min_count_for_interval,
    percentile_of,
    quantile_name,
)


def test_median_of_twenty_by_hand():
    # 20 latencies 1..20 ms. Value: 0-based rank floor(20 x 0.5) = 10, the 11th smallest = 11 ms.
    # Interval (Conover 3.2): K ~ binomial(20, 1/2); P(K <= 5) = (1 + 20 + 190 + 1140 + 4845 + 15504) / 2^20
    # = 21700 / 1048576 = 0.0207 <= 0.025 < P(K <= 6) = 0.0577, so l - 1 = 5, l = 6; by symmetry u = 15.
    # Coverage = 1 - 2 x 21700 / 1048576 = 0.958611.
    p50 = latency_percentiles(range(1, 21))["p50"]
    assert p50.value == 11.0
    assert (p50.low_rank, p50.high_rank) == (6, 15)
    assert (p50.ci95_low, p50.ci95_high) == (6.0, 15.0)
    assert p50.coverage == pytest.approx(1 - 2 * 21700 / 2**20, abs=1e-12)
    assert p50.verdict == "bounded"


def test_loadgen_rank_convention_by_hand():
    # LoadGen's sample_latencies[n x q]: of 100 values the p99 is index 99 (the largest), the p90 index 90 (91st);
    # of 10 values the p25 is index floor(2.5) = 2, the 3rd smallest (numpy's "higher" would give index 3).
    values = list(range(1, 101))
    table = latency_percentiles(values, (0.9, 0.99))
    assert table["p99"].value == 100.0 and table["p90"].value == 91.0
    assert percentile_of(range(1, 11), 0.25).value == 3.0


def test_p99_of_twenty_is_inconclusive_by_hand():
    # No rank of 20 bounds p99 from above: P(K <= 19) = 1 - 0.99^20 = 0.182 < 0.975. Lower end: P(K <= 18) =
    # 1 - 0.99^20 - 20 x 0.99^19 x 0.01 = 0.0169 <= 0.025 < P(K <= 19): l = 19.
    p99 = latency_percentiles(range(1, 21))["p99"]
    assert p99.verdict == "inconclusive" and p99.inconclusive
    assert p99.high_rank is None and math.isinf(p99.ci95_high)
    assert p99.low_rank == 19 and p99.ci95_low == 19.0
    assert p99.to_dict() == {"value": 20.0, "ci95_low": 19.0, "ci95_high": None, "verdict": "inconclusive"}


def test_fewest_latencies_that_bound_each_quantile_by_hand():
    # Both ends exist once max(q, 1 - q)^n <= 0.025: 0.5^6 = 0.0156 (0.5^5 = 0.031); 0.9^36 = 0.0225 (0.9^35 =
    # 0.0250 > 0.025 by 3e-5); 0.99^368 = 0.0248 (0.99^367 = 0.0250 > 0.025 by 3e-5).
    assert [min_count_for_interval(q) for q in (0.5, 0.9, 0.99)] == [6, 36, 368]
    for q, n in ((0.5, 6), (0.9, 36), (0.99, 368)):
        assert None not in interval_ranks(n, q)[:2]
        assert None in interval_ranks(n - 1, q)[:2]


@pytest.mark.parametrize("n", [6, 20, 57, 368, 1000, 4321])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99])
def test_interval_ranks_against_scipy_binomial(n, q):
    low, high, coverage = interval_ranks(n, q)
    below = binom.cdf(low - 1, n, q) if low is not None else 0.0
    upto = binom.cdf(high - 1, n, q) if high is not None else 1.0
    assert coverage == pytest.approx(upto - below, abs=1e-9)
    if low is not None:  # each tail at most 2.5%, and the rank one further in would leave more than that out
        assert binom.cdf(low - 1, n, q) <= 0.025 < binom.cdf(low, n, q)
    else:
        assert binom.cdf(0, n, q) > 0.025
    if high is not None:
        assert binom.cdf(high - 1, n, q) >= 0.975 > binom.cdf(high - 2, n, q)
    else:
        assert binom.cdf(n - 1, n, q) < 0.975
    if low is not None and high is not None:
        assert coverage >= 0.95


def test_binomial_cdf_against_scipy():
    for n, q in ((1, 0.3), (50, 0.5), (1000, 0.99), (20000, 0.9)):
        np.testing.assert_allclose(binomial_cdf(n, q), binom.cdf(np.arange(n + 1), n, q), atol=1e-9)


latency_lists = st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=600)


@given(latency_lists)
def test_percentiles_are_ordered_and_each_interval_holds_its_value(latencies):
    table = latency_percentiles(latencies)
    p50, p90, p99 = table["p50"], table["p90"], table["p99"]
    assert p50.value <= p90.value <= p99.value
    for p in table.values():
        assert p.ci95_low <= p.value <= p.ci95_high
        assert min(latencies) <= p.value <= max(latencies)
        assert p.verdict == ("bounded" if len(latencies) >= min_count_for_interval(p.quantile) else "inconclusive")


def test_quantile_names():
    assert [quantile_name(q) for q in (0.5, 0.9, 0.99, 0.999)] == ["p50", "p90", "p99", "p99.9"]


def test_early_stopping_minimum_by_hand():
    # t = 0: the smallest h with q^h < 0.01. 0.99^458 = 0.01004, 0.99^459 = 0.00995: 459 (LoadGen's
    # "would need at least 171 more queries" after 288). 0.9^43 = 0.0108, 0.9^44 = 0.0097: 44.
    assert early_stopping_min_queries(0.99) == 459
    assert early_stopping_min_queries(0.9) == 44
    # t = 1 (LoadGen's SingleStream minimum, "need to process at least 662 queries" for p99, 64 for p90)
    assert early_stopping_min_queries(0.99, 1) == 662
    assert early_stopping_min_queries(0.9, 1) == 64


@pytest.mark.parametrize("q", [0.5, 0.9, 0.95, 0.99])
@pytest.mark.parametrize("t", [0, 1, 2, 7, 40, 300])
def test_early_stopping_minimum_against_scipy_binomial(q, t):
    # h = the fewest queries under the bound with P(binomial(h + t, 1 - q) <= t) < 0.01
    h = early_stopping_min_queries(q, t) - t
    assert binom.cdf(t, h + t, 1 - q) < 0.01
    assert binom.cdf(t, h - 1 + t, 1 - q) >= 0.01


def test_early_stopping_verdict_counts_only_latencies_above_the_bound():
    # 288 latencies, none above 50 ms (one exactly at it: LoadGen counts latency > bound): 459 - 288 = 171 more.
    verdict = early_stopping([10.0] * 287 + [50.0], slo_ms=50)
    assert (verdict.met, verdict.overlatency_count, verdict.more_needed) == (False, 0, 171)
    assert "171 more queries" in verdict.sentence
    # 700 latencies, one above: 662 needed, met.
    met = early_stopping([10.0] * 699 + [51.0], slo_ms=50)
    assert (met.met, met.overlatency_count, met.queries_needed, met.more_needed) == (True, 1, 662, 0)


def test_early_stopping_estimate_is_the_t_th_largest():
    # Below 662 latencies no p99 estimate; at exactly 662 the largest (t = 1: h(2) + 2 > 662).
    assert early_stopping_rank(661, 0.99) is None
    assert early_stopping_rank(662, 0.99) == 1
    assert early_stopping_rank(663, 0.99) == 1
    values = list(range(1, 663))
    assert early_stopping_estimate_ms(values, 0.99) == 662.0
    assert early_stopping_estimate_ms(values[:100], 0.99) is None
    # t grows while count >= h(t) + t: the rank found is the largest such t
    for n in (700, 1341, 5000):
        t = early_stopping_rank(n, 0.99)
        assert n >= early_stopping_min_queries(0.99, t) and n < early_stopping_min_queries(0.99, t + 1)


@pytest.mark.parametrize(
    "values, field",
    [
        ([], "latencies_ms"),
        ([1.0, -1.0], "latencies_ms[1]"),
        ([float("nan")], "latencies_ms[0]"),
        ("12", "latencies_ms"),
        ([True], "latencies_ms[0]"),
    ],
)
def test_bad_latencies_name_the_field(values, field):
    with pytest.raises(InputError) as err:
        latency_percentiles(values)
    assert err.value.field == field


@pytest.mark.parametrize(
    "quantiles, field",
    [((0.0,), "quantiles[0]"), ((1.0,), "quantiles[0]"), ((0.5, 0.5), "quantiles"), ((), "quantiles")],
)
def test_bad_quantiles_name_the_field(quantiles, field):
    with pytest.raises(InputError) as err:
        latency_percentiles([1.0, 2.0], quantiles)
    assert err.value.field == field


def test_bad_early_stopping_input():
    with pytest.raises(InputError) as err:
        early_stopping([1.0], slo_ms=0)
    assert err.value.field == "slo_ms"
    with pytest.raises(InputError) as err:
        early_stopping_min_queries(0.99, -1)
    assert err.value.field == "overlatency_count"
