"""A distributed job's collectives matched across its ranks (chapter 02, section 6: the wait per collective).

A collective blocks: a rank that reaches it early spins inside the communication kernel until the last rank
arrives, so a kernel's duration is the transfer plus the wait for the peers, and the two separate only by comparing
ranks. Per rank, :func:`rank_collectives` lists the communication kernels (``kernel_type`` "communication": NCCL's,
RCCL's) by the ``ProfilerStep#N`` whose host window holds their launch; :func:`matched` pairs them across ranks by
step, kernel name and order within the step (the k-th kernel of a name in a step is one collective on every rank;
one that not every rank ran is left out, and counted). The traces do not say a collective's message size for every
kernel (Kineto writes it only in newer releases), so the name, which spells the collective, its algorithm and its
data type, stands for it.

The ranks' clocks are aligned first (:func:`clock_offsets_us`): by each trace's ``baseTimeNanoseconds`` where every
trace has one (its timestamps count from it); else, where every file says its rank in ``distributedInfo``, the files'
own timestamps as one clock (Kineto writes the host's clock, epoch microseconds, and HolisticTraceAnalysis reads a
folder so, shifting every rank by one offset); else the first matched collective's end is the sync point (every rank
leaves a blocking collective together), which the job's figures say; "none" when no collective was matched.

Per matched collective (:func:`collective_table`): its **late-arrival spread**, the latest kernel start less the
earliest (aligned clocks); each rank's **wait**, its kernel's duration less the fastest rank's for the same
collective; and its **transfer**, that fastest duration (the across-rank minimum approximates the transfer, since
the last rank to arrive waits for nobody).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpucost_lab.timeline.kernels import kernel_type
from gpucost_lab.timeline.load import Trace
from gpucost_lab.timeline.step_figures import launch_steps
from gpucost_lab.timeline.views import steps

KERNEL_COLUMNS = ["step", "collective", "name", "start_us", "dur_us"]
ALIGNMENTS = ("baseTimeNanoseconds", "one clock (distributedInfo)", "first collective's end", "none (no collective)")
COLLECTIVE_COLUMNS = [
    "step",
    "collective",
    "name",
    "spread_us",
    "earliest_rank",
    "latest_rank",
    "transfer_us",
    "wait_max_us",
    "wait_mean_us",
]


def rank_collectives(trace: Trace) -> pd.DataFrame:
    """The trace's communication kernels launched inside a ``ProfilerStep#N``: :data:`KERNEL_COLUMNS`, ``step`` the
    step's number, ``collective`` the kernel's place among the step's kernels of its name (0, 1, ...; start order),
    times in microseconds in the file's clock."""
    ev = trace.events
    marks = steps(trace).drop_duplicates("step").sort_values("start_us", kind="stable")
    kernels = ev[ev["kind"] == "kernel"]
    types = {n: kernel_type(n) for n in pd.unique(kernels["name"].to_numpy(object))}
    comm = kernels[kernels["name"].map(types).eq("communication").to_numpy(bool)]
    if marks.empty or comm.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c == "name" else float) for c in KERNEL_COLUMNS})
    starts = marks["start_us"].to_numpy(float)
    at = launch_steps(ev, comm, starts, starts + marks["duration_us"].to_numpy(float))
    inside = at >= 0
    table = pd.DataFrame(
        {
            "step": marks["step"].to_numpy(np.int64)[at[inside]],
            "name": comm["name"].to_numpy(object)[inside],
            "start_us": comm["ts_us"].to_numpy(float)[inside],
            "dur_us": comm["dur_us"].to_numpy(float)[inside],
        }
    ).sort_values(["step", "start_us"], kind="stable")
    table["collective"] = table.groupby(["step", "name"]).cumcount()
    return table[KERNEL_COLUMNS].reset_index(drop=True)


@dataclass(frozen=True)
class RankKernels:
    """What the matching needs of one rank: its number, its communication kernels (:func:`rank_collectives`), its
    trace's ``baseTimeNanoseconds`` (None when absent) and whether its file says its rank (``distributedInfo``)."""

    rank: int
    kernels: pd.DataFrame
    base_time_ns: int | None
    says_rank: bool


@dataclass(frozen=True)
class Matched:
    """The collectives every rank ran, aligned: ``start_us`` and ``dur_us`` have a row per collective (index: step,
    collective, name; in step then start order) and a column per rank; ``alignment`` is one of :data:`ALIGNMENTS`;
    ``unmatched`` counts the kernels left out because not every rank ran their collective."""

    start_us: pd.DataFrame
    dur_us: pd.DataFrame
    alignment: str
    unmatched: int

    @property
    def ranks(self) -> list[int]:
        return [int(r) for r in self.start_us.columns]


