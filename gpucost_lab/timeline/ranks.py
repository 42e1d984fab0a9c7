"""A distributed job's traces, one per rank, read as one job, as HolisticTraceAnalysis's
``TraceAnalysis(trace_dir=...)`` reads a folder (traceinsight 0.6.1): :func:`load_ranks` (from
:mod:`gpucost_lab.timeline.ranks_load`: parallel loading, rank numbers), then :func:`rank_table` (a row per rank),
:func:`stragglers` (a row per step), :func:`collectives` (a row per collective every rank ran), :func:`straggler`
(the job's straggler and the wait for it) and :func:`analyze_ranks` (all of them, JSON-ready, behind ``gpucost-lab
analyze DIR``). The wait is measured per collective (:mod:`gpucost_lab.timeline.collective_match`,
:mod:`gpucost_lab.timeline.collective_wait`): collectives block, so host step durations even out across ranks and their
difference is not the wait; a rank that arrives early spins inside the communication kernel instead.

Definitions, per rank (all from the one-trace views, so a rank's figures are those of its trace alone):

- **span, busy, idle**: :func:`~gpucost_lab.timeline.busy_idle` (HTA's temporal breakdown: busy is HTA's compute
  + non-compute time, span its ``kernel_time``);
- **idle by cause**: :func:`~gpucost_lab.timeline.idle_breakdown`'s host wait, kernel wait and other, each summed
  over the rank's streams (one stream's idle time may be another's busy time, so these may add up to more than
  ``idle_us``);
- **computation, communication, memory**: the time during which at least one kernel of that type runs (the union
  of its intervals; from :func:`~gpucost_lab.timeline.kernel_breakdown`'s pieces, each piece counted for every type
  in its label), so the three overlap and may add up to more than busy. ``computation_us`` is HTA's
  ``compute_time`` and ``busy_us - computation_us`` its ``non_compute_time``;
- **communication share**: ``communication_us / busy_us``, the share of the GPU's busy time with a communication
  kernel running;
- **communication-computation overlap share**: the time during which a communication and a computation kernel run
  at once over ``communication_us``, exactly HTA's ``get_comm_comp_overlap`` (``comp_comm_overlap_ratio``:
  the overlap of the merged communication and merged computation intervals over the merged communication time;
  HTA reports it as ``comp_comm_overlap_pctg``, a percentage rounded to 2 decimals; here the share, unrounded).
  NaN (None in JSON) for a rank without communication, where HTA divides 0 by 0.
- **wait and transfer**: over the collectives every rank ran (in every step, the last one included), the rank's
  communication-kernel time split into ``wait_us`` (each kernel's duration less the fastest rank's for the same
  collective, summed) and ``transfer_us`` (the fastest durations, summed; the same for every rank); with one rank,
  all of it is transfer. They add up to the rank's time in matched communication kernels, which differs from
  ``communication_us`` where kernels overlap, fall in no step or were not run by every rank.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from gpucost_lab._validate import InputError
from gpucost_lab.timeline.collective_match import COLLECTIVE_COLUMNS, Matched, RankKernels, collective_table, matched
from gpucost_lab.timeline.collective_match import rank_waits as _rank_waits
from gpucost_lab.timeline.collective_wait import STEP_COLUMNS, Straggler, find_straggler, step_table
from gpucost_lab.timeline.ranks_load import RANK_SOURCES, Job, RankFigures, load_ranks
from gpucost_lab.timeline.summary import ms_records

RANK_COLUMNS = [
    "rank",
    "device",
    "span_us",
    "busy_us",
    "idle_us",
    "idle_host_wait_us",
    "idle_kernel_wait_us",
    "idle_other_us",
    "computation_us",
    "communication_us",
    "memory_us",
    "communication_share",
    "comm_comp_overlap_share",
    "wait_us",
    "transfer_us",
    "path",
    "rank_source",
]
STRAGGLER_COLUMNS = STEP_COLUMNS


def _union_us(pieces: dict, *types: str) -> float:
    """Microseconds during which kernels of every one of ``types`` run: the pieces whose label names them all."""
    return float(sum(us for label, us in pieces.items() if set(types) <= set(label.split(" overlapping "))))


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else math.nan


def _rank_row(r: RankFigures, waits: pd.DataFrame) -> list:
    pieces, idle = r.kernel_pieces_us, r.idle_by_category_us
    communication = _union_us(pieces, "communication")
    return [
        r.rank,
        r.device,
        r.busy.span_us,
        r.busy.busy_us,
        r.busy.idle_us,
        idle["host_wait"],
        idle["kernel_wait"],
        idle["other"],
        _union_us(pieces, "computation"),
        communication,
        _union_us(pieces, "memory"),
        _share(communication, r.busy.busy_us),
        _share(_union_us(pieces, "computation", "communication"), communication),
        float(waits["wait_us"].get(r.rank, 0.0)),
        float(waits["transfer_us"].get(r.rank, 0.0)),
        r.path,
        r.rank_source,
    ]


def _check_definitions(job: Job, definitions: str | None) -> None:
    """A job's figures were measured at load time: asking other definitions of them is refused, saying how."""
    if definitions is not None and definitions != job.definitions:
        raise InputError(
            "definitions",
            f"definitions must be the job's own, {job.definitions!r} (its figures were measured as it loaded), "
            f"got {definitions!r}; load it with load_ranks(..., definitions={definitions!r})",
        )


