"""gpucost_lab.serve.loadgen driving MLPerf LoadGen against a server: the stand-in server of helpers_l.py and the
model server's instances. The schedule is LoadGen's own to the nanosecond, each scenario's run agrees with LoadGen's
summary and early stopping, our p99 matches LoadGen's, requests go where their route says, and failures end a run
in one line. (Parsing LoadGen's output and bad settings, without a run: tests/serve/test_loadgen.py.)
"""

import json
import threading

import numpy as np
import pytest

from gpucost_lab.serve.loadgen import LoadGenError, loadgen_schedule_ns, parse_summary, run_loadgen
from gpucost_lab.serve.percentiles import early_stopping_min_queries, early_stopping_rank
from tests.serve.helpers_l import stand_in_server

pytestmark = pytest.mark.slow


def _loadgen_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("loadgen-client")]


def _within_a_step_or_10_percent(ours: list[float], ours_p99: float, loadgen_p99: float) -> bool:
    """|ours - LoadGen's| within 10% of LoadGen's, or within one step between neighbouring order statistics of ours
    around the p99's rank (the two count latency from slightly different instants)."""
    ordered = np.sort(ours)
    k = int(len(ordered) * 0.99)
    step = max(ordered[k] - ordered[max(k - 1, 0)], ordered[min(k + 1, len(ordered) - 1)] - ordered[k])
    return abs(ours_p99 - loadgen_p99) <= max(0.10 * loadgen_p99, step)


def test_schedule_is_loadgens_own_to_the_nanosecond(tmp_path):
    # LoadGen's trace holds each query's scheduled time ("Sample" begin events, microseconds with 3 decimals)
    with stand_in_server() as server:
        run = run_loadgen([server.url], "server", qps=150, duration_s=1.0, seed=11, log_dir=tmp_path, trace=True)
    events = []
    for line in (tmp_path / "mlperf_log_trace.json").read_text().splitlines():
        if line.startswith('{"name":"Sample"') and '"ph":"b"' in line:
            events.append(json.loads(line.rstrip().rstrip(",")))  # line by line: the whole file is not valid JSON
    events.sort(key=lambda e: e["args"]["query_seq"])
    scheduled_us = np.array([e["ts"] for e in events])
    assert len(events) == run.loadgen_queries == run.requests
    ours_us = loadgen_schedule_ns(150, len(events), seed=11) / 1000
    np.testing.assert_allclose(scheduled_us - scheduled_us[0], ours_us, atol=0.002)
    np.testing.assert_allclose(np.array(run.scheduled_s) * 1e6, ours_us, atol=0.002)
    # the course's settings reached LoadGen: its summary's "Test Parameters Used" says so
    used = parse_summary((tmp_path / "mlperf_log_summary.txt").read_text())
    assert (used["target_qps"], used["min_duration (ms)"], used["schedule_rng_seed"]) == ("150", "1000", "11")
    assert run.loadgen_settings["min_duration_ms"] == 1000 and run.loadgen_settings["scenario"] == "Server"


@pytest.mark.parametrize("slo_ms", [1000.0, 1.5])
def test_server_run_agrees_with_loadgen(slo_ms):
    # 2 ms of work per request: with a 1.5 ms bound every query is over it (t = queries), with 1 s none is.
    with stand_in_server(service_ms=2) as server:
        run = run_loadgen([server.url], "server", qps=100, slo_ms=slo_ms, duration_s=2.0)
        assert server.requests == run.requests == run.loadgen_queries  # each query one request, each answered
    assert not _loadgen_threads()  # the pool's threads joined
    ours = run.percentiles()
    assert _within_a_step_or_10_percent(list(run.latencies_ms), ours["p99"].value, run.loadgen_p99_ms)
    assert min(run.latencies_ms) >= 2.0 and min(run.issue_delay_ms) == 0.0
    # LoadGen's early stopping from its own overlatency count, by our rule
    t = run.loadgen_overlatency_count
    assert t == run.early_stopping().overlatency_count
    needed = early_stopping_min_queries(0.99, t)
    assert run.early_stopping_met == (run.loadgen_queries >= needed)
    if not run.early_stopping_met:
        assert run.loadgen_more_queries_needed == needed - run.loadgen_queries == run.early_stopping().more_needed
    assert not run.result_valid  # 2 s is too short for a p99 under MLPerf's rules
    assert run.qps_offered == 100.0 and 50 < run.qps_achieved < 150
    assert (run.errors, run.first_error, run.loadgen_messages) == (0, None, ())
    assert run.loadgen_summary()["p99_ms"] == run.loadgen_p99_ms


