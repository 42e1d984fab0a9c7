"""The intervals printed for measured questions are kept between runs, and a measured checkpoint accepts them."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from gpucost_lab.course import measured_answers
from gpucost_lab.course.checkpoints import checkpoint
from gpucost_lab.stats import Interval


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "cache" / "measured-checkpoints.json"
    monkeypatch.setenv(measured_answers.STORE_ENV, str(path))
    return path


def test_an_interval_is_kept_and_read_back_oldest_first(store):
    measured_answers.remember("07.2", 0.57, 0.63)
    measured_answers.remember("07.2", 0.52, 0.76)
    measured_answers.remember("03.1", 0.3, 0.5)
    assert [e[:2] for e in measured_answers.earlier_intervals("07.2")] == [(0.57, 0.63), (0.52, 0.76)]
    assert measured_answers.earlier_intervals("06.3") == []


def test_old_malformed_and_surplus_entries_are_dropped(store):
    now = time.time()
    store.parent.mkdir(parents=True)
    old = now - measured_answers.KEEP_S - 60
    store.write_text(json.dumps({"07.2": [[0.1, 0.2, old], ["x", 1, now], [0.9, 0.8, now], [0.5, 0.6, now]]}))
    assert measured_answers.earlier_intervals("07.2") == [(0.5, 0.6, ())]  # too old, not numbers, low above high: out
    for i in range(measured_answers.KEEP_PER_QUESTION + 5):
        measured_answers.remember("07.2", i, i + 1)
    kept = measured_answers.earlier_intervals("07.2")
    assert len(kept) == measured_answers.KEEP_PER_QUESTION and kept[-1][:2] == (24, 25)  # the newest 20 of 26
    store.write_text("not json")
    assert measured_answers.earlier_intervals("07.2") == []


def test_a_store_that_cannot_be_written_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(measured_answers.STORE_ENV, str(blocker / "sub" / "store.json"))  # a file where a folder goes
    measured_answers.remember("07.2", 0.5, 0.6)
    assert measured_answers.earlier_intervals("07.2") == []


def test_a_measured_checkpoint_accepts_the_figure_an_earlier_run_printed(store, capsys):
    def run(answer, interval):
        first_change = SimpleNamespace(comparison=SimpleNamespace(time_ratio=1.3))  # its plausible mistake
        results = [first_change, SimpleNamespace(comparison=SimpleNamespace(interval=Interval(*interval)))]
        exec(f'checkpoint("07.2", {answer!r})', {"checkpoint": checkpoint, "results": results})

    # first run: 0.60 (0.57-0.63) is displayed; the placeholder fails, and the interval is kept all the same
    with pytest.raises(AssertionError, match="not answered"):
        run(None, (0.6024, 0.5734, 0.6329))
    # second run, the machine busier: 0.70 (0.66-0.74). The first run's 0.60 passes, through the kept interval
    run(0.60, (0.70, 0.66, 0.74))
    assert "✓ 07.2" in capsys.readouterr().out
    # a figure outside both (rounded outward: 0.57-0.64 and 0.66-0.74) still fails, and says both were tried
    with pytest.raises(AssertionError, match=r"outside this run's 95% interval \(and the 2 this machine printed"):
        run(0.65, (0.70, 0.66, 0.74))


def test_one_record_per_interval_printed_with_its_runs_mistakes(store):
    # a check cell run three times prints the same interval three times: one record, the newest, and its mistakes
    for _ in range(3):
        measured_answers.remember("07.2", 0.57, 0.63, [1 / 0.6, 60.0])
    measured_answers.remember("07.2", 0.52, 0.76, [float("inf")])
    assert measured_answers.earlier_intervals("07.2") == [(0.57, 0.63, (1 / 0.6, 60.0)), (0.52, 0.76, ())]
    assert len(json.loads(store.read_text())["07.2"]) == 2


def _chapter_03(ratio, low, high):
    """Chapter 03's names as checkpoint 03.1 reads them: the interleaved cost-per-sample ratio and what sits beside
    it (the step-time ratio 4x the per-sample one at a 4x batch, a dollar figure, the throughput gain)."""
    comparison = SimpleNamespace(unit_cost_interval=Interval(ratio, low, high), time_ratio=4 * ratio)
    cost = {"baseline": SimpleNamespace(geomean=2.4e-8)}
    return {"checkpoint": checkpoint, "comparison": comparison, "cost_per_sample": cost, "gain": 1 / ratio - 1}


def test_a_wide_busy_interval_kept_before_accepts_no_plausible_mistake(store, capsys):
    # a busy run once printed 1.086x (0.915-1.289) for a ratio near 1: the inverse 1/1.086 = 0.921 lies inside it
    measured_answers.remember("03.1 cost-per-sample ratio", 0.915, 1.289)
    # this quiet run prints 1.05x (1.01-1.09); the inverted answer 1/1.05 = 0.952 falls inside the busy interval,
    # so that interval is not used, and the miss says why
    ns = _chapter_03(1.05, 1.01, 1.09)
    with pytest.raises(AssertionError, match=r"1 earlier interval not used: it holds a plausible mistake"):
        exec('checkpoint("03.1", round(1 / 1.05, 2))', ns)
    exec('checkpoint("03.1", 1.05)', ns)  # the honest answer of this run still passes
    # the first run's own figure, 1.09, read from a busy run whose interval holds no mistake of this run, passes
    measured_answers.remember("03.1 cost-per-sample ratio", 1.06, 1.14, [1 / 1.09])
    exec('checkpoint("03.1", 1.12)', _chapter_03(1.03, 1.00, 1.07))
    assert capsys.readouterr().out.count("✓ 03.1") == 2


def test_an_earlier_interval_holding_a_mistake_of_its_own_run_is_not_used(store):
    # the earlier run's inverse (1/0.9 = 1.11) lay inside its own interval 0.80-1.15: not used, whatever this run says
    measured_answers.remember("03.1 cost-per-sample ratio", 0.80, 1.15, [1 / 0.9])
    with pytest.raises(AssertionError, match="not used"):
        exec('checkpoint("03.1", 0.85)', _chapter_03(0.40, 0.38, 0.42))
