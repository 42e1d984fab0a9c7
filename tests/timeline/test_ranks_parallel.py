"""A distributed job's traces read as one job (gpucost_lab.timeline.ranks) by two worker processes: the same analysis
as one process gives, the two real ranks of the sampled job in rank order. (The analysis itself:
tests/timeline/test_ranks.py.)
"""

from __future__ import annotations

import pytest

from gpucost_lab import timeline as tl

pytestmark = pytest.mark.slow


def test_loading_in_parallel_gives_what_one_process_gives():
    paths = [tl.example_trace("sampled_rank1_gpu"), tl.example_trace("sampled_rank0_gpu")]
    one, two = (tl.analyze_ranks(paths, workers=w) for w in (1, 2))
    assert one == two
    assert [r["rank"] for r in one["ranks"]] == [0, 1]
