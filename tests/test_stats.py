"""Student-t intervals against printed t-table values."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.stats import Estimate

T_975 = {2: 4.302653, 4: 2.776445, 9: 2.262157}  # t(0.975, df) from any t table


def test_three_repeats():
    e = Estimate.of([100.0, 110.0, 90.0])  # mean 100, sample std 10
    assert e.mean == pytest.approx(100.0)
    assert e.std == pytest.approx(10.0)
    half = T_975[2] * 10 / math.sqrt(3)  # 24.84
    assert e.ci95_low == pytest.approx(100 - half, rel=1e-6)
    assert e.ci95_high == pytest.approx(100 + half, rel=1e-6)


def test_five_repeats():
    values = [10.0, 12.0, 11.0, 13.0, 9.0]  # mean 11, squared deviations 1+1+0+4+4 = 10, std = sqrt(10/4)
    e = Estimate.of(values)
    assert e.std == pytest.approx(math.sqrt(2.5))
    assert e.half_width == pytest.approx(T_975[4] * math.sqrt(2.5) / math.sqrt(5), rel=1e-6)
    assert e.to_dict() == {"mean": e.mean, "ci95_low": e.ci95_low, "ci95_high": e.ci95_high}


@pytest.mark.parametrize("values", [[1.0], [], [1.0, math.nan], [1.0, math.inf]])
def test_rejects_too_few_or_non_finite(values):
    with pytest.raises(ValueError, match="values"):
        Estimate.of(values)


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30))
def test_interval_contains_mean_and_constants_have_zero_width(values):
    e = Estimate.of(values)
    assert e.ci95_low <= e.mean + 1e-6 * (1 + abs(e.mean))
    assert e.ci95_high >= e.mean - 1e-6 * (1 + abs(e.mean))
    c = Estimate.of([values[0]] * len(values))
    assert c.half_width == pytest.approx(0.0, abs=1e-9 * (1 + abs(values[0])))
