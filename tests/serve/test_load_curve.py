"""Latency against offered load (gpucost_lab.serve.load_curve): the service time from phase records, the measured
table and its points, the prediction beside it, and the plot's alt text. (One short real run against a server:
tests/serve/test_load_curve_measured.py.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import pytest

from gpucost_lab._validate import InputError
from gpucost_lab.formatting import description
from gpucost_lab.serve.load_curve import (
    LoadCurve,
    client_overhead_ms,
    measure_load_curve,
    plot_load_curve,
    service_time_ms,
    with_prediction,
)
from gpucost_lab.serve.percentiles import latency_percentiles

PHASES = ["receive_decode_ms", "preprocess_ms", "queue_ms", "model_ms", "serialize_ms", "send_ms"]


def _records(busy_rows):
    """Phase records whose non-queue phases are the given values, with a queue of 50 ms that must not count."""
    rows = []
    for decode, pre, model, ser, send in busy_rows:
        rows.append(dict(zip(PHASES, (decode, pre, 50.0, model, ser, send))))
    return pd.DataFrame(rows)


def test_the_service_time_is_every_phase_but_the_queue():
    # busy times: 1+1+2+5+1 = 10, 1+1+2+7+1 = 12, 1+1+2+11+1 = 16 ms: mean 38/3, median 12
    table = _records([(1, 1, 2, 5, 1), (1, 1, 2, 7, 1), (1, 1, 2, 11, 1)])
    s = service_time_ms(table)
    mean = 38 / 3
    variance = ((10 - mean) ** 2 + (12 - mean) ** 2 + (16 - mean) ** 2) / 3  # 56/9
    assert s.mean_ms == pytest.approx(mean)
    assert s.median_ms == 12.0 and s.requests == 3
    assert s.cv2 == pytest.approx(variance / mean**2)
    assert "0 is a fixed service" in s.text


def test_a_fixed_service_has_no_variation():
    assert service_time_ms(_records([(0.5, 0.5, 3, 1, 0)] * 4)).cv2 == 0.0


@pytest.mark.parametrize("bad", [pd.DataFrame(columns=PHASES), pd.DataFrame({"model_ms": [1.0]}), [1, 2]])
def test_phases_without_records_or_columns_are_refused(bad):
    with pytest.raises(InputError) as err:
        service_time_ms(bad)
    assert err.value.field == "phases"


def test_the_whole_time_per_request_counts_the_queue_too():
    # whole times: 10 + 50, 12 + 50, 16 + 50 ms (each record's queue is 50 ms): median 62
    assert service_time_ms(_records([(1, 1, 2, 5, 1), (1, 1, 2, 7, 1), (1, 1, 2, 11, 1)])).with_queue_median_ms == 62.0


def test_the_overhead_is_what_the_client_sees_beyond_the_servers_whole_time():
    service = service_time_ms(_records([(1, 1, 2, 5, 1)] * 3))  # 10 ms busy + 50 ms queue per request
    light = LoadCurve(100.0, 0.5, (_Run(20.0, tuple(float(i) for i in range(55, 76))),))  # p50: the 11th, 65 ms
    # 65 - 60 = 5 ms: the queue a busy machine puts even into a light load stays on the server's side
    assert client_overhead_ms(light, service) == 5.0
    below = LoadCurve(100.0, 0.5, (_Run(20.0, (30.0, 31.0, 32.0)),))
    assert client_overhead_ms(below, service) == 0.0  # the server's time is the larger: no overhead
    with pytest.raises(InputError):
        client_overhead_ms(light, 10.0)


@dataclass
class _Run:
    """What LoadCurve reads of a LoadGen run: its rates and its latencies' percentiles."""

    qps_offered: float
    latencies_ms: tuple[float, ...]

    @property
    def qps_achieved(self):
        return self.qps_offered

    @property
    def requests(self):
        return len(self.latencies_ms)

    def percentiles(self, quantiles):
        return latency_percentiles(self.latencies_ms, quantiles)


