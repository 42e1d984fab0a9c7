"""Before and after folders of one job's rank traces compared rank by rank: :func:`diff_ranks` (``gpucost-lab diff
BEFORE_DIR --after AFTER_DIR``), one :func:`~gpucost_lab.timeline.diff` per rank.

Each side's ranks are numbered as :func:`~gpucost_lab.timeline.load_ranks` numbers them (the file's
``distributedInfo.rank``, else a ``rank<N>`` in its name, else its place in sorted order), and both sides must hold
the same ranks. The traces are read twice, once for their rank and once by ``diff``, so that at most one rank's pair is
held at a time.
"""

from __future__ import annotations

from pathlib import Path

from gpucost_lab.timeline.diff import TraceDiff, diff
from gpucost_lab.timeline.load import load_trace
from gpucost_lab.timeline.ranks_load import rank_in_name, trace_files


def _by_rank(folder) -> dict[int, Path]:
    """The folder's trace files by rank number; ValueError naming both files of a rank said twice."""
    files = trace_files(folder)
    said = [load_trace(f).rank for f in files]
    named = [rank_in_name(str(f)) for f in files]
    ranks: list[int | None] = [r if r is not None else n for r, n in zip(said, named)]
    if all(r is None for r in ranks):
        ranks = list(range(len(files)))
    out: dict[int, Path] = {}
    for rank, path in zip(ranks, files):
        if rank is None:
            raise ValueError(
                f"{path}: no rank (no distributedInfo.rank, no 'rank<N>' in its name) beside files with one"
            )
        if rank in out:
            raise ValueError(f"{out[rank]} and {path}: both are rank {rank}; a job has one trace per rank")
        out[rank] = path
    return out


def diff_ranks(before, after, *, top: int = 5) -> dict[int, TraceDiff]:
    """Each rank's :class:`~gpucost_lab.timeline.TraceDiff`, after against before, by rank ascending. ``before`` and
    ``after``: a folder of rank traces each (or what :func:`~gpucost_lab.timeline.load_ranks` takes). ValueError naming
    the folders when their ranks differ."""
    sides = {"before": _by_rank(before), "after": _by_rank(after)}
    if set(sides["before"]) != set(sides["after"]):
        only = {w: sorted(set(s) - set(sides["after" if w == "before" else "before"])) for w, s in sides.items()}
        raise ValueError(
            f"{before} and {after}: the two sides must hold the same ranks; only before: {only['before']}, "
            f"only after: {only['after']}"
        )
    return {rank: diff(path, sides["after"][rank], top=top) for rank, path in sorted(sides["before"].items())}
