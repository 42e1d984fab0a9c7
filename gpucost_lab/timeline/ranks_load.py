"""Loading a distributed job's traces, one file per rank, as one :class:`Job`: :func:`load_ranks`.

The ranks load in parallel, a process per core (``workers``; default: ``min(os.cpu_count(), files)``). The workers
are forked where the system can (Linux), else spawned: a forked worker needs no ``if __name__ == "__main__":``
guard in the calling script and no fresh imports (a second or two each), and it runs only numpy, pandas and the
trace reader on its own file, never torch, so a lock another thread of the parent held at the fork (torch's
thread pool) is never waited on. Memory stays bounded: each worker loads one trace at a time
and sends back only its :class:`RankFigures` (a few figures and a step table; no events), so the parent never holds
a trace's events and the peak is about one trace per worker. ``workers=1`` loads in this process, one at a time.
With ``scheduler`` (a Dask scheduler's address, or ``"local"``), each rank is instead a task on a Dask cluster's
workers, where its trace lies (:mod:`gpucost_lab.timeline.ranks_cluster`); without it nothing imports Dask.

A rank's number is the file's own ``distributedInfo.rank`` (:attr:`Trace.rank`); without it, a ``rank<N>``
(``rank_<N>``, ``rank-<N>``, any case) in the file's name, the last one when there are several; when no file gives
a rank either way, the files' positions in sorted path order (0, 1, ...). A file without a rank beside files with
one is refused (its position would be a guess), as are two files of one rank, and CPU-only traces beside
accelerator traces (or traces of two kinds of accelerator): one job runs on one kind of device.
"""

from __future__ import annotations

import inspect
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import pandas as pd

from gpucost_lab._validate import InputError, integer_at_least
from gpucost_lab.timeline.collective_match import rank_collectives
from gpucost_lab.timeline.idle import IDLE_CATEGORIES, idle_breakdown
from gpucost_lab.timeline.kernels import kernel_breakdown
from gpucost_lab.timeline.load import BusyIdle, Trace, load_trace
from gpucost_lab.timeline.rank_files import rank_in_name, trace_files
from gpucost_lab.timeline.step_figures import per_step
from gpucost_lab.timeline.views import busy_idle, steps

RANK_SOURCES = ("distributedInfo", "file name", "position")


@dataclass(frozen=True, eq=False)
class RankFigures:
    """What the job keeps of one rank's trace (the events are not kept), all times in microseconds:

    - ``path``, ``rank``, ``rank_source`` (one of :data:`RANK_SOURCES`), ``device``, ``world_size`` (None unless the
      file says);
    - ``busy``: :func:`~gpucost_lab.timeline.busy_idle`;
    - ``idle_by_category_us``: :func:`~gpucost_lab.timeline.idle_breakdown`'s ``idle_us`` summed over the streams,
      per category of :data:`~gpucost_lab.timeline.IDLE_CATEGORIES` (0 on a CPU-only trace);
    - ``kernel_pieces_us``: :func:`~gpucost_lab.timeline.kernel_breakdown`'s ``total_us`` by ``kernel_type`` label
      (``"computation"``, ``"computation overlapping communication"``, ...);
    - ``step_us``: each ``ProfilerStep#N``'s number to its duration (host side; a number marked twice: the first);
    - ``step_figures``: :func:`~gpucost_lab.timeline.step_figures.per_step`'s tables, what ``diff`` compares (None
      unless loaded with ``step_figures=True``);
    - ``collectives``: :func:`~gpucost_lab.timeline.collective_match.rank_collectives` (its communication kernels by
      step, in the file's clock) and ``base_time_ns`` (the file's ``baseTimeNanoseconds``, None when absent).
    """

    path: str
    rank: int | None
    rank_source: str
    device: str
    world_size: int | None
    busy: BusyIdle
    idle_by_category_us: dict = field(repr=False)
    kernel_pieces_us: dict = field(repr=False)
    step_us: dict = field(repr=False)
    step_figures: tuple | None = field(default=None, repr=False)
    collectives: pd.DataFrame | None = field(default=None, repr=False)
    base_time_ns: int | None = None


