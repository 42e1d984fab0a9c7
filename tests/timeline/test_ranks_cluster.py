"""Ranks read on a Dask cluster where they lie (gpucost_lab.timeline.ranks_cluster): a LocalCluster gives what the
process pool gives, for `analyze DIR/` and `diff` of two folders; traces on each worker's own node (a stand-in client
whose workers each see their own folder) are read there, named host:path, and ranks missing or held twice across the
workers are refused; an unreachable scheduler and a file a worker cannot read are one line, exit 2."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from contextlib import contextmanager

import pytest

from gpucost_lab import InputError
from gpucost_lab import timeline as tl
from gpucost_lab.cli.main import main
from gpucost_lab.timeline import ranks_cluster

from .delayed_ranks import schedule, write_job, write_rank


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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_file_a_worker_cannot_read_is_one_line_naming_the_worker_and_the_file(capsys, tmp_path):
    write_job(tmp_path, 2, delayed=1)
    (tmp_path / "rank1.json").write_text('{"traceEvents": [{"ph": "X", "ts": 1')
    assert main(["analyze", str(tmp_path), "--scheduler", "local", "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "on worker tcp://" in err[0] and "rank1.json" in err[0] and "not a readable trace" in err[0]
    )


@pytest.mark.slow
def test_an_unreachable_scheduler_is_one_line_within_the_timeout(capsys, monkeypatch):
    monkeypatch.setattr(ranks_cluster, "SCHEDULER_TIMEOUT_S", 2)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["analyze", "/nowhere", "--scheduler", f"tcp://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--scheduler" in err[0] and "within 2 s" in err[0] and str(port) in err[0]


@pytest.mark.slow
def test_without_a_scheduler_nothing_imports_dask(sampled_dir):
    code = (
        "import sys; from gpucost_lab.cli.main import main; main(['analyze', sys.argv[1], '--json']); "
        "sys.exit(bool({'dask', 'distributed'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(sampled_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["straggler"]["rank"] == 1


class _Future:
    def __init__(self, func, args):
        self._func, self._args = func, args

    def result(self):
        return self._func(*self._args)


class _Client:
    """A stand-in for a Dask client whose workers each see their own folder as the paths asked (the nodes' local
    disks), running each task where it is pinned, at once."""

    def __init__(self, views: dict):
        self.views, self.pinned = views, []

    def run(self, func, paths):
        return {worker: func(folder) for worker, folder in self.views.items()}

    def submit(self, func, *args, workers=None, **_):
        self.pinned.append(workers)
        return _Future(func, args)

    def cancel(self, futures):
        pass


def _stand_in(monkeypatch, views: dict) -> _Client:
    client = _Client(views)

    @contextmanager
    def opened(scheduler, workers=None):
        yield client

    monkeypatch.setattr(ranks_cluster, "open_cluster", opened)
    return client


def _node_folders(tmp_path, ranks_on: dict) -> dict:
    """A folder per worker, holding the traces of the ranks it lists (one 4-rank job, rank 2 delayed)."""
    plan = schedule(4, delayed=2)
    views = {}
    for worker, ranks in ranks_on.items():
        folder = tmp_path / worker.split("//")[1].split(":")[0]
        for r in ranks:
            write_rank(folder / f"rank{r}.json", r, plan, world_size=4)
        views[worker] = folder
    return views


def test_traces_on_each_workers_node_are_read_there(tmp_path, monkeypatch):
    views = _node_folders(tmp_path, {"tcp://node-a:40000": [0, 1], "tcp://node-b:40000": [2, 3]})
    client = _stand_in(monkeypatch, views)
    job = tl.load_ranks("/traces/on/each/node", scheduler="tcp://scheduler:8786")
    assert job.rank_numbers == (0, 1, 2, 3)
    assert client.pinned == [["tcp://node-a:40000"]] * 2 + [["tcp://node-b:40000"]] * 2  # each read where it lies
    assert [r.path.split(":")[0] for r in job.ranks] == ["node-a", "node-a", "node-b", "node-b"]
    assert tl.straggler(job).rank == 2
    one_folder = views["tcp://node-a:40000"]
    shared = _stand_in(monkeypatch, {"tcp://node-a:40000": one_folder, "tcp://node-b:40000": one_folder})
    assert tl.load_ranks("/shared", scheduler="tcp://scheduler:8786").rank_numbers == (0, 1)
    assert shared.pinned == [None, None]  # one folder every worker sees: each file read once, by any worker


def test_ranks_held_twice_or_by_no_worker_are_refused(tmp_path, monkeypatch):
    _stand_in(monkeypatch, _node_folders(tmp_path / "twice", {"tcp://node-a:1": [0, 1], "tcp://node-b:1": [1, 2, 3]}))
    with pytest.raises(ValueError, match=r"node-a:.*rank1\.json and node-b:.*rank1\.json: both are rank 1"):
        tl.load_ranks("/traces", scheduler="tcp://scheduler:8786")
    _stand_in(monkeypatch, _node_folders(tmp_path / "gap", {"tcp://node-a:1": [0, 1], "tcp://node-b:1": [3]}))
    with pytest.raises(ValueError, match="ranks missing across the workers: no worker holds rank 2"):
        tl.load_ranks("/traces", scheduler="tcp://scheduler:8786")
    _stand_in(monkeypatch, {"tcp://node-a:1": tmp_path / "nowhere"})
    with pytest.raises(ValueError, match="no worker of the cluster holds a trace there"):
        tl.load_ranks("/traces", scheduler="tcp://scheduler:8786")


def test_workers_for_a_remote_scheduler_are_refused_by_name():
    with pytest.raises(InputError, match="workers"):
        with ranks_cluster.open_cluster("tcp://scheduler:8786", workers=2):
            pass
