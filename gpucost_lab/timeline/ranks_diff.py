"""Before and after folders of one job's rank traces compared rank by rank: :func:`diff_ranks` (``gpucost-lab diff
BEFORE_DIR --after AFTER_DIR``), one :func:`~gpucost_lab.timeline.diff` per rank.

Each side's ranks are numbered as :func:`~gpucost_lab.timeline.load_ranks` numbers them (the file's
``distributedInfo.rank``, else a ``rank<N>`` in its name, else its place in sorted order), and both sides must hold
the same ranks. The traces are read twice, once for their rank and once by ``diff``, so that at most one rank's pair is
held at a time. With ``scheduler`` (a Dask scheduler's address, or ``"local"``), each read is a task on the cluster's
workers, where the traces lie (:mod:`gpucost_lab.timeline.ranks_cluster`): a rank's pair is compared on the worker
that holds both, and only its :class:`~gpucost_lab.timeline.TraceDiff` comes back.
"""

from __future__ import annotations

from pathlib import Path

from gpucost_lab.timeline.diff import TraceDiff, diff
from gpucost_lab.timeline.load import load_trace
from gpucost_lab.timeline.rank_files import rank_in_name, trace_files


def _numbered(labels: list[str], said: list[int | None]) -> dict[int, int]:
    """Each rank's place among the files named ``labels`` (each file's own rank, else its name's, else its place);
    ValueError naming both files of a rank said twice."""
    named = [rank_in_name(label) for label in labels]
    ranks: list[int | None] = [r if r is not None else n for r, n in zip(said, named)]
    if all(r is None for r in ranks):
        ranks = list(range(len(labels)))
    out: dict[int, int] = {}
    for i, (rank, label) in enumerate(zip(ranks, labels)):
        if rank is None:
            raise ValueError(
                f"{label}: no rank (no distributedInfo.rank, no 'rank<N>' in its name) beside files with one"
            )
        if rank in out:
            raise ValueError(f"{labels[out[rank]]} and {label}: both are rank {rank}; a job has one trace per rank")
        out[rank] = i
    return out


def _by_rank(folder) -> dict[int, Path]:
    """The folder's trace files by rank number."""
    files = trace_files(folder)
    places = _numbered([str(f) for f in files], [load_trace(f).rank for f in files])
    return {rank: files[i] for rank, i in places.items()}


def file_rank(path: str) -> int | None:
    """The rank a trace file says of itself (None when it does not): a worker's task."""
    return load_trace(path).rank


def _same_ranks(before, after, sides: dict) -> None:
    if set(sides["before"]) != set(sides["after"]):
        only = {w: sorted(set(s) - set(sides["after" if w == "before" else "before"])) for w, s in sides.items()}
        raise ValueError(
            f"{before} and {after}: the two sides must hold the same ranks; only before: {only['before']}, "
            f"only after: {only['after']}"
        )


def _pair_diff(before: str, after: str, top: int) -> TraceDiff:
    """One rank's before and after compared: a worker's task."""
    return diff(before, after, top=top)


def _on_cluster(before, after, top: int, scheduler: str) -> dict[int, TraceDiff]:
    """:func:`diff_ranks` with each file's rank and each rank's diff a task on the cluster's workers."""
    from gpucost_lab.timeline.ranks_cluster import Placed, on_workers, open_cluster, where_files_lie

    with open_cluster(scheduler) as client:
        sides = {}
        for name, folder in (("before", before), ("after", after)):
            placed = where_files_lie(client, folder)
            places = _numbered([p.label for p in placed], on_workers(client, file_rank, placed))
            sides[name] = {rank: placed[i] for rank, i in places.items()}
        _same_ranks(before, after, sides)
        pairs = []
        for rank in sorted(sides["before"]):
            b, a = sides["before"][rank], sides["after"][rank]
            if None not in (b.worker, a.worker) and b.worker != a.worker:
                raise ValueError(
                    f"rank {rank}: its before trace {b.label} and its after trace {a.label} lie on two workers; diff "
                    "reads both in one task, on the node that holds them"
                )
            pairs.append((rank, Placed(b.path, b.worker or a.worker), a.path))
        done = on_workers(client, _pair_diff, [p for _, p, _ in pairs], top, each=[(a,) for _, _, a in pairs])
    return {rank: d for (rank, _, _), d in zip(pairs, done)}


def diff_ranks(before, after, *, top: int = 5, scheduler: str | None = None) -> dict[int, TraceDiff]:
    """Each rank's :class:`~gpucost_lab.timeline.TraceDiff`, after against before, by rank ascending. ``before`` and
    ``after``: a folder of rank traces each (or what :func:`~gpucost_lab.timeline.load_ranks` takes). ValueError naming
    the folders when their ranks differ. ``scheduler``: None (here, one rank at a time), ``"local"`` or a Dask
    scheduler's address (module doc)."""
    if scheduler is not None:
        return _on_cluster(before, after, top, scheduler)
    sides = {"before": _by_rank(before), "after": _by_rank(after)}
    _same_ranks(before, after, sides)
    return {rank: diff(path, sides["after"][rank], top=top) for rank, path in sorted(sides["before"].items())}
