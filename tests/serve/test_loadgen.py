"""gpucost_lab.serve.loadgen without a run: LoadGen's summary and detail logs parsed by hand, the schedule's shape,
and bad settings and a route that is no function refused by name. The runs against a server are
tests/serve/test_loadgen_runs.py.
"""

import json

import numpy as np
import pytest

from gpucost_lab._validate import InputError
from gpucost_lab.serve.loadgen import loadgen_schedule_ns, parse_detail, parse_summary, run_loadgen

SUMMARY = """================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : Server
Mode     : PerformanceOnly
Completed samples per second    : 94.29
Result is : INVALID
  Performance constraints satisfied : Yes
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: NO
Recommendations:
Early Stopping Result:
 * Run unsuccessful.
 * Processed 288 queries.
 * Would need to run at least 171 more queries,
 with the run being successful if every additional
 query were under latency.

================================================
Additional Stats
================================================
Scheduled samples per second : 94.37
Min latency (ns)                : 2109981
Max latency (ns)                : 5128958
Mean latency (ns)               : 2289403
50.00 percentile latency (ns)   : 2240538
99.00 percentile latency (ns)   : 3512915
"""


def test_summary_parsed_by_hand():
    figures = parse_summary(SUMMARY)
    assert figures["Result is"] == "INVALID"
    assert figures["Early stopping satisfied"] == "NO"
    assert figures["99.00 percentile latency (ns)"] == "3512915"
    assert figures["early_stopping_text"] == (
        "Run unsuccessful. Processed 288 queries. Would need to run at least 171 more queries, with the run being "
        "successful if every additional query were under latency."
    )


def test_detail_records_and_messages():
    lines = [
        ":::MLLOG " + json.dumps({"key": "result_query_count", "value": 288, "metadata": {"is_error": False}}),
        "not a record",
        ":::MLLOG " + json.dumps({"key": "error_runtime", "value": "ran out", "metadata": {"is_error": True}}),
    ]
    detail = parse_detail("\n".join(lines))
    assert detail["result_query_count"] == 288
    assert detail["messages"] == ["error_runtime: ran out"]


def test_schedule_starts_at_zero_and_rises():
    offsets = loadgen_schedule_ns(100.0, 50, seed=3)
    assert offsets[0] == 0 and np.all(np.diff(offsets) >= 0)
    assert np.array_equal(loadgen_schedule_ns(100.0, 50, seed=3), offsets)  # seeded
    # the gaps are -log(1 - u) / qps: doubling the rate halves each (to the nanosecond cut)
    assert np.all(np.abs(np.diff(loadgen_schedule_ns(200.0, 50, seed=3)) - np.diff(offsets) / 2) <= 1)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"scenario": "multi-stream"}, "scenario"),
        ({"qps": 0}, "qps"),
        ({"qps": 1e6}, "qps"),
        ({"duration_s": 600}, "duration_s"),
        ({"slo_ms": -1}, "slo_ms"),
        ({"percentile": 1.0}, "percentile"),
        ({"min_queries": 0}, "min_queries"),
        ({"threads": 0}, "threads"),
        ({"seed": 2**32}, "seed"),
    ],
)
def test_bad_settings_name_the_field(kwargs, field):
    with pytest.raises(InputError) as err:
        run_loadgen(["http://127.0.0.1:1"], **kwargs)
    assert err.value.field == field


def test_a_route_that_is_no_function_is_refused():
    with pytest.raises(InputError) as err:
        run_loadgen(["http://127.0.0.1:1"], route=[0, 1])
    assert err.value.field == "route"
