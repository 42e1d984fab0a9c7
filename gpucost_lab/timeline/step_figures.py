"""One trace's figures per step, the samples :func:`~gpucost_lab.timeline.diff` compares (chapter 02: before vs
after, per step): :func:`per_step`, in milliseconds per step.

The steps are the host's ``ProfilerStep#N`` annotations, in time order. On a CUDA trace the GPU may run steps behind
the host, so a step's GPU window runs from the end of the GPU work launched before it (the first step's: from its
host start) to the end of the work it launched, and a kernel belongs to the step whose host window holds its launch
(its ``cudaLaunchKernel``); a CPU step's window is the step itself. :mod:`gpucost_lab.timeline.diff` says what each
figure means and how the two sides are compared.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpucost_lab.timeline.load import GPU_WORK, Trace
from gpucost_lab.timeline.views import busy_basis, busy_runs, steps


def _in_windows(
    ts: np.ndarray, dur: np.ndarray, names: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> pd.DataFrame:
    """Per step (rows) and name (columns): the microseconds of the events inside each step's window."""
    end = ts + dur
    columns = {}
    for i, (s, e) in enumerate(zip(starts, ends)):
        inside = np.clip(np.minimum(end, e) - np.maximum(ts, s), 0.0, None)
        keep = inside > 0
        columns[i] = pd.Series(inside[keep]).groupby(names[keep]).sum()
    table = pd.DataFrame(columns).T.reindex(range(len(starts))).fillna(0.0)
    return table.astype(float)


def _busy_in_windows(trace: Trace, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Microseconds of the busy basis's union inside each window (0 where it holds nothing)."""
    basis = busy_basis(trace, None, None, include_last_step=True)
    if basis is None:
        return np.zeros(len(starts))
    run_start, run_end = busy_runs(basis[0])[:2]
    before = np.r_[0.0, np.cumsum(run_end - run_start)]  # busy time of the runs before run i

    def busy_until(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(run_start, t, side="right") - 1  # the last run starting at or before t
        j = np.maximum(i, 0)
        return np.where(i >= 0, before[j] + np.clip(np.minimum(t, run_end[j]) - run_start[j], 0.0, None), 0.0)

    return np.clip(busy_until(ends) - busy_until(starts), 0.0, ends - starts)


def launch_steps(ev: pd.DataFrame, work: pd.DataFrame, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per GPU operation: the step whose host window holds its launch (its correlated runtime call's start, else
    its own start), -1 when none does."""
    runtime = ev[(ev["kind"] == "runtime") & ev["correlation"].notna()]
    launch_us = runtime.drop_duplicates("correlation").set_index("correlation")["ts_us"]
    launched = work["correlation"].map(launch_us).astype(float).fillna(work["ts_us"]).to_numpy(float)
    step = np.searchsorted(starts, launched, side="right") - 1
    inside = (step >= 0) & (launched <= ends[np.maximum(step, 0)])
    return np.where(inside, step, -1)


def _gpu_windows(trace: Trace, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each step's window on the GPU: from the end of the GPU work launched before it (the first step: from its host
    start) to the end of the work it launched (its host end when it launched none), never running backwards."""
    ev = trace.events
    work = ev[ev["kind"].isin(GPU_WORK)]
    step = launch_steps(ev, work, starts, ends)
    end = (work["ts_us"] + work["dur_us"]).to_numpy(float)
    last = pd.Series(end[step >= 0]).groupby(step[step >= 0]).max().reindex(range(len(starts)))
    bounds = np.maximum.accumulate(np.r_[starts[0], last.fillna(pd.Series(ends)).to_numpy(float)])
    return bounds[:-1], bounds[1:]


def per_step(trace: Trace) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The trace's figures per step, in ms: (step_time/busy/idle table, {"phase": table, kind: table})."""
    table = steps(trace)
    if table.empty:
        raise ValueError(
            f"{trace.path}: no ProfilerStep#N steps; diff compares time per step: profile a scheduled "
            "window (torch.profiler.schedule, or gpucost_lab.measure.profiling.profile_window) so every step "
            "is marked"
        )
    table = table.sort_values("start_us", kind="stable")  # in time order, whatever their numbers
    starts = table["start_us"].to_numpy(float)
    ends = starts + table["duration_us"].to_numpy(float)
    cuda = trace.accelerated
    lo, hi = _gpu_windows(trace, starts, ends) if cuda else (starts, ends)
    busy = _busy_in_windows(trace, lo, hi)
    base = pd.DataFrame({"step_time": ends - starts, "busy": busy, "idle": hi - lo - busy}) / 1e3
    ev = trace.events
    phases = ev[(ev["kind"] == "annotation") & (ev["cat"] != "gpu_user_annotation")]
    named = {
        "phase": _in_windows(
            phases["ts_us"].to_numpy(float),
            phases["dur_us"].to_numpy(float),
            phases["name"].to_numpy(object),
            starts,
            ends,
        )
        / 1e3
    }
    if cuda:  # a kernel belongs to the step that launched it: the GPU may run steps behind the host
        kernels = ev[ev["kind"] == "kernel"]
        step = launch_steps(ev, kernels, starts, ends)
        keep = step >= 0
        totals = kernels["dur_us"][keep].groupby([step[keep], kernels["name"].to_numpy(object)[keep]]).sum()
        named["kernel"] = totals.unstack(fill_value=0.0).reindex(range(len(starts)), fill_value=0.0) / 1e3
    else:
        ops = ev[ev["kind"] == "cpu_op"]
        named["cpu_op"] = (
            _in_windows(
                ops["ts_us"].to_numpy(float), ops["dur_us"].to_numpy(float), ops["name"].to_numpy(object), starts, ends
            )
            / 1e3
        )
    return base, named
