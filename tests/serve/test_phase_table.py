"""phase_percentiles and noisiest_phase: per-phase order statistics and their intervals picked by hand, the ranks from
scipy's binomial distribution, NaN ends where too few requests, and the serve-bench JSON as the percentiles module's
own figures give it."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom

from gpucost_lab._validate import InputError
from gpucost_lab.serve.app import PHASE_FIELDS, RECORD_FIELDS
from gpucost_lab.serve.percentiles import latency_percentiles
from gpucost_lab.serve.phase_table import noisiest_phase, percentiles_json, phase_percentiles

N = 200


def _ranks(n: int, q: float) -> tuple[int | None, int | None]:
    """Conover's equal-tailed 95% ranks from scipy: l the largest with P(K <= l - 1) <= 0.025, u the smallest with
    P(K <= u - 1) >= 0.975, K ~ binomial(n, q); None beyond the sample."""
    cdf = binom.cdf(np.arange(n + 1), n, q)
    lows = [rank for rank in range(1, n + 1) if cdf[rank - 1] <= 0.025]
    highs = [rank for rank in range(1, n + 1) if cdf[rank - 1] >= 0.975]
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _records() -> pd.DataFrame:
    """200 records: model_ms takes each of 1..200 once (rank r holds r ms), serialize_ms is 1 ms but for two 200 ms
    stalls, queue_ms is 0 throughout, the other phases 0.5 ms; shuffled, with the server's other columns."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({field: np.full(N, 0.5) for field in PHASE_FIELDS})
    frame["model_ms"] = rng.permutation(np.arange(1.0, N + 1))
    frame["serialize_ms"] = rng.permutation(np.r_[np.ones(N - 2), [200.0, 200.0]])
    frame["queue_ms"] = 0.0
    frame["request"] = np.arange(1, N + 1)
    frame["start_s"] = 0.0
    frame["batch_size"] = 1
    frame.insert(0, "instance", 0)
    return frame


def test_percentiles_and_intervals_by_hand():
    table = phase_percentiles(_records())
    assert list(table.index) == ["receive_decode", "preprocess", "queue", "model", "serialize", "send"]
    assert list(table.columns) == [
        "p50_ms",
        "p50_ci95_low",
        "p50_ci95_high",
        "p99_ms",
        "p99_ci95_low",
        "p99_ci95_high",
        "p99_over_p50",
    ]
    # LoadGen's rank floor(n q) + 1: p50 of 200 is the 101st; p99 the 199th (200 x 0.99 is exactly 198.0 in float
    # arithmetic: 0.99 is stored as 0.98999999999999999112, times 200 rounds to 198.0).
    model, serialize = table.loc["model"], table.loc["serialize"]
    assert model["p50_ms"] == 101.0 and model["p99_ms"] == 199.0
    low50, high50 = _ranks(N, 0.5)  # model_ms's rank r holds r ms: the ends are the ranks themselves
    assert (model["p50_ci95_low"], model["p50_ci95_high"]) == (float(low50), float(high50))
    low99, high99 = _ranks(N, 0.99)
    # no rank of 200 bounds p99 from above: P(K <= 199) = 1 - 0.99^200 = 0.866 < 0.975
    assert high99 is None and 1 - 0.99**200 < 0.975
    assert model["p99_ci95_low"] == float(low99) and math.isnan(model["p99_ci95_high"])
    assert model["p99_over_p50"] == pytest.approx(199 / 101)
    # serialize: ranks 1..198 hold 1 ms, 199 and 200 the stalls; the p99 is a stall, its lower end a plain 1 ms
    assert serialize["p50_ms"] == 1.0 and serialize["p99_ms"] == 200.0
    assert low99 <= 198 and serialize["p99_ci95_low"] == 1.0
    assert serialize["p99_over_p50"] == 200.0
    assert math.isnan(table.loc["queue", "p99_over_p50"])  # a p50 of 0 has no ratio
    assert table.loc["send", "p99_ms"] == 0.5 and table.loc["send", "p99_over_p50"] == 1.0
    # p99 / p50: serialize 200 / 1 = 200, model 199 / 101 = 1.97, send 1, queue none (a p50 of 0)
    assert noisiest_phase(table) == "serialize"


