"""A distributed job's traces, one per rank, read as one job, as HolisticTraceAnalysis's
``TraceAnalysis(trace_dir=...)`` reads a folder (traceinsight 0.6.1): :func:`load_ranks` (from
:mod:`gpucost_lab.timeline.ranks_load`: parallel loading, rank numbers), then :func:`rank_table` (a row per rank),
:func:`stragglers` (a row per step) and :func:`analyze_ranks` (both, JSON-ready, behind ``gpucost-lab analyze DIR``).

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
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from gpucost_lab._validate import InputError
from gpucost_lab.timeline.ranks_load import Job, RankFigures, load_ranks
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
    "path",
    "rank_source",
]
STRAGGLER_COLUMNS = [
    "step",
    "slowest_rank",
    "slowest_us",
    "fastest_rank",
    "fastest_us",
    "wait_max_us",
    "wait_mean_us",
]


def _union_us(pieces: dict, *types: str) -> float:
    """Microseconds during which kernels of every one of ``types`` run: the pieces whose label names them all."""
    return float(sum(us for label, us in pieces.items() if set(types) <= set(label.split(" overlapping "))))


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else math.nan


def _rank_row(r: RankFigures) -> list:
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
    table = pd.DataFrame([_rank_row(r) for r in job.ranks], columns=RANK_COLUMNS)
    return table.astype({"rank": "int64", "device": object, "path": object, "rank_source": object})


def stragglers(job: Job) -> pd.DataFrame:
    """The slowest rank of each step, one row per ``ProfilerStep#N`` number that every rank marks, in step order.

    A rank's **step time** is its ``ProfilerStep#N`` annotation's duration, the host's wall time for the step: what
    the training loop itself times and what the job's throughput follows, defined on every kind of trace (CPU-only
    too) without mapping GPU work to steps. The GPU work launched in the step is not used: its window starts where
    the previous step's work ended, so one step's lateness moves the next one's window, and the last step's work is
    cut short when the profiler stops.

    Columns: ``step``; ``slowest_rank`` / ``slowest_us``, ``fastest_rank`` / ``fastest_us`` (ties: the lower rank);
    ``wait_max_us`` = slowest - fastest, and ``wait_mean_us`` = the mean over the other ranks of slowest - theirs:
    how long the others would wait for the slowest at the step's end if the step ended in a collective every rank
    must join (0 with a single rank). Empty (these columns) when no step number is common to every rank.

    HTA's straggler is another figure (``get_potential_stragglers``, hta/analyzers/straggler.py,
    ``find_stragglers_with_late_start_comm_kernels``): per iteration, the ranks whose last long NCCL kernel on the
    (stream, kernel) most variable across ranks *starts* latest, normalized by the mean iteration time (its top 2 by
    default), since a blocking collective makes every rank end together and the one that joins last held the others
    back. This table says how much time that costs per step, as each rank's step time shows it.
    """
    durations = pd.DataFrame({int(r.rank): pd.Series(r.step_us, dtype=float) for r in job.ranks})  # type: ignore[arg-type]
    common = durations.dropna().sort_index()
    if common.empty:
        return pd.DataFrame(
            {c: pd.Series(dtype="int64" if c.endswith(("step", "rank")) else float) for c in STRAGGLER_COLUMNS}
        )
    values, ranks = common.to_numpy(float), np.asarray(common.columns, dtype=np.int64)
    slowest, fastest = values.argmax(axis=1), values.argmin(axis=1)  # the first (lowest rank) on a tie
    top = values.max(axis=1)
    others = max(values.shape[1] - 1, 1)
    return pd.DataFrame(
        {
            "step": common.index.to_numpy(np.int64),
            "slowest_rank": ranks[slowest],
            "slowest_us": top,
            "fastest_rank": ranks[fastest],
            "fastest_us": values.min(axis=1),
            "wait_max_us": top - values.min(axis=1),
            "wait_mean_us": (top[:, None] - values).sum(axis=1) / others,
        }
    )[STRAGGLER_COLUMNS]


def analyze_ranks(job_or_paths, *, definitions: str | None = None, workers: int | None = None) -> dict:
    """The job's figures as plain JSON-ready values in milliseconds (``*_us`` columns as ``*_ms``; shares as they
    are; NaN as None), like :func:`~gpucost_lab.timeline.analyze` for one trace. ``job_or_paths``: a :class:`Job`,
    or what :func:`load_ranks` takes (loaded with ``workers`` and ``definitions``).

    Keys: ``device``; ``world_size`` (the files' own, None where they do not say); ``definitions``; ``ranks``
    (:func:`rank_table` rows); ``stragglers`` (:func:`stragglers` rows).
    """
    if isinstance(job_or_paths, Job):
        job = job_or_paths
        _check_definitions(job, definitions)
    else:
        job = load_ranks(job_or_paths, workers=workers, definitions=definitions)
    result: dict[str, Any] = {
        "device": job.device,
        "world_size": job.world_size,
        "definitions": job.definitions,
        "ranks": ms_records(rank_table(job), 0.0),
        "stragglers": ms_records(stragglers(job), 0.0),
    }
    return result


__all__ = [
    "Job",
    "RANK_COLUMNS",
    "RankFigures",
    "STRAGGLER_COLUMNS",
    "analyze_ranks",
    "load_ranks",
    "rank_table",
    "stragglers",
]