def rank_table(job: Job, *, definitions: str | None = None) -> pd.DataFrame:
    """One row per rank, by rank (module doc for each figure): :data:`RANK_COLUMNS`, times in microseconds, shares
    in [0, 1]; ``path`` is the rank's file and ``rank_source`` where its number came from (one of
    :data:`~gpucost_lab.timeline.ranks_load.RANK_SOURCES`). ``definitions``: None or the job's own
    (``job.definitions``, chosen at :func:`load_ranks`)."""
    _check_definitions(job, definitions)
    waits = _rank_waits(job_collectives(job))
    table = pd.DataFrame([_rank_row(r, waits) for r in job.ranks], columns=RANK_COLUMNS)
    return table.astype({"rank": "int64", "device": object, "path": object, "rank_source": object})


def job_collectives(job: Job) -> Matched:
    """The collectives every rank of the job ran, matched and on one clock
    (:func:`~gpucost_lab.timeline.collective_match.matched`)."""
    return matched(
        [
            RankKernels(int(r.rank), r.collectives, r.base_time_ns, r.rank_source == RANK_SOURCES[0])  # type: ignore[arg-type]
            for r in job.ranks
            if r.collectives is not None
        ]
    )


def collectives(job: Job) -> pd.DataFrame:
    """One row per collective every rank ran, in step and start order: :data:`COLLECTIVE_COLUMNS` (microseconds; the
    late-arrival spread, the first and last rank to arrive, the transfer and the waits;
    :func:`~gpucost_lab.timeline.collective_match.collective_table`)."""
    return collective_table(job_collectives(job))


def straggler(job: Job) -> Straggler | None:
    """The job's straggler, the rank whose collectives start latest, with the wait per collective the others spend
    on it, their time in the collectives over its own and the verdict
    (:mod:`gpucost_lab.timeline.collective_wait`); None with one rank or no collective every rank ran."""
    return find_straggler(job_collectives(job))


def stragglers(job: Job) -> pd.DataFrame:
    """One row per step with collectives every rank ran, in step order: :data:`STRAGGLER_COLUMNS` (microseconds).

    ``collectives`` (their count), ``latest_rank`` (the step's rank with the latest mean arrival), ``spread_max_us``
    and ``spread_mean_us`` (the largest and the mean late-arrival spread of its collectives: the latest start less
    the earliest), and the step's samples for the job's :func:`straggler`: ``wait_mean_us`` (the wait per
    collective the other ranks spend on it) and ``comm_time_ratio`` (their time in the collectives over its own).
    Empty (these columns) when the job has one rank or no collective every rank ran.

    A step's ``ProfilerStep#N`` durations are not compared: the collectives block, so every rank's step ends
    together and the host step times even out; the wait shows inside the communication kernels.
    """
    m = job_collectives(job)
    if len(m.ranks) < 2 or m.start_us.empty:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c in STEP_COLUMNS[:3] else float) for c in STEP_COLUMNS})
    return step_table(m, find_straggler(m).rank)  # type: ignore[union-attr]


def _straggler_record(m: Matched) -> dict | None:
    found = find_straggler(m)
    if found is None:
        return None
    return {
        "rank": found.rank,
        "wait_ms": {k: None if v is None else v / 1e3 for k, v in found.wait_us.to_dict().items()},
        "comm_time_ratio": found.comm_time_ratio.to_dict(),
        "verdict": found.verdict,
        "lateness_ms": found.lateness_us / 1e3,
        "steps": found.steps,
        "collectives": found.collectives,
    }


def _step_records(m: Matched, steps: pd.DataFrame) -> list[dict]:
    """:func:`stragglers`' rows in ms, each with its collectives' rows (:func:`collectives`, in ms)."""
    rows = ms_records(collective_table(m), 0.0)
    return [{**s, "per_collective": [c for c in rows if c["step"] == s["step"]]} for s in ms_records(steps, 0.0)]


def analyze_ranks(job_or_paths, *, definitions: str | None = None, workers: int | None = None) -> dict:
    """The job's figures as plain JSON-ready values in milliseconds (``*_us`` columns as ``*_ms``; shares as they
    are; NaN as None), like :func:`~gpucost_lab.timeline.analyze` for one trace. ``job_or_paths``: a :class:`Job`,
    or what :func:`load_ranks` takes (loaded with ``workers`` and ``definitions``).

    Keys: ``device``; ``world_size`` (the files' own, None where they do not say); ``definitions``; ``ranks``
    (:func:`rank_table` rows); ``clock_alignment`` (how the ranks' clocks were put on one:
    :data:`~gpucost_lab.timeline.collective_match.ALIGNMENTS`); ``unmatched_kernels`` (communication kernels of a
    collective not every rank ran); ``straggler`` (:func:`straggler`: ``rank``, ``wait_ms`` as ``{value,
    ci95_low, ci95_high}``, ``comm_time_ratio`` likewise, ``verdict``, ``lateness_ms``, ``steps``,
    ``collectives``; None without one); ``stragglers`` (:func:`stragglers` rows, each with its collectives' rows,
    :func:`collectives`, as ``per_collective``).
    """
    if isinstance(job_or_paths, Job):
        job = job_or_paths
        _check_definitions(job, definitions)
    else:
        job = load_ranks(job_or_paths, workers=workers, definitions=definitions)
    m = job_collectives(job)
    result: dict[str, Any] = {
        "device": job.device,
        "world_size": job.world_size,
        "definitions": job.definitions,
        "ranks": ms_records(rank_table(job), 0.0),
        "clock_alignment": m.alignment,
        "unmatched_kernels": m.unmatched,
        "straggler": _straggler_record(m),
        "stragglers": _step_records(m, stragglers(job)),
    }
    return result


__all__ = [
    "COLLECTIVE_COLUMNS",
    "Job",
    "RANK_COLUMNS",
    "RankFigures",
    "STRAGGLER_COLUMNS",
    "analyze_ranks",
    "collectives",
    "load_ranks",
    "rank_table",
    "straggler",
    "stragglers",
]
