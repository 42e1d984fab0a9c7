"""Ranks read on a real Dask cluster (gpucost_lab.timeline.ranks_cluster): a LocalCluster gives what the process pool
gives, for `analyze DIR/` and `diff` of two folders; an unreachable scheduler and a file a worker cannot read are
one line, exit 2; and without a scheduler the CLI, in a fresh process, never imports dask. (The placement on each
worker's node, with a stand-in client: tests/timeline/test_ranks_cluster.py.)
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys

import pytest

from gpucost_lab import timeline as tl
from gpucost_lab.cli.main import main
from gpucost_lab.timeline import ranks_cluster

from .delayed_ranks import write_job

pytestmark = pytest.mark.slow


@pytest.fixture
def sampled_dir(tmp_path):
    folder = tmp_path / "sampled"
    folder.mkdir()
    for name in ("sampled_rank0_gpu", "sampled_rank1_gpu"):
        shutil.copy(tl.example_trace(name), folder)
    return folder


def _json(capsys, argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_local_cluster_gives_what_the_process_pool_gives(capsys, sampled_dir, tmp_path):
    pool = _json(capsys, ["analyze", str(sampled_dir)])
    assert _json(capsys, ["analyze", str(sampled_dir), "--scheduler", "local", "--workers", "2"]) == pool
    write_job(tmp_path / "before", 3, delayed=1, delay_us=3_000.0)
    write_job(tmp_path / "after", 3, delayed=1, delay_us=500.0)
    sides = [str(tmp_path / "before"), "--after", str(tmp_path / "after")]
    pool = _json(capsys, ["diff", *sides])
    assert _json(capsys, ["diff", *sides, "--scheduler", "local"]) == pool
    # rank 0 waits 2,500 us less in each of its 4 all-reduces a step: its step time is shorter, a verdict per rank
    assert [r["rank"] for r in pool["ranks"]] == [0, 1, 2]


def test_a_file_a_worker_cannot_read_is_one_line_naming_the_worker_and_the_file(capsys, tmp_path):
    write_job(tmp_path, 2, delayed=1)
    (tmp_path / "rank1.json").write_text('{"traceEvents": [{"ph": "X", "ts": 1')
    assert main(["analyze", str(tmp_path), "--scheduler", "local", "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "on worker tcp://" in err[0] and "rank1.json" in err[0] and "not a readable trace" in err[0]
    )


def test_an_unreachable_scheduler_is_one_line_within_the_timeout(capsys, monkeypatch):
    monkeypatch.setattr(ranks_cluster, "SCHEDULER_TIMEOUT_S", 2)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["analyze", "/nowhere", "--scheduler", f"tcp://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--scheduler" in err[0] and "within 2 s" in err[0] and str(port) in err[0]


def test_without_a_scheduler_nothing_imports_dask(sampled_dir):
    code = (
        "import sys; from gpucost_lab.cli.main import main; main(['analyze', sys.argv[1], '--json']); "
        "sys.exit(bool({'dask', 'distributed'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(sampled_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["straggler"]["rank"] == 1
