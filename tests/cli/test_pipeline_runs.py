"""``gpucost-lab pipeline`` (gpucost_lab.cli.pipeline) run: one JSON row per setting whose figures follow from its raw
epoch times, a text line per setting, and the README documents every key.

The runs here are real but tiny (1-2 batches, 2 epochs: torch's data loader and a training step, some with a worker
process); what is asserted is how the figures follow from the raw times the command prints, never how fast this
machine is."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from gpucost_lab.cli.main import main

from . import helpers

pytestmark = pytest.mark.slow

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
FIGURES = ("loader_samples_per_s", "loop_samples_per_s", "data_wait_fraction", "first_batch_s", "cost_per_sample_usd")


def run_json(capsys, *argv):
    return helpers.run_json(capsys, "pipeline", *argv)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def test_one_row_per_setting_and_each_figure_from_its_raw_times(capsys):
    out = run_json(capsys, "--workers", "0", "1", "--batches", "2", "--repeats", "2", "--batch-size", "8")
    assert [row["setting"] for row in out["settings"]] == ["workers=0", "workers=1"]
    assert [row["num_workers"] for row in out["settings"]] == [0, 1]
    assert (out["batches_per_epoch"], out["repeats"], out["batch_size"], out["device"]) == (2, 2, 8, "cpu")
    for row in out["settings"]:
        samples = 2 * 8  # batches x batch size, per epoch
        assert len(row["loop_times_s"]) == len(row["loader_times_s"]) == len(row["wait_times_s"]) == 2
        for name in FIGURES:
            low, mid, high = (row[name][k] for k in ("ci95_low", "geomean", "ci95_high"))
            assert 0 < low <= mid <= high
        assert row["loop_samples_per_s"]["geomean"] == pytest.approx(samples / geomean(row["loop_times_s"]))
        assert row["loader_samples_per_s"]["geomean"] == pytest.approx(samples / geomean(row["loader_times_s"]))
        shares = [w / t for w, t in zip(row["wait_times_s"], row["loop_times_s"])]
        assert all(0 < s <= 1 for s in shares)
        assert row["data_wait_fraction"]["geomean"] == pytest.approx(geomean(shares))
        # $2.10 an hour: each epoch's seconds per sample x 2.10 / 3600
        assert row["cost_per_sample_usd"]["geomean"] == pytest.approx(
            geomean(row["loop_times_s"]) / samples * 2.10 / 3600
        )
        assert all(f <= w for f, w in zip(row["first_batch_times_s"], row["wait_times_s"]))


def test_worker_settings_apply_to_the_rows_with_workers(capsys):
    flags = ["--persistent-workers", "--prefetch-factor", "3", "--pin-memory"]
    out = run_json(capsys, "--workers", "0", "1", "--batches", "1", "--repeats", "2", *flags)
    zero, one = out["settings"]
    assert (zero["persistent_workers"], zero["prefetch_factor"], zero["pin_memory"]) == (False, None, True)
    assert (one["persistent_workers"], one["prefetch_factor"]) == (True, 3)
    assert one["setting"] == "workers=1, prefetch=3, persistent, pinned"


def test_the_text_has_a_line_per_setting(capsys):
    assert main(["pipeline", "--workers", "0", "--batches", "1", "--repeats", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("workers=0 ") and "%" in lines[2] and "$" in lines[2]


def _keys(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _keys(v)
    elif isinstance(value, list):
        for v in value:
            yield from _keys(v)


def test_every_json_key_is_in_the_readme(capsys):
    documented = set(re.findall(r"`([a-z0-9_]+)`", README)) | {
        k for group in re.findall(r"`\{([a-z0-9_, ]+)\}`", README) for k in group.replace(" ", "").split(",")
    }
    out = run_json(capsys, "--workers", "0", "--batches", "1", "--repeats", "2")
    assert set(_keys(out)) - documented == set()
    assert "gpucost-lab pipeline" in README