@dataclass(frozen=True, eq=False)
class Job:
    """One distributed job read from its ranks' traces: ``ranks`` by rank number ascending; ``device`` (the ranks'
    one kind); ``world_size`` (the files' ``distributedInfo.world_size``, None where they do not say: it may exceed
    the ranks loaded); ``definitions`` (what the figures were measured under: "course" unless asked otherwise)."""

    ranks: tuple[RankFigures, ...]
    device: str
    world_size: int | None
    definitions: str = "course"

    def rank(self, number: int) -> RankFigures:
        """The figures of rank ``number``; KeyError when the job has no such rank."""
        for r in self.ranks:
            if r.rank == number:
                return r
        raise KeyError(number)

    @property
    def rank_numbers(self) -> tuple[int, ...]:
        return tuple(int(r.rank) for r in self.ranks if r.rank is not None)


# ----------------------------------------------------------------------------------------------- one rank (a worker)
def with_definitions(func: Callable, definitions: str | None) -> dict:
    """The ``definitions`` keyword for ``func`` when it takes one; none for None; InputError when a definition other
    than the course's is asked of a function that knows only the course's."""
    if definitions is None:
        return {}
    if "definitions" in inspect.signature(func).parameters:
        return {"definitions": definitions}
    if definitions == "course":
        return {}
    raise InputError(
        "definitions", f"definitions must be 'course' (the only one this version knows), got {definitions!r}"
    )


def rank_figures(path: Path, definitions: str | None = None, step_figures: bool = False) -> RankFigures:
    """One rank's figures, its rank as the file says (None when it does not): what a worker sends back."""
    trace = load_trace(path)
    return figures_of(trace, definitions, step_figures)


def figures_of(trace: Trace, definitions: str | None = None, step_figures: bool = False) -> RankFigures:
    """The :class:`RankFigures` of a loaded trace (``rank_source`` "distributedInfo"; resolved by the job)."""
    idle = idle_breakdown(trace, **with_definitions(idle_breakdown, definitions))
    by_category = idle.groupby("idle_category")["idle_us"].sum()
    pieces = kernel_breakdown(trace, **with_definitions(kernel_breakdown, definitions))
    marks = steps(trace).drop_duplicates("step")
    return RankFigures(
        path=trace.path,
        rank=trace.rank,
        rank_source=RANK_SOURCES[0],
        device=trace.device,
        world_size=trace.world_size,
        busy=busy_idle(trace, **with_definitions(busy_idle, definitions)),
        idle_by_category_us={c: float(by_category.get(c, 0.0)) for c in IDLE_CATEGORIES},
        kernel_pieces_us=dict(zip(pieces["kernel_type"], pieces["total_us"].astype(float))),
        step_us=dict(zip(marks["step"].astype(int), marks["duration_us"].astype(float))),
        step_figures=per_step(trace) if step_figures else None,
        collectives=rank_collectives(trace),
        base_time_ns=trace.base_time_ns,
    )


# ----------------------------------------------------------------------------------------------- the job
def _in_parallel(task: Callable, files: list[Path], workers: int) -> list[RankFigures]:
    """``task`` on each file, ``workers`` processes at a time (in this process for one); the first error, in file
    order, is raised and the files not yet started are not loaded."""
    if workers == 1:
        return [task(f) for f in files]
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(method))
    try:
        futures = [pool.submit(task, f) for f in files]
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _resolve_ranks(loaded: list[RankFigures]) -> list[RankFigures]:
    """Each rank's number and where it came from (module doc), sorted by rank; ValueError for a clash."""
    named = [rank_in_name(r.path) for r in loaded]
    if all(r.rank is None for r in loaded) and all(n is None for n in named):
        resolved = [replace(r, rank=i, rank_source=RANK_SOURCES[2]) for i, r in enumerate(loaded)]
    else:
        resolved = []
        for r, n in zip(loaded, named):
            if r.rank is None and n is None:
                other = next(o.path for o, m in zip(loaded, named) if o.rank is not None or m is not None)
                raise ValueError(
                    f"{r.path}: no rank (no distributedInfo.rank in the file, no 'rank<N>' in its name) while "
                    f"{other} has one; name it rank<N> or load the ranks that say theirs"
                )
            resolved.append(r if r.rank is not None else replace(r, rank=n, rank_source=RANK_SOURCES[1]))
    by_rank: dict[int, str] = {}
    for r in resolved:
        if r.rank in by_rank:
            raise ValueError(f"{by_rank[r.rank]} and {r.path}: both are rank {r.rank}; a job has one trace per rank")
        by_rank[int(r.rank)] = r.path  # type: ignore[arg-type]
    return sorted(resolved, key=lambda r: int(r.rank))  # type: ignore[arg-type]


