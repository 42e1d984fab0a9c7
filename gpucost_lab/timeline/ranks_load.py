"""Loading a distributed job's traces, one file per rank, as one :class:`Job`: :func:`load_ranks`.

The ranks load in parallel, a process per core (``workers``; default: ``min(os.cpu_count(), files)``). The workers
are forked where the system can (Linux), else spawned: a forked worker needs no ``if __name__ == "__main__":``
guard in the calling script and no fresh imports (a second or two each), and it runs only numpy, pandas and the
trace reader on its own file, never torch, so a lock another thread of the parent held at the fork (torch's
thread pool) is never waited on. Memory stays bounded: each worker loads one trace at a time
and sends back only its :class:`RankFigures` (a few figures and a step table; no events), so the parent never holds
a trace's events and the peak is about one trace per worker. ``workers=1`` loads in this process, one at a time.

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
import re
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
from gpucost_lab.timeline.step_figures import per_step
from gpucost_lab.timeline.views import busy_idle, steps

TRACE_SUFFIXES = (".json", ".json.gz")
RANK_SOURCES = ("distributedInfo", "file name", "position")
_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)


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


# ----------------------------------------------------------------------------------------------- which files
def _folder_traces(folder: Path) -> list[Path]:
    """The trace files directly in ``folder`` (sorted), or ValueError naming it when there are none."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise ValueError(f"{folder}: cannot list the folder ({exc.strerror or exc})") from None
    traces = [p for p in entries if p.name.endswith(TRACE_SUFFIXES) and p.is_file()]
    if traces:
        return traces
    allowed = "allowed: a folder holding one trace per rank (*.json or *.json.gz)"
    if not entries:
        raise ValueError(f"{folder}: an empty folder; {allowed}")
    shown = ", ".join(p.name for p in entries[:3]) + (", ..." if len(entries) > 3 else "")
    raise ValueError(f"{folder}: no trace files in this folder ({len(entries)} other entries: {shown}); {allowed}")


def trace_files(paths) -> list[Path]:
    """The trace files ``paths`` names: a folder (its ``*.json`` / ``*.json.gz`` files, not its subfolders), a file,
    or a list of folders and files, in that order (each folder's files sorted by name)."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    try:
        items = list(items)
    except TypeError:
        raise InputError("paths", f"paths must be a folder, a trace file or a list of them, got {paths!r}") from None
    if not items:
        raise InputError("paths", "paths must name at least one folder or trace file, got none")
    files: list[Path] = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise InputError("paths", f"paths must hold folder or trace-file paths, got {item!r}")
        path = Path(item)
        if not path.exists():
            raise ValueError(f"{path}: no such trace file or folder")
        files += _folder_traces(path) if path.is_dir() else [path]
    seen: dict[Path, Path] = {}
    for f in files:
        key = f.resolve()
        if key in seen:
            raise ValueError(f"{f}: named twice (also as {seen[key]}); each rank's trace once")
        seen[key] = f
    return files


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


def rank_in_name(path: str) -> int | None:
    """The last ``rank<N>`` (``rank_<N>``, ``rank-<N>``, any case) in the file's name, or None."""
    found = _RANK_IN_NAME.findall(Path(path).name)
    return int(found[-1]) if found else None


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


def load_ranks(paths, *, workers: int | None = None, definitions: str | None = None, step_figures: bool = False) -> Job:
    """Load a distributed job's traces, one per rank, as one :class:`Job` (module doc: parallel loading, ranks).

    ``paths``: a folder (its ``*.json`` / ``*.json.gz`` files), a trace file, or a list of folders and files.
    ``workers``: processes loading at once (default ``min(os.cpu_count(), files)``; 1: in this process).
    ``definitions``: passed to ``busy_idle``, ``idle_breakdown`` and ``kernel_breakdown`` where they take it (None:
    their default, the course's). ``step_figures=True`` also keeps what ``diff`` compares per step.
    Raises ValueError naming the path for a missing path, an empty folder or one without traces, an unreadable trace,
    two files of one rank, a file without a rank beside files with one, ranks disagreeing on the world size, and
    CPU-only traces mixed with accelerator traces.
    """
    files = trace_files(paths)
    n = len(files) if workers is None else integer_at_least("workers", workers, 1)
    workers = min(n, len(files), os.cpu_count() or 1) if workers is None else min(n, len(files))
    with_definitions(busy_idle, definitions)  # an unknown definition is refused before any file is read
    task = partial(rank_figures, definitions=definitions, step_figures=step_figures)
    ranks = _resolve_ranks(_in_parallel(task, files, workers))
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
