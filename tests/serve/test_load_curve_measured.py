"""A short real latency curve (gpucost_lab.serve.load_curve) against a model server with the serialization stall,
started for it: two offered rates, each row's interval holding its p50, and a verdict against the SLO. (The curve's
arithmetic, its prediction and its plot: tests/serve/test_load_curve.py.)
"""

from __future__ import annotations

import pytest

from gpucost_lab.serve.load_curve import measure_load_curve

pytestmark = pytest.mark.slow


def test_a_short_real_curve_rises_with_the_rate():
    from gpucost_lab.serve.config import ServeConfig
    from gpucost_lab.serve.instances import serve_instances

    with serve_instances(ServeConfig(stall="serialize", output_width=2048)) as service:
        curve = measure_load_curve(service.urls, (10.0, 30.0), duration_s=1.0, slo_ms=500.0, quantile=0.5)
    t = curve.table()
    assert list(t["qps_offered"]) == [10.0, 30.0] and (t["requests"] > 0).all()
    assert (t["p50_ci95_low_ms"] <= t["p50_ms"]).all() and (t["p50_ms"] <= t["p50_ci95_high_ms"]).all()
    assert set(t["slo_verdict"]) <= {"meets", "misses", "inconclusive"}
