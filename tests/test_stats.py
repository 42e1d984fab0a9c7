"""The course's one estimator: geometric means with log-scale Student-t intervals, against t-table values.

Values are chosen so their logs are round numbers: e^0, e^1, e^2 have logs 0, 1, 2 (mean 1, sample
standard deviation 1); 2 and 8 have logs ln 2 and 3 ln 2 (mean 2 ln 2, standard deviation sqrt(2) ln 2).
"""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from gpucost_lab.stats import Estimate, Interval, combine, ratio_interval

T_975 = {1: 12.706205, 2: 4.302653, 4: 2.776445, 9: 2.262157}  # t(0.975, df) from any t table
E = math.e


def test_three_repeats_with_logs_0_1_2():
    est = Estimate.of([1.0, E, E * E])
    assert est.geomean == pytest.approx(E)  # cube root of e^3
    assert est.log_std == pytest.approx(1.0)
    half = T_975[2] * 1 / math.sqrt(3)  # 2.48414
    assert est.ci95_low == pytest.approx(E * math.exp(-half), rel=1e-6)  # 0.2267
    assert est.ci95_high == pytest.approx(E * math.exp(half), rel=1e-6)  # 32.60
    assert est.to_dict() == {"geomean": est.geomean, "ci95_low": est.ci95_low, "ci95_high": est.ci95_high}


def test_two_repeats_2_and_8():
    est = Estimate.of([2.0, 8.0])
    assert est.geomean == pytest.approx(4.0)
    assert est.log_se == pytest.approx(math.log(2))  # sqrt(2) ln 2 / sqrt(2)
    assert (est.ci95_low, est.ci95_high) == (
        pytest.approx(4 * 2 ** -T_975[1], rel=1e-6),
        pytest.approx(4 * 2 ** T_975[1], rel=1e-6),
    )
    assert est.width_factor == pytest.approx(2 ** (2 * T_975[1]), rel=1e-6)


@pytest.mark.parametrize("values", [[1.0], [], [1.0, math.nan], [1.0, math.inf], [1.0, 0.0], [-1.0, 2.0], [True, 2.0]])
def test_rejects_too_few_non_finite_or_non_positive(values):
    with pytest.raises(ValueError, match="values"):
        Estimate.of(values) if values and values[0] is not True else Estimate(tuple(values))


positive = st.floats(1e-6, 1e6)


@given(st.lists(positive, min_size=2, max_size=30), st.floats(1e-3, 1e3))
def test_interval_is_positive_contains_the_centre_and_commutes_with_scaling_and_inversion(values, k):
    est = Estimate.of(values)
    assert 0 < est.ci95_low <= est.geomean * (1 + 1e-9) and est.geomean <= est.ci95_high * (1 + 1e-9)
    # a price x a time: the estimate of the costs is the price x the estimate of the times, bounds too
    scaled = Estimate.of(v * k for v in values)
    assert scaled.geomean == pytest.approx(k * est.geomean, rel=1e-9)
    assert (scaled.ci95_low, scaled.ci95_high) == (
        pytest.approx(k * est.ci95_low, rel=1e-6),
        pytest.approx(k * est.ci95_high, rel=1e-6),
    )
    # units per time: the estimate of the rates is the reciprocal of the estimate of the times
    rates = Estimate.of(1 / v for v in values)
    assert rates.geomean == pytest.approx(1 / est.geomean, rel=1e-9)
    assert rates.ci95_low == pytest.approx(1 / est.ci95_high, rel=1e-6)


def test_constant_values_have_no_width():
    assert Estimate.of([3.0, 3.0, 3.0]).interval == Interval(pytest.approx(3.0), pytest.approx(3.0), pytest.approx(3.0))


# --------------------------------------------------------------------------------------------------
# products and ratios of independent estimates


def test_ratio_of_a_spread_estimate_over_a_constant_keeps_its_degrees_of_freedom():
    # [2, 8] over [1, 1, 1]: ratio 4, variance (ln 2)^2 from the candidate alone, df = n_c - 1 = 1
    r, low, high = ratio_interval(Estimate.of([2.0, 8.0]), Estimate.of([1.0, 1.0, 1.0]))
    assert r == pytest.approx(4.0)
    assert (low, high) == (pytest.approx(4 * 2 ** -T_975[1], rel=1e-6), pytest.approx(4 * 2 ** T_975[1], rel=1e-6))


def test_welch_satterthwaite_by_hand():
    # c = [1, e, e^2]: mean log 1, se^2 = 1/3, n 3 ; b = [1, e^2]: mean log 1, se^2 = 2/2 = 1, n 2
    # var = 4/3 ; df = (4/3)^2 / ((1/3)^2 / 2 + 1^2 / 1) = (16/9) / (19/18) = 32/19
    r, low, high = ratio_interval(Estimate.of([1.0, E, E * E]), Estimate.of([1.0, E * E]))
    t = stats.t.ppf(0.975, 32 / 19)  # the reference implementation of the t quantile
    assert r == pytest.approx(1.0)
    assert (low, high) == (
        pytest.approx(math.exp(-t * math.sqrt(4 / 3)), rel=1e-9),
        pytest.approx(math.exp(t * math.sqrt(4 / 3)), rel=1e-9),
    )


def test_a_product_with_an_exact_number_scales_the_interval():
    est = Estimate.of([2.0, 8.0])
    product = combine((est, 1), (90.0, 1))
    assert tuple(product) == (pytest.approx(360.0), pytest.approx(90 * est.ci95_low), pytest.approx(90 * est.ci95_high))
    assert tuple(combine((2.0, 1), (8.0, -1))) == (pytest.approx(0.25),) * 3


@given(st.lists(positive, min_size=2, max_size=8), st.lists(positive, min_size=2, max_size=8))
def test_swapping_a_ratio_inverts_its_interval(c_values, b_values):
    c, b = Estimate.of(c_values), Estimate.of(b_values)
    r, low, high = ratio_interval(c, b)
    r2, low2, high2 = ratio_interval(b, c)
    assert 0 < low <= r * (1 + 1e-12) and r <= high * (1 + 1e-12)
    assert r2 == pytest.approx(1 / r, rel=1e-9)
    assert (low2, high2) == (pytest.approx(1 / high, rel=1e-9), pytest.approx(1 / low, rel=1e-9))


@pytest.mark.parametrize(
    "factor,match",
    [((Estimate.of([1.0, 2.0]), 2), "power"), ((0.0, 1), "factor"), (("3", 1), "factor"), ((math.inf, -1), "factor")],
)
def test_combine_rejects_bad_factors(factor, match):
    with pytest.raises(ValueError, match=match):
        combine(factor)


def test_ratio_interval_names_a_wrong_type():
    with pytest.raises(ValueError, match="baseline must be an Estimate"):
        ratio_interval(Estimate.of([1.0, 2.0]), [1.0, 2.0])
