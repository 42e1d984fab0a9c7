"""The memory ledger against the course's hand-computed example (chapter 04).

static 3.2 GB, 0.34 GB of activations per sample, 24 GB device, 10% reserve, 10 blocks:
budget = 24 x 0.9 = 21.6 GB; at microbatch 32 each block adds 0.34 x 32 / 10 = 1.088 GB, so the
blocks hold 1.088, 2.176, ..., 10.88 GB and the peak is 3.2 + 10.88 = 14.08 GB (headroom 7.52 GB);
the largest microbatch that fits is floor((21.6 - 3.2) / 0.34) = floor(54.1) = 54.
"""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost_lab.memory.ledger import MemoryLedger

COURSE = MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34, device_gb=24, reserve_fraction=0.10, blocks=10)


def test_course_budget_peak_and_max_microbatch():
    r = COURSE.at(32)
    assert r.budget_gb == pytest.approx(21.6)
    assert r.peak_gb == pytest.approx(14.08)
    assert r.headroom_gb == pytest.approx(7.52)
    assert r.fits is True
    assert r.max_microbatch == 54


def test_course_ledger_table_at_32():
    table = COURSE.at(32).table()
    expected_activations = [1.088 * k for k in range(1, 11)]  # 1.088, 2.176, ... 10.88
    # indexed by block, 1 to 10, as the chapter names them ("block 10"), not by a 0-based row number
    assert table.index.name == "block" and list(table.index) == list(range(1, 11))
    assert list(table.columns) == ["activations_gb", "total_gb", "state"]
    assert table.loc[10, "total_gb"] == pytest.approx(3.2 + 10.88)  # the last block holds the peak, 14.08 GB
    assert list(table["activations_gb"]) == pytest.approx(expected_activations)
    assert list(table["total_gb"]) == pytest.approx([3.2 + a for a in expected_activations])
    assert set(table["state"]) == {"fits"}


def test_54_fits_and_55_does_not():
    assert COURSE.at(54).fits  # 3.2 + 0.34 x 54 = 21.56 <= 21.6
    r = COURSE.at(55)  # 3.2 + 0.34 x 55 = 21.90 > 21.6
    assert not r.fits
    assert r.headroom_gb == pytest.approx(-0.3)


def test_only_the_last_block_goes_over_at_60():
    # each block adds 0.34 x 60 / 10 = 2.04 GB: block 9 holds 3.2 + 18.36 = 21.56 (fits),
    # block 10 holds 3.2 + 20.4 = 23.6 (over the 21.6 budget)
    states = list(COURSE.at(60).table()["state"])
    assert states == ["fits"] * 9 + ["over budget"]


def test_static_memory_over_budget_leaves_no_microbatch():
    ledger = MemoryLedger(static_gb=22.0, activation_gb_per_sample=0.1, device_gb=24, reserve_fraction=0.1)
    assert ledger.max_microbatch() == 0
    assert not ledger.at(1).fits


def test_exact_budget_edge_counts_as_fitting():
    # 2 + 0.5 x 18 = 11 = 11 GB budget exactly (device 11 GB, no reserve)
    ledger = MemoryLedger(static_gb=2.0, activation_gb_per_sample=0.5, device_gb=11, reserve_fraction=0.0)
    assert ledger.max_microbatch() == 18
    assert ledger.at(18).fits


@pytest.mark.parametrize(
    "field,value",
    [
        ("static_gb", -1.0),
        ("activation_gb_per_sample", 0.0),
        ("device_gb", 0.0),
        ("device_gb", math.inf),
        ("reserve_fraction", 1.0),
        ("reserve_fraction", -0.1),
        ("blocks", 0),
        ("static_gb", math.nan),
    ],
)
def test_bad_parameters_name_the_field(field, value):
    kwargs = dict(static_gb=3.2, activation_gb_per_sample=0.34, device_gb=24, reserve_fraction=0.1, blocks=10)
    kwargs[field] = value
    with pytest.raises(ValueError, match=field):
        MemoryLedger(**kwargs)


@pytest.mark.parametrize("microbatch", [0, -3, 2.5])
def test_bad_microbatch(microbatch):
    with pytest.raises(ValueError, match="microbatch"):
        COURSE.at(microbatch)


ledgers = st.builds(
    MemoryLedger,
    static_gb=st.floats(0, 100),
    activation_gb_per_sample=st.floats(1e-3, 10),
    device_gb=st.floats(1, 200),
    reserve_fraction=st.floats(0, 0.9),
    blocks=st.integers(1, 64),
)


@given(ledgers)
def test_max_microbatch_is_the_largest_that_fits(ledger):
    m = ledger.max_microbatch()
    if m >= 1:
        assert ledger.at(m).fits
    assert not ledger.at(m + 1).fits


@given(ledgers, st.integers(1, 500))
def test_blocks_grow_to_the_peak(ledger, microbatch):
    r = ledger.at(microbatch)
    totals = [b.total_gb for b in r.blocks]
    assert totals == sorted(totals)
    assert totals[-1] == pytest.approx(r.peak_gb)
    assert r.headroom_gb == pytest.approx(r.budget_gb - r.peak_gb)