def test_single_stream_early_stopping_is_loadgens():
    with stand_in_server() as server:
        run = run_loadgen([server.url], "single-stream", duration_s=1.0, min_queries=64, percentile=0.9)
    assert run.requests == run.loadgen_queries
    ours = run.percentiles((0.9,))["p90"].value
    assert _within_a_step_or_10_percent(list(run.latencies_ms), ours, run.loadgen_latency_ms["p90"])
    t = early_stopping_rank(run.requests, 0.9)
    if t is None:  # fewer than 64 queries: LoadGen says how many more
        assert run.loadgen_more_queries_needed == 64 - run.requests
    else:  # LoadGen "would discard t - 1 highest latency queries", its estimate the t-th largest of its latencies
        assert f"Would discard {t - 1} highest latency queries" in run.early_stopping_text
        ordered = sorted(run.latencies_ms)
        ours_estimate = ordered[len(ordered) - t]
        assert run.loadgen_early_stopping_estimate_ms == pytest.approx(ours_estimate, rel=0.1, abs=0.5)


def test_offline_sends_one_query_of_all_samples():
    # LoadGen sizes Offline's one query as max(min_query_count, 1.1 x duration x expected qps) = max(64, 110) = 110
    with stand_in_server() as server:
        run = run_loadgen([server.url], "offline", qps=100, duration_s=1.0, min_queries=64)
        assert server.requests == run.requests == 110
    assert run.early_stopping_met  # LoadGen does not ask it of Offline
    assert _within_a_step_or_10_percent(list(run.latencies_ms), run.percentiles()["p99"].value, run.loadgen_p99_ms)


def test_failed_requests_end_the_run_in_one_line():
    with stand_in_server() as server:
        server.status[0] = 500
        with pytest.raises(LoadGenError) as err:
            run_loadgen([server.url], "server", qps=100, duration_s=0.3, min_queries=10)
    assert "requests failed" in str(err.value) and "HTTP 500" in str(err.value) and "\n" not in str(err.value)
    assert not _loadgen_threads()


def test_our_p99_matches_loadgens_against_the_model_server():
    from gpucost_lab.serve.config import ServeConfig
    from gpucost_lab.serve.instances import serve_instances

    with serve_instances(ServeConfig(), instances=2) as service:
        service.clear_phases()
        run = run_loadgen(service.urls, "server", qps=40, slo_ms=200, duration_s=3.0)
        served = len(service.phases())
        pids = service.pids
    assert served == run.requests == run.loadgen_queries
    assert _within_a_step_or_10_percent(list(run.latencies_ms), run.percentiles()["p99"].value, run.loadgen_p99_ms)
    assert not _loadgen_threads()
    for pid in pids:  # every server process gone
        with pytest.raises(ProcessLookupError):
            import os

            os.kill(pid, 0)


def test_round_robin_says_which_server_answered_each_request():
    with stand_in_server() as first, stand_in_server() as second:
        run = run_loadgen([first.url, second.url], "server", qps=150, duration_s=0.5, min_queries=20)
        counts = (first.requests, second.requests)
    assert len(run.served_by) == run.requests and set(run.served_by) <= {0, 1}
    assert (run.served_by.count(0), run.served_by.count(1)) == counts  # each server's own count
    assert abs(counts[0] - counts[1]) <= 1  # taken in turn


def test_a_route_sends_each_request_where_it_says():
    def route(order):
        return 1 if order % 3 == 0 else 0  # every third request, from the first, to the second server

    with stand_in_server() as first, stand_in_server() as second:
        run = run_loadgen([first.url, second.url], "server", qps=150, duration_s=0.5, min_queries=20, route=route)
        counts = (first.requests, second.requests)
    assert run.errors == 0
    assert run.served_by == tuple(route(order) for order in range(run.requests))  # in issue order
    assert counts == (run.served_by.count(0), run.served_by.count(1))
    assert counts[1] == -(-run.requests // 3)  # orders 0, 3, 6, ...: ceil(n / 3) of n


def test_a_route_outside_the_urls_fails_every_request_in_one_line():
    with stand_in_server() as server:
        with pytest.raises(LoadGenError) as err:
            run_loadgen([server.url], "server", qps=100, duration_s=0.2, min_queries=5, route=lambda order: 1)
        assert server.requests == 0
    message = str(err.value)
    assert "\n" not in message and "route(0) must be an index in [0, 0] of the urls, got 1" in message