def clock_offsets_us(ranks: Sequence[RankKernels], first_end_us: pd.Series) -> tuple[dict[int, float], str]:
    """Microseconds to add to each rank's timestamps to put them on one clock, and which alignment (module doc).
    ``first_end_us``: each rank's end of the first matched collective in its own clock (empty: none matched)."""
    if first_end_us.empty:
        return {r.rank: 0.0 for r in ranks}, ALIGNMENTS[3]
    if all(r.base_time_ns is not None for r in ranks):
        base = min(int(r.base_time_ns) for r in ranks)  # type: ignore[arg-type]
        return {r.rank: (int(r.base_time_ns) - base) / 1e3 for r in ranks}, ALIGNMENTS[0]  # type: ignore[arg-type]
    if all(r.says_rank for r in ranks):
        return {r.rank: 0.0 for r in ranks}, ALIGNMENTS[1]
    reference = float(first_end_us.iloc[0])
    return {r.rank: reference - float(first_end_us[r.rank]) for r in ranks}, ALIGNMENTS[2]


def matched(ranks: Sequence[RankKernels]) -> Matched:
    """The collectives every rank ran, matched by step, name and order, on one clock (module doc)."""
    key = ["step", "collective", "name"]
    frames = [r.kernels.assign(rank=r.rank) for r in ranks]
    every = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*KERNEL_COLUMNS, "rank"])
    every = every.astype({"step": "int64", "collective": "int64", "start_us": float, "dur_us": float})
    counts = every.groupby(key)["rank"].transform("nunique")
    kept = every[counts == len(ranks)]
    start = kept.pivot_table(index=key, columns="rank", values="start_us", aggfunc="first", sort=False)
    dur = kept.pivot_table(index=key, columns="rank", values="dur_us", aggfunc="first", sort=False)
    order = start.min(axis=1).groupby(level="step").transform("min").to_frame("s").assign(t=start.min(axis=1))
    index = order.sort_values(["s", "t"], kind="stable").index
    columns = sorted(start.columns)
    start, dur = start.loc[index, columns], dur.loc[index, columns]
    first_end = (start.iloc[0] + dur.iloc[0]) if len(start) else pd.Series(dtype=float)
    offsets, alignment = clock_offsets_us(ranks, first_end)
    start = start + pd.Series(offsets)[start.columns]
    return Matched(start, dur, alignment, int(len(every) - len(kept)))


def collective_table(m: Matched) -> pd.DataFrame:
    """One row per matched collective (:data:`COLLECTIVE_COLUMNS`, microseconds): its late-arrival spread (latest
    start - earliest), the ranks that arrived first and last (ties: the lower rank), its transfer (the fastest
    rank's duration) and the waits (each rank's duration - the transfer): the largest and the mean over ranks."""
    start, dur = m.start_us.to_numpy(float), m.dur_us.to_numpy(float)
    if not len(start):
        return pd.DataFrame({c: pd.Series(dtype=object if c == "name" else float) for c in COLLECTIVE_COLUMNS})
    ranks = np.asarray(m.ranks, dtype=np.int64)
    index = m.start_us.index.to_frame(index=False)
    transfer = dur.min(axis=1)
    wait = dur - transfer[:, None]
    return pd.DataFrame(
        {
            "step": index["step"].to_numpy(np.int64),
            "collective": index["collective"].to_numpy(np.int64),
            "name": index["name"].to_numpy(object),
            "spread_us": start.max(axis=1) - start.min(axis=1),
            "earliest_rank": ranks[start.argmin(axis=1)],  # the first, the lower rank, on a tie
            "latest_rank": ranks[(start == start.max(axis=1, keepdims=True)).argmax(axis=1)],
            "transfer_us": transfer,
            "wait_max_us": wait.max(axis=1),
            "wait_mean_us": wait.mean(axis=1),
        }
    )[COLLECTIVE_COLUMNS]


def rank_waits(m: Matched) -> pd.DataFrame:
    """Per rank, over the matched collectives: ``wait_us`` (its durations less the fastest rank's, summed),
    ``transfer_us`` (the fastest durations, summed: the same for every rank) and ``lateness_us`` (its mean start
    after the earliest rank's)."""
    dur, start = m.dur_us, m.start_us
    transfer = dur.min(axis=1)
    return pd.DataFrame(
        {
            "wait_us": dur.sub(transfer, axis=0).sum(axis=0),
            "transfer_us": pd.Series(float(transfer.sum()), index=dur.columns),
            "lateness_us": start.sub(start.min(axis=1), axis=0).mean(axis=0),
        }
    ).fillna(0.0)
