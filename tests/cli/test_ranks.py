"""`gpucost-lab analyze DIR/` (or several traces): one job, a row per rank and the straggler per step, checked
against HolisticTraceAnalysis's figures for the two real ranks; bad input in one line with exit status 2."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from timeline.hta_figures import HTA_RANKS, HTA_STRAGGLER

from gpucost_lab.cli.main import main
from gpucost_lab.timeline import example_trace

from .helpers import assert_one_line_naming


@pytest.fixture
def job_dir(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    for name in ("sampled_rank0_gpu", "sampled_rank1_gpu"):
        shutil.copy(example_trace(name), folder)
    return folder


def test_a_folder_gives_a_row_per_rank_equal_to_hta_and_the_straggler(capsys, job_dir):
    assert main(["analyze", str(job_dir), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"ranks", "stragglers", "device", "world_size"} <= out.keys()
    assert (out["device"], out["world_size"]) == ("cuda", 128)
    for row in out["ranks"]:
        hta = HTA_RANKS[row["rank"]]
        assert row["busy_ms"] == pytest.approx(hta["busy_us"] / 1e3, rel=1e-3)
        assert row["idle_ms"] == pytest.approx(hta["idle_us"] / 1e3, rel=1e-3)
    # rank 0 waits for rank 1 10,960.6 us per collective in step 551 and 13,699.6 us in step 552
    # (tests/timeline/test_collective_wait.py works them out from the files' kernels): their geometric mean
    assert out["straggler"]["rank"] == HTA_STRAGGLER["sampled"]["straggler"][0] == 1
    assert out["straggler"]["wait_ms"]["value"] == pytest.approx(math.sqrt(10.9606 * 13.6996))
    assert out["straggler"]["verdict"] == "inconclusive"
    assert out["clock_alignment"] == "one clock (distributedInfo)"
    # HTA's kernel of step 551 starts at ...348,496 us on rank 0 and ...512,687 us on rank 1: one of our collectives
    spreads = [c["spread_ms"] for s in out["stragglers"] if s["step"] == 551 for c in s["per_collective"]]
    assert (512_687 - 348_496) / 1e3 in spreads


def test_the_text_has_a_row_per_rank_and_names_the_straggler(capsys, job_dir):
    assert (
        main(["analyze", str(job_dir / "sampled_rank0_gpu.json.gz"), str(job_dir / "sampled_rank1_gpu.json.gz")]) == 0
    )
    text = capsys.readouterr().out
    assert text.startswith("cuda job: 2 ranks of a world of 128")
    rows = [line.split() for line in text.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows[:2]] == ["0", "1"]
    # step 552: 5 collectives, rank 0 latest on average, the largest spread 92.521 ms (rank 0's third SendRecv
    # starts at ...1,131,066 us, rank 1's at ...1,038,545), the mean (39645 + 45308 + 92521 + 22328 + 1292) / 5 us,
    # rank 0's wait per collective 13.700 ms, 200872 / 211026
    assert ["552", "5", "0", "92.521", "40.219", "13.700", "0.952"] in rows


def test_an_empty_folder_is_one_line(capsys, tmp_path):
    line = assert_one_line_naming(capsys, ["analyze", str(tmp_path)], str(tmp_path))
    assert "an empty folder" in line


@pytest.mark.parametrize("workers", ["0", "-3"])
def test_a_bad_worker_count_names_the_flag(capsys, job_dir, workers):
    assert_one_line_naming(capsys, ["analyze", str(job_dir), "--workers", workers], "--workers")


def test_workers_on_one_trace_is_refused(capsys):
    line = assert_one_line_naming(
        capsys, ["analyze", str(example_trace("cpu_only_small")), "--workers", "2"], "--workers"
    )
    assert "folder or several traces" in line


def test_two_files_of_one_rank_are_one_line_naming_both(capsys, job_dir, tmp_path):
    twin = tmp_path / "twin.json.gz"
    shutil.copy(job_dir / "sampled_rank0_gpu.json.gz", twin)
    line = assert_one_line_naming(capsys, ["analyze", str(job_dir), str(twin)], "both are rank 0")
    assert "twin.json.gz" in line
