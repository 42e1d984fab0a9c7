"""The wait per collective (gpucost_lab.timeline.collective_match and collective_wait) over generated jobs: 2 to 6
synthetic ranks, one of them delayed by a known amount before each collective (tests/timeline/delayed_ranks.py), each
job written and read back; the delayed rank is found and its delay recovered within 5%. (The shipped ranks and the
small cases: tests/timeline/test_collective_wait.py.)
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucost_lab import timeline as tl

from .delayed_ranks import write_job

pytestmark = pytest.mark.slow


@settings(max_examples=12, deadline=None)
@given(
    ranks=st.integers(2, 6),
    delayed=st.integers(0, 5),
    delay_us=st.floats(200.0, 50_000.0),
    steps=st.integers(2, 4),
    collectives=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_a_rank_delayed_before_each_collective_is_found_and_its_delay_recovered(
    ranks, delayed, delay_us, steps, collectives, seed
):
    delayed %= ranks
    with tempfile.TemporaryDirectory() as tmp:
        # every rank's arrival jitters by up to 1% of the delay: the recovered wait is the delay within 1%
        write_job(tmp, ranks, delayed=delayed, delay_us=delay_us, steps=steps, collectives=collectives,
                  jitter_us=0.01 * delay_us, seed=seed)  # fmt: skip
        job = tl.load_ranks(tmp, workers=1)
    found = tl.straggler(job)
    assert found.rank == delayed
    assert found.wait_us.value == pytest.approx(delay_us, rel=0.05)
    assert found.wait_us.ci95_low <= found.wait_us.value <= found.wait_us.ci95_high
    assert found.verdict == "straggler"  # the others' time in the collective is (delay + 500) / 500 of its own
    table = tl.collectives(job)
    assert len(table) == steps * collectives
    assert table["spread_us"].to_numpy() == pytest.approx(delay_us, rel=0.05)
    assert (table["latest_rank"] == delayed).all()
    waits = tl.rank_table(job).set_index("rank")
    assert waits.loc[delayed, "wait_us"] == pytest.approx(0.0, abs=0.05 * delay_us * steps * collectives)
