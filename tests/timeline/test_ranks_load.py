"""Loading a job's rank traces (gpucost_lab.timeline.ranks_load): where each rank's number comes from, and the
inputs refused with a message naming the path or the field."""

from __future__ import annotations

import json

import pytest

from gpucost_lab import InputError
from gpucost_lab import timeline as tl

from .test_ranks import _rank_trace, _step


@pytest.fixture
def job_dir(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    _rank_trace(folder / "r0.json", 0, [("gemm", 7, 10, 40)], (100, 100))
    _rank_trace(folder / "r1.json", 1, [("gemm", 7, 10, 50)], (120, 100))
    return folder


def test_ranks_come_from_file_names_or_positions_when_the_files_do_not_say(tmp_path):
    named, plain = tmp_path / "named", tmp_path / "plain"
    named.mkdir(), plain.mkdir()
    for n in (3, 1):
        _rank_trace(named / f"job_rank{n}.json", None, [("gemm", 7, 10, 40 + n)], (100, 100))
        _rank_trace(plain / f"trace{n}.json", None, [("gemm", 7, 10, 40 + n)], (100, 100))
    by_name = tl.rank_table(tl.load_ranks(named, workers=1))
    assert by_name["rank"].tolist() == [1, 3] and by_name["busy_us"].tolist() == [41, 43]
    by_place = tl.rank_table(tl.load_ranks(plain, workers=1))  # sorted names: trace1.json, trace3.json
    assert by_place["rank"].tolist() == [0, 1] and by_place["busy_us"].tolist() == [41, 43]


def test_two_files_of_one_rank_are_refused_naming_both(tmp_path):
    for name in ("x.json", "y.json"):
        _rank_trace(tmp_path / name, 0, [("gemm", 7, 10, 40)], (100, 100))
    with pytest.raises(ValueError, match=r"x\.json and .*y\.json: both are rank 0"):
        tl.load_ranks(tmp_path, workers=1)


def test_cpu_and_gpu_traces_are_not_one_job(tmp_path):
    _rank_trace(tmp_path / "gpu.json", 0, [("gemm", 7, 10, 40)], (100, 100))
    cpu = {"distributedInfo": {"rank": 1}, "traceEvents": [_step(1, 0, 50),
           {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 20}]}  # fmt: skip
    (tmp_path / "cpu.json").write_text(json.dumps(cpu))
    with pytest.raises(ValueError, match="cpu trace .* cuda trace|cuda trace .* cpu trace"):
        tl.load_ranks(tmp_path, workers=1)


@pytest.mark.parametrize("workers", [0, -1, 1.5, "2"])
def test_a_bad_worker_count_is_refused_by_name(job_dir, workers):
    with pytest.raises(InputError, match="workers"):
        tl.load_ranks(job_dir, workers=workers)


def test_an_empty_folder_and_a_missing_path_are_named(tmp_path):
    with pytest.raises(ValueError, match="an empty folder"):
        tl.load_ranks(tmp_path)
    with pytest.raises(ValueError, match="no such trace file or folder"):
        tl.load_ranks(tmp_path / "nowhere")
