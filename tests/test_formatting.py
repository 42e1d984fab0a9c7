"""gpucost_lab.formatting: one format per quantity (chapter 06), against strings formatted by hand."""

import math

import pytest

from gpucost_lab.formatting import (
    format_bytes,
    format_estimate,
    format_estimates,
    format_hours,
    format_memory,
    format_number,
    format_pair,
    format_ratio,
    format_steps,
)
from gpucost_lab.stats import Estimate, Interval


def spread(centre: float, a: float) -> list[float]:
    """Three repeats centre x e^(-a, 0, a): geometric mean ``centre``, log std ``a``."""
    return [centre * math.exp(-a), centre, centre * math.exp(a)]


# Every Estimate below has 3 repeats: geometric mean g, log std a, interval g x exp(-+ t(0.975, 2) x a / sqrt(3)),
# t(0.975, 2) = 4.302653 (t table): a = 0.1 -> exp(-+0.248414) = x0.780037 / x1.281990 ; a = 0.05 -> exp(-+0.124207)
# = x0.883197 / x1.132250 ; a = 0.01 -> exp(-+0.0248414) = x0.975465 / x1.025152.
BASE_THROUGHPUT = spread(10_000.0, 0.1)  # 7,800 to 12,820
BASE_PER_SAMPLE = spread(1.1e-7, 0.1)  # 8.580e-08 to 1.410e-07
BASE_TO_TARGET = spread(1.0, 0.05)  # 0.8832 to 1.1323 (to the candidate's 4 decimals)
CAND_TO_TARGET = spread(0.8, 0.01)  # 0.7804 to 0.8201 (4 significant digits: 0.8000)


def test_formats_by_hand():
    assert format_number(12_345.6) == "12,346"
    assert format_number(2.1) == "2.100"
    assert format_number(0.01234) == "0.01234"
    assert format_number(1.1e-7) == "1.100e-07"
    assert format_estimate(Estimate.of(BASE_THROUGHPUT), "samples/s") == "10,000 samples/s (95% CI 7,800 to 12,820)"
    assert format_estimate(Estimate.of(BASE_TO_TARGET), "USD") == "1.000 USD (95% CI 0.883 to 1.132)"
    assert format_estimate(Estimate.of(BASE_PER_SAMPLE), "USD") == "1.100e-07 USD (95% CI 8.580e-08 to 1.410e-07)"
    # a row shares one format: 4 significant digits for its smallest mean (0.8 -> 4 decimals)
    assert format_estimates([Estimate.of(BASE_TO_TARGET), Estimate.of(CAND_TO_TARGET)], "USD") == [
        "1.0000 USD (95% CI 0.8832 to 1.1323)",
        "0.8000 USD (95% CI 0.7804 to 0.8201)",
    ]
    # one mean below 0.001: both in scientific notation ; [0.0019, 0.002, 0.0021]: s = 1e-4, half 2.4841e-4
    assert format_estimates([Estimate.of(spread(0.002, 0.05)), Estimate.of([9e-4, 9e-4])]) == [
        "2.000e-03 (95% CI 1.766e-03 to 2.265e-03)",
        "9.000e-04 (95% CI 9.000e-04 to 9.000e-04)",
    ]


@pytest.mark.parametrize(
    "x, text",
    [
        (0, "0.000"),  # zero is fixed, with 3 decimals
        (-0.5, "-0.5000"),  # 4 significant digits on either side of zero
        (999_999_999, "999,999,999"),  # the largest fixed value: no decimals
        (1e9, "1.000e+09"),  # from 10^9 up, scientific
        (0.001, "0.001000"),  # from 0.001 up, fixed
        (0.000999, "9.990e-04"),
    ],
)
def test_numbers_switch_to_scientific_notation_at_the_stated_bounds(x, text):
    assert format_number(x) == text


def test_an_interval_takes_the_value_s_decimals():
    assert format_estimate(Interval(0.8, 0.7, 0.9)) == "0.8000 (95% CI 0.7000 to 0.9000)"


@pytest.mark.parametrize(
    "n_bytes, text",
    [
        (25_100_000_000, "25.1 GB"),
        (2 * 10**12, "2.0 TB"),
        (1_234_567, "1.2 MB"),
        (1000, "1.0 kB"),  # decimal units: a kilobyte is 1,000 bytes
        (999, "999 B"),
        (0, "0 B"),
    ],
)
def test_bytes_in_decimal_units_with_one_decimal(n_bytes, text):
    assert format_bytes(n_bytes) == text


def test_memory_hours_ratios_and_steps():
    assert format_memory(25_100_000_000) == "25.1 GB (25,100,000,000 bytes)"
    assert format_hours(7.5) == "7.50 h" and format_hours(8) == "8.00 h"
    assert format_ratio(0.8) == "0.800x" and format_ratio(1.23456) == "1.235x"
    assert format_steps(1250) == "1,250" and format_steps(1250.0) == "1,250"
    assert format_steps(12.5) == "12.50"  # not whole: 4 significant digits


def test_a_pair_is_shown_exactly_only_where_the_short_forms_would_hide_a_difference():
    def exact(n):
        return f"{n:,} bytes"

    # one byte over a 25.1 GB budget reads "25.1 GB" twice: both exact
    assert format_pair(25_100_000_001, 25_100_000_000, format_bytes, exact) == (
        "25,100,000,001 bytes",
        "25,100,000,000 bytes",
    )
    assert format_pair(25_100_000_000, 25_100_000_000, format_bytes, exact) == ("25.1 GB", "25.1 GB")  # equal
    assert format_pair(30 * 10**9, 21_600_000_000, format_bytes, exact) == ("30.0 GB", "21.6 GB")


def test_no_estimates_format_as_no_lines():
    assert format_estimates([]) == []
