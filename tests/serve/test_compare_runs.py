"""compare_services on a real interleaved run against two model servers: the one with the serialization stall is slower
at the median, each side got half of the requests, and no server process is left. (The ratio interval, its
symmetries and the routing, by hand: tests/serve/test_compare.py.)
"""

import pytest

from gpucost_lab.serve.compare import compare_services
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.instances import serve_many

from .helpers_s import alive

pytestmark = pytest.mark.slow


def test_a_serialization_stall_is_slower_at_the_median_under_one_arrival_pattern():
    # The serve-bench command's fault width: 2,048 outputs made JSON one at a time (milliseconds a request) against
    # one json.dumps; 1.5 s at 60 requests a second is about 90 requests, 45 a side, enough for the medians.
    healthy, stalled = ServeConfig(output_width=2048), ServeConfig(output_width=2048, stall="serialize")
    with serve_many([healthy, stalled]) as (baseline, candidate):
        comparison = compare_services(baseline, candidate, qps=60, duration_s=1.5, labels=("healthy", "stalled"))
        served = (len(baseline.phases()), len(candidate.phases()))  # the warm-up cleared: the run's requests alone
        pids = baseline.pids + candidate.pids
    run = comparison.run
    assert run.errors == 0 and len(comparison.baseline_ms) + len(comparison.candidate_ms) == run.requests
    # each block of four sends two a side; a partial last block puts one side at most one ahead
    assert abs(len(comparison.baseline_ms) - len(comparison.candidate_ms)) <= 1
    assert served == (len(comparison.baseline_ms), len(comparison.candidate_ms))  # each server's own count
    assert comparison.p50.verdict == "slower" and comparison.table().loc["p50", "verdict"] == "slower"
    assert comparison.p50.interval.ci95_low > 1.0
    assert len(comparison.text().splitlines()) == 2
    assert not any(alive(pid) for pid in pids)