def _one_of(ranks: list[RankFigures], what: str, value: Callable[[RankFigures], object]) -> object:
    """The ranks' common ``value`` (None values aside), or ValueError naming two files that differ."""
    said = [(value(r), r.path) for r in ranks if value(r) is not None]
    for v, path in said[1:]:
        if v != said[0][0]:
            raise ValueError(
                f"{said[0][1]} and {path}: {what} {said[0][0]!r} and {v!r}; the ranks of one job share their {what}"
            )
    return said[0][0] if said else None


def _missing_ranks(ranks: list[RankFigures]) -> None:
    """ValueError naming the ranks below the highest found that no worker holds (traces on the workers' nodes)."""
    numbers = {int(r.rank) for r in ranks}  # type: ignore[arg-type]
    missing = sorted(set(range(max(numbers) + 1)) - numbers)
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        raise ValueError(
            f"ranks missing across the workers: no worker holds rank {shown} (found {len(numbers)} ranks, the "
            f"highest {max(numbers)}); start a worker on each node that holds a rank's trace"
        )


def _on_cluster(paths, scheduler: str, workers: int | None, task: Callable) -> list[RankFigures]:
    """Each rank's figures read on a Dask cluster, where its trace lies (:mod:`gpucost_lab.timeline.ranks_cluster`),
    ranks resolved; traces on the workers' own nodes are named ``host:path`` and must hold every rank."""
    from gpucost_lab.timeline.ranks_cluster import on_workers, open_cluster, where_files_lie

    with open_cluster(scheduler, workers) as client:
        placed = where_files_lie(client, paths)
        loaded = on_workers(client, task, placed)
    ranks = _resolve_ranks([replace(r, path=p.label) for r, p in zip(loaded, placed)])
    if any(p.worker is not None for p in placed):
        _missing_ranks(ranks)
    return ranks


def load_ranks(
    paths,
    *,
    workers: int | None = None,
    definitions: str | None = None,
    step_figures: bool = False,
    scheduler: str | None = None,
) -> Job:
    """Load a distributed job's traces, one per rank, as one :class:`Job` (module doc: parallel loading, ranks).

    ``paths``: a folder (its ``*.json`` / ``*.json.gz`` files), a trace file, a glob pattern, or a list of them.
    ``workers``: processes loading at once (default ``min(os.cpu_count(), files)``; 1: in this process); with
    ``scheduler="local"``, the local cluster's workers (default one per core).
    ``definitions``: passed to ``busy_idle``, ``idle_breakdown`` and ``kernel_breakdown`` where they take it (None:
    their default, the course's). ``step_figures=True`` also keeps what ``diff`` compares per step.
    ``scheduler``: None (the process pool), ``"local"`` (a Dask LocalCluster) or a Dask scheduler's address: each
    rank a task on a worker, the paths resolved on the workers (:mod:`gpucost_lab.timeline.ranks_cluster`).
    Raises ValueError naming the path for a missing path, an empty folder or one without traces, an unreadable trace,
    two files of one rank, a file without a rank beside files with one, ranks disagreeing on the world size, and
    CPU-only traces mixed with accelerator traces; on a cluster also for a scheduler not reached (InputError
    ``scheduler``), a file a worker cannot read (naming the worker) and ranks no worker holds.
    """
    files = None if scheduler is not None else trace_files(paths)  # on a cluster, the workers find them
    n = None if workers is None else integer_at_least("workers", workers, 1)
    with_definitions(busy_idle, definitions)  # an unknown definition is refused before any file is read
    task = partial(rank_figures, definitions=definitions, step_figures=step_figures)
    if files is None:
        ranks = _on_cluster(paths, str(scheduler), n, task)
    else:
        count = min(len(files), os.cpu_count() or 1) if n is None else min(n, len(files))
        ranks = _resolve_ranks(_in_parallel(task, files, count))
    kinds = {r.device for r in ranks}
    if len(kinds) > 1:
        first = ranks[0]
        other = next(r for r in ranks if r.device != first.device)
        raise ValueError(
            f"{first.path} is a {first.device} trace and {other.path} a {other.device} trace; the ranks of one job "
            "run on one kind of device (CPU-only traces and accelerator traces are not one job)"
        )
    world_size = _one_of(ranks, "world size", lambda r: r.world_size)
    return Job(
        ranks=tuple(ranks),
        device=ranks[0].device,
        world_size=None if world_size is None else int(world_size),  # type: ignore[call-overload]
        definitions=definitions or "course",
    )
