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
    assert measured_answers.earlier_intervals("07.2") == [(0.57, 0.63), (0.52, 0.76)]
    assert measured_answers.earlier_intervals("06.3") == []


def test_old_malformed_and_surplus_entries_are_dropped(store):
    now = time.time()
    store.parent.mkdir(parents=True)
    old = now - measured_answers.KEEP_S - 60
    store.write_text(json.dumps({"07.2": [[0.1, 0.2, old], ["x", 1, now], [0.9, 0.8, now], [0.5, 0.6, now]]}))
    assert measured_answers.earlier_intervals("07.2") == [(0.5, 0.6)]  # too old, not numbers, low above high: out
    for i in range(measured_answers.KEEP_PER_QUESTION + 5):
        measured_answers.remember("07.2", i, i + 1)
    kept = measured_answers.earlier_intervals("07.2")
    assert len(kept) == measured_answers.KEEP_PER_QUESTION and kept[-1] == (24, 25)  # the newest 20 of 26
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
        results = [None, SimpleNamespace(comparison=SimpleNamespace(interval=Interval(*interval)))]
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