def test_the_table_gives_each_rate_its_percentiles_and_verdict():
    fast = _Run(20.0, tuple(float(i) for i in range(1, 101)))  # 1..100 ms
    slow = _Run(40.0, tuple(float(100 + i) for i in range(1, 101)))  # 101..200 ms
    curve = LoadCurve(slo_ms=150.0, quantile=0.9, runs=(fast, slow))
    t = curve.table()
    # LoadGen's rank floor(n q): of 100 latencies the p90 is the 91st smallest, the p50 the 51st
    assert list(t["p90_ms"]) == [91.0, 191.0] and list(t["p50_ms"]) == [51.0, 151.0]
    # the p90 interval of 100 (Conover 3.2), K ~ binomial(100, 0.9): P(K <= 83) = 0.0206 <= 0.025 < P(K <= 84) = 0.0399
    # gives the low rank 84; P(K <= 94) = 0.9424 < 0.975 <= P(K <= 95) = 0.9763 the high rank 96 (scipy.stats.binom)
    assert t["p90_ci95_low_ms"][0] == 84.0 and t["p90_ci95_high_ms"][0] == 96.0
    assert list(t["slo_verdict"]) == ["meets", "misses"]  # 84-96 below 150; 184-196 above it
    points = curve.points()
    assert [(p.qps, p.value_ms) for p in points] == [(20.0, 91.0), (40.0, 191.0)]


def test_the_prediction_beside_the_measurement_is_the_queueing_models():
    run = _Run(50.0, tuple(float(i) for i in range(1, 101)))
    table = with_prediction(LoadCurve(100.0, 0.9, (run,)), 10.0, servers=1, model="M/D/c")
    # M/D/1 with the wait's M/M/1 shape halved: P(W > t) = rho exp(-2 (mu - lambda) t); S = 10 ms, 50/s: rho = 0.5,
    # mu - lambda = 0.05 per ms; P(W > t) = 0.1 at t = ln(5) / 0.1 = 16.094 ms; p90 = 10 + 16.094 ms
    assert table.loc[0, "utilisation"] == pytest.approx(0.5)
    assert table.loc[0, "predicted_p90_ms"] == pytest.approx(10.0 + math.log(5) / 0.1, rel=1e-6)
    shifted = with_prediction(LoadCurve(100.0, 0.9, (run,)), 10.0, overhead_ms=4.0)  # the client's own 4 ms on top
    assert shifted.loc[0, "predicted_p90_ms"] == pytest.approx(14.0 + math.log(5) / 0.1, rel=1e-6)
    over = with_prediction(LoadCurve(100.0, 0.9, (_Run(150.0, run.latencies_ms),)), 10.0)
    assert math.isinf(over.loc[0, "predicted_p90_ms"])  # utilisation 1.5: no steady state


def test_the_plot_says_in_words_what_it_draws():
    run = _Run(50.0, tuple(float(i) for i in range(1, 101)))
    table = with_prediction(LoadCurve(100.0, 0.9, (run,)), 10.0)
    ax = plot_load_curve(table, 10.0, 1, 100.0, quantile=0.9)
    text = description(ax.figure)
    assert "capacity 100/s" in text and "50/s: 91.0 ms" in text and "SLO is 100 ms" in text
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert legend == {"M/D/c p90, predicted", "p90, measured", "SLO 100 ms"}


@pytest.mark.parametrize(
    "rates, field",
    [([], "rates_qps"), ([10.0, 10.0], "rates_qps"), ([10.0, -1.0], "rates_qps[1]"), ("10", "rates_qps")],
)
def test_bad_rates_are_refused_before_any_run(rates, field):
    with pytest.raises(InputError) as err:
        measure_load_curve(["http://127.0.0.1:9"], rates, duration_s=0.5, slo_ms=50.0)
    assert err.value.field == field
