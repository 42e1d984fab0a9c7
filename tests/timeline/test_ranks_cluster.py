"""Ranks read on a Dask cluster where they lie (gpucost_lab.timeline.ranks_cluster), with a stand-in client whose
workers each see their own folder (the nodes' local disks): the traces on each worker's node are read there, named
host:path, ranks missing or held twice across the workers are refused, and workers for a remote scheduler are
refused by name. A real LocalCluster, an unreachable scheduler and the CLI without one are
tests/timeline/test_ranks_cluster_dask.py.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from gpucost_lab import InputError
from gpucost_lab import timeline as tl
from gpucost_lab.timeline import ranks_cluster

from .delayed_ranks import schedule, write_rank


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