def test_the_noisiest_phase_is_the_one_whose_tail_stands_furthest_above_its_middle():
    # model: slow but steady, 100 ms with every tenth request 150 ms (p50 100, p99 150: spread 50 ms, ratio 1.5);
    # preprocess: fast but noisy, 0.1 ms with every tenth request 30 ms (p50 0.1, p99 30: spread 29.9 ms, ratio 300,
    # above the stalled serialize of _records, 200 / 1)
    frame = _records()
    tenth = np.arange(N) % 10 == 0
    frame["model_ms"] = np.where(tenth, 150.0, 100.0)
    frame["preprocess_ms"] = np.where(tenth, 30.0, 0.1)
    table = phase_percentiles(frame)
    assert table.loc["model", "p99_ms"] - table.loc["model", "p50_ms"] == 50.0
    assert table.loc["preprocess", "p99_over_p50"] == pytest.approx(300.0)
    assert noisiest_phase(table) == "preprocess"
    # a queue far noisier still (0.01 ms, every tenth request 50 ms: ratio 5000) is the wait, not the cause
    frame["queue_ms"] = np.where(tenth, 50.0, 0.01)
    assert phase_percentiles(frame).loc["queue", "p99_over_p50"] == pytest.approx(5000.0)
    assert noisiest_phase(phase_percentiles(frame)) == "preprocess"


def test_too_few_records_leave_nan_ends_and_no_records_leave_nan_rows():
    five = _records().head(5)
    table = phase_percentiles(five)
    # of 5 values no rank bounds the median at 95%: P(K <= 0) = 0.5^5 = 0.031 > 0.025
    assert table["p50_ci95_low"].isna().all() and table["p50_ci95_high"].isna().all()
    assert table["p50_ms"].notna().all()
    empty = phase_percentiles(pd.DataFrame(columns=["instance", *RECORD_FIELDS]))
    assert empty.isna().all().all() and len(empty) == len(PHASE_FIELDS)
    with pytest.raises(InputError) as err:
        noisiest_phase(empty)
    assert err.value.field == "table"


def test_other_quantiles_name_their_columns_and_ratio():
    table = phase_percentiles(_records(), quantiles=(0.9, 0.5))
    assert list(table.columns[:3]) == ["p50_ms", "p50_ci95_low", "p50_ci95_high"]
    assert list(table.columns[-1:]) == ["p90_over_p50"]
    assert table.loc["model", "p90_ms"] == 181.0  # rank floor(200 x 0.9) + 1 = 181
    assert "p99_over_p50" not in phase_percentiles(_records(), quantiles=(0.99,)).columns


def test_the_json_is_the_percentiles_modules_own():
    frame = _records().head(60)
    out = percentiles_json(phase_percentiles(frame, (0.5, 0.9, 0.99)), (0.5, 0.9, 0.99))
    for field in PHASE_FIELDS:
        expected = {name: p.to_dict() for name, p in latency_percentiles(frame[field].tolist()).items()}
        assert out[field.removesuffix("_ms")] == expected
    empty = pd.DataFrame(columns=list(PHASE_FIELDS))
    assert set(percentiles_json(phase_percentiles(empty, (0.5, 0.9, 0.99)), (0.5, 0.9, 0.99)).values()) == {None}


@given(st.lists(st.floats(0.0, 1e4, allow_nan=False), min_size=1, max_size=400))
def test_each_interval_holds_its_value_and_the_tail_is_above_the_middle(values):
    frame = pd.DataFrame({field: values for field in PHASE_FIELDS})
    table = phase_percentiles(frame)
    for _, row in table.iterrows():
        assert row["p50_ms"] <= row["p99_ms"]
        for name in ("p50", "p99"):
            assert not row[f"{name}_ci95_low"] > row[f"{name}_ms"]  # NaN or at most the value
            assert not row[f"{name}_ci95_high"] < row[f"{name}_ms"]
        assert min(values) <= row["p50_ms"] <= max(values)


@pytest.mark.parametrize(
    ("phases", "quantiles", "field"),
    [
        ([1, 2, 3], (0.5,), "phases"),
        (pd.DataFrame({"model_ms": [1.0]}), (0.5,), "phases"),
        (pd.DataFrame({f: [1.0, -1.0] for f in PHASE_FIELDS}), (0.5,), "phases['receive_decode_ms']"),
        (pd.DataFrame({f: [1.0, math.inf] for f in PHASE_FIELDS}), (0.5,), "phases['receive_decode_ms']"),
        (pd.DataFrame({f: ["x"] for f in PHASE_FIELDS}), (0.5,), "phases['receive_decode_ms']"),
        (pd.DataFrame({f: [1.0] for f in PHASE_FIELDS}), (), "quantiles"),
        (pd.DataFrame({f: [1.0] for f in PHASE_FIELDS}), (1.5,), "quantiles[0]"),
        (pd.DataFrame({f: [1.0] for f in PHASE_FIELDS}), (0.5, 0.5), "quantiles"),
    ],
)
def test_bad_input_names_its_field(phases, quantiles, field):
    with pytest.raises(InputError) as err:
        phase_percentiles(phases, quantiles)
    assert err.value.field == field


def test_noisiest_phase_needs_the_table():
    with pytest.raises(InputError) as err:
        noisiest_phase(pd.DataFrame({"p50_ms": [1.0]}))
    assert err.value.field == "table"
