"""The straggler of a distributed job, measured on its collectives (chapter 02, section 6): :func:`find_straggler`
and :func:`step_table`, over :mod:`gpucost_lab.timeline.collective_match`' matched collectives.

Collectives block, so every rank's step ends together and host step durations even out: the wait shows inside the
communication kernels instead. The **straggler** is the rank whose arrivals are latest: the largest mean start after
the earliest rank's, over every matched collective (ties: the lower rank), as HolisticTraceAnalysis's
``find_stragglers_with_late_start_comm_kernels`` looks for the ranks whose collectives start latest.

Per step, the samples behind the job's figures:

- ``wait_mean_us``: the mean over the step's collectives, and over the ranks other than the straggler, of a rank's
  wait (its kernel's duration less the fastest rank's): the wait per collective the others spend on the straggler;
- ``comm_time_ratio``: the other ranks' time in the step's collectives (their mean) over the straggler's, which is
  (transfer + wait) / transfer when the straggler arrives last and waits for nobody.

Over the steps, the course's estimator (:class:`~gpucost_lab.stats.Estimate`: the geometric mean and its log-scale
95% interval) gives ``wait_us`` and ``comm_time_ratio`` with their intervals, and the verdict is the course's rule
(:func:`~gpucost_lab.stats.decide`) on the ratio's interval: "straggler" when all of it lies above 1 (the others
spend longer in the collectives: they wait for it), "not a straggler" when all of it lies below 1, "same" within
:data:`~gpucost_lab.stats.EQUIVALENCE_MARGIN`, else "inconclusive". One step gives no interval (the verdict is then
"inconclusive"), nor does a step in which no other rank waited (the wait's interval; its value is then the mean).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpucost_lab.stats import Estimate, Interval, decide
from gpucost_lab.timeline.collective_match import Matched, rank_waits

STEP_COLUMNS = [
    "step",
    "collectives",
    "latest_rank",
    "spread_max_us",
    "spread_mean_us",
    "wait_mean_us",
    "comm_time_ratio",
]
VERDICTS = ("straggler", "not a straggler", "same", "inconclusive")


@dataclass(frozen=True)
class Figure:
    """A figure over the steps: the course's estimate and its 95% interval (None and None without one)."""

    value: float
    ci95_low: float | None
    ci95_high: float | None

    def to_dict(self) -> dict:
        return {"value": self.value, "ci95_low": self.ci95_low, "ci95_high": self.ci95_high}


@dataclass(frozen=True)
class Straggler:
    """The job's straggler (module doc): ``rank``; ``lateness_us``, its mean arrival after the earliest rank;
    ``wait_us``, the wait per collective the other ranks spend on it; ``comm_time_ratio``, the others' time in the
    collectives over its own; ``verdict`` (one of :data:`VERDICTS`); ``steps`` and ``collectives`` counted."""

    rank: int
    lateness_us: float
    wait_us: Figure
    comm_time_ratio: Figure
    verdict: str
    steps: int
    collectives: int


def _over_steps(values: np.ndarray) -> Figure:
    """The course's estimate over per-step values, or their mean without an interval where it cannot be had."""
    if len(values) >= 2 and bool(np.all(np.isfinite(values) & (values > 0))):
        interval = Estimate.of(values).interval
        return Figure(*interval)
    return Figure(float(np.mean(values)) if len(values) else math.nan, None, None)


def _latest(start: pd.DataFrame) -> int:
    """The rank with the largest mean start after the earliest (ties: the lower rank)."""
    lateness = start.sub(start.min(axis=1), axis=0).mean(axis=0)
    return int(lateness.index[int(np.argmax(lateness.to_numpy(float)))])


def step_table(m: Matched, rank: int) -> pd.DataFrame:
    """One row per step with matched collectives (:data:`STEP_COLUMNS`, microseconds): their count, the step's own
    latest rank, the largest and mean late-arrival spread, and the samples for straggler ``rank`` (module doc)."""
    rows = []
    for step, start in m.start_us.groupby(level="step", sort=False):
        dur = m.dur_us.loc[start.index]
        wait = dur.sub(dur.min(axis=1), axis=0).drop(columns=rank)
        others = dur.drop(columns=rank).sum(axis=0)
        spread = start.max(axis=1) - start.min(axis=1)
        rows.append(
            [
                int(step),
                len(start),
                _latest(start),
                float(spread.max()),
                float(spread.mean()),
                float(wait.to_numpy(float).mean()) if wait.size else math.nan,
                float(others.mean() / dur[rank].sum()) if len(others) else math.nan,
            ]
        )
    table = pd.DataFrame(rows, columns=STEP_COLUMNS)
    return table.astype({"step": "int64", "collectives": "int64", "latest_rank": "int64"})


def find_straggler(m: Matched) -> Straggler | None:
    """The job's straggler with its wait and verdict (module doc); None with fewer than two ranks or no collective
    every rank ran."""
    if len(m.ranks) < 2 or m.start_us.empty:
        return None
    rank = _latest(m.start_us)
    per_step = step_table(m, rank)
    ratio = _over_steps(per_step["comm_time_ratio"].to_numpy(float))
    verdict = VERDICTS[3]  # one step: no interval to decide on
    if ratio.ci95_low is not None and ratio.ci95_high is not None:
        verdict = decide(Interval(ratio.value, ratio.ci95_low, ratio.ci95_high), VERDICTS[1], VERDICTS[0])
    return Straggler(
        rank=rank,
        lateness_us=float(rank_waits(m).loc[rank, "lateness_us"]),
        wait_us=_over_steps(per_step["wait_mean_us"].to_numpy(float)),
        comm_time_ratio=ratio,
        verdict=verdict,
        steps=len(per_step),
        collectives=len(m.start_us),
    )
