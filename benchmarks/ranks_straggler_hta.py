"""HolisticTraceAnalysis's straggler analysis on the course's folders of ranks: the reference for the wait per
collective (``gpucost_lab.timeline.collective_wait``), recorded in tests/timeline/hta_figures.py (``HTA_STRAGGLER``).

Runs traceinsight 0.6.1's ``TraceAnalysis(trace_dir=...).get_potential_stragglers(num_candidates=1)`` (its
straggler function, ``find_stragglers_with_late_start_comm_kernels``) and the metric that function ranks by
(``_compute_normalized_start_time_of_significant_comm_kernels``: per rank and iteration, the last long NCCL kernel
on the (stream, name) whose duration varies most across ranks), printing one JSON line per folder: the straggler HTA
names, the iterations it read (it leaves the last ``ProfilerStep`` out) and, per iteration and rank, that kernel's
start in the files' own clock (HTA's aligned ``ts`` plus the offset it subtracted) and duration, in microseconds.

Folders: ``sampled`` (the two shipped ranks of the sampled job) and ``delayed`` (tests/timeline/delayed_ranks.py's
``write_job`` with its defaults: 4 ranks, rank 2 late by 2,000 us before each of 4 all-reduces per step, 3 steps).

    .venv-hta/bin/python benchmarks/ranks_straggler_hta.py     # HTA is not a dependency: `make .venv-hta/.installed`
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLED = [ROOT / "gpucost_lab" / "data" / "hta_traces" / f"sampled_rank{r}_gpu.json.gz" for r in (0, 1)]


def hta_straggler(folder: Path) -> dict:
    """HTA's straggler and the kernel starts it ranked, for the rank traces in ``folder``."""
    import pandas as pd
    from hta.analyzers.straggler import _compute_normalized_start_time_of_significant_comm_kernels
    from hta.trace_analysis import TraceAnalysis

    logging.disable(logging.CRITICAL)
    analysis = TraceAnalysis(trace_dir=str(folder))
    t, steps = analysis.t, analysis.get_profiler_steps()
    ranks = t.get_ranks()
    every = pd.concat([t.get_trace(r) for r in ranks], keys=ranks, names=["rank", "idx"]).reset_index()
    metric, _ = _compute_normalized_start_time_of_significant_comm_kernels(
        every.loc[every["iteration"].isin(steps)], t.symbol_table
    )
    kernels = {
        f"{int(row.iteration)} {int(row.rank)}": {"start_us": float(row.ts + t.min_ts), "dur_us": float(row.dur)}
        for row in metric.itertuples()
    }
    return {
        "straggler": [int(r) for r in analysis.get_potential_stragglers(num_candidates=1)],
        "iterations": [int(s) for s in steps],
        "kernels": kernels,
    }


def main() -> None:
    sys.path.insert(0, str(ROOT / "tests" / "timeline"))
    from importlib.metadata import version

    from delayed_ranks import write_job

    with tempfile.TemporaryDirectory() as tmp:
        sampled, delayed = Path(tmp) / "sampled", Path(tmp) / "delayed"
        sampled.mkdir()
        for path in SAMPLED:
            shutil.copy(path, sampled)
        write_job(delayed)
        for name, folder in (("sampled", sampled), ("delayed", delayed)):
            print(json.dumps({"folder": name, "hta_version": version("traceinsight"), **hta_straggler(folder)}))


if __name__ == "__main__":
    main()
