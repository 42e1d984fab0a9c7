"""A/A and A/B comparisons of a real training step, run after run: the verdicts of compare_steps, sequential.

Run it quiet (``.venv/bin/python benchmarks/compare_under_load.py``) and beside two busy programs
(``benchmarks/under_load.sh .venv/bin/python benchmarks/compare_under_load.py``); each run is one JSON line.

- A/A: the course's training step (``TrainingStep(ClassificationTask(), 64)``, one torch thread) against an
  identical copy. Target: called "faster" or "slower" in at most 2 of 20 runs (a 5% error rate allows that).
- A/B: the same baseline against a candidate that does the work twice (two steps per call). Target: "slower" with an
  interval holding 2 in at least 19 of 20 runs.
- The median rounds and seconds each comparison took, until decided or its budget was spent.
- The stall/no-stall trace pair: a CPU loop with a 40 ms data stall in every step against the same loop without it,
  through ``timeline.diff``. Target: step time, busy and idle "better".

Each comparison is ``compare_steps`` without ``rounds``: batches of 10 ABBA/BAAB rounds of 40-step blocks (10 warm-up
steps) until the verdict is decided, at most ``--max-seconds`` of timing. Exits 0 even when short.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch
from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run

from gpucost_lab.measure.compare import compare_steps
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.profiling import profile_window
from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.quality.train import TrainingStep
from gpucost_lab.stats import EQUIVALENCE_MARGIN
from gpucost_lab.timeline import diff


def one_run(kind: str, rounds: int, measured_steps: int, max_seconds: float, seed: int) -> dict:
    task = ClassificationTask()
    baseline, copy = TrainingStep(task, 64), TrainingStep(task, 64)
    if kind == "A/A":
        candidate = copy
    else:

        def candidate() -> None:  # twice the work: two steps per call
            copy()
            copy()

    contract = BenchmarkContract.capture(
        model=baseline.model,
        inputs=[baseline.x],
        device="cpu",
        warmup_steps=10,
        measured_steps=measured_steps,
        repeats=rounds,
        seed=seed,
    )
    cmp = compare_steps(baseline, candidate, contract, max_seconds=max_seconds)
    return {
        "time_ratio": cmp.time_ratio,
        "interval": [cmp.ci95_low, cmp.ci95_high],
        "verdict": cmp.verdict,
        "rounds": cmp.rounds,
        "looks": len(cmp.looks),
        "seconds": round(cmp.seconds, 3),
    }


def stall_pair() -> dict:
    """The stall/no-stall pair of CPU traces through timeline.diff: the verdicts of step time, busy and idle."""
    x = torch.randn(32, 32)

    def loop(stall_s: float):
        def step():
            if stall_s:
                time.sleep(stall_s)
                torch.stack([torch.randn(256) for _ in range(64)]).sum()  # the collate's operators
            (x @ x).sum()

        return step

    with tempfile.TemporaryDirectory() as tmp:
        stalled, clean = Path(tmp) / "stalled.json.gz", Path(tmp) / "clean.json.gz"
        profile_window(loop(0.04), wait=0, warmup=1, active=8, trace_path=stalled)
        profile_window(loop(0.0), wait=0, warmup=1, active=8, trace_path=clean)
        result = diff(stalled, clean)
    lines = {m: result.line(m) for m in ("step_time", "busy", "idle")}
    return {
        m: {"ratio": ln.ratio, "interval": [ln.ci95_low, ln.ci95_high], "verdict": ln.verdict}
        for m, ln in lines.items()
    }


def _median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=10, help="rounds per batch (the contract's repeats)")
    parser.add_argument("--measured-steps", type=int, default=40)
    parser.add_argument("--max-seconds", type=float, default=10.0, help="each comparison's time budget")
    args = parser.parse_args()
    run = Run.start()
    torch.set_num_threads(1)
    aa = [one_run("A/A", args.rounds, args.measured_steps, args.max_seconds, seed) for seed in range(args.runs)]
    ab = [one_run("A/B", args.rounds, args.measured_steps, args.max_seconds, seed) for seed in range(args.runs)]
    pair = stall_pair()
    aa_wrong = sum(r["verdict"] in ("faster", "slower") for r in aa)
    ab_ok = sum(r["verdict"] == "slower" and r["interval"][0] <= 2 <= r["interval"][1] for r in ab)
    pair_ok = all(v["verdict"] == "better" for v in pair.values())
    allowed_wrong, needed_ok = -(-args.runs // 10), args.runs - -(-args.runs // 20)  # 2 of 20, 19 of 20
    print(
        json.dumps(
            {
                "benchmark": "compare_under_load",
                "cpu_model": BenchmarkContract.capture(inputs=[(1,)], device="cpu").cpu_model,
                "cpu_cores": os.cpu_count(),
                "python": platform.python_version(),
                "torch": torch.__version__,
                "load_average_1min": os.getloadavg()[0],
                "run": run.finish(),
                "rounds_per_batch": args.rounds,
                "measured_steps": args.measured_steps,
                "max_seconds": args.max_seconds,
                "equivalence_margin": EQUIVALENCE_MARGIN,
                "aa_runs": aa,
                "ab_runs": ab,
                "aa_called_a_direction": aa_wrong,
                "aa_verdicts": {
                    v: sum(r["verdict"] == v for r in aa) for v in ("faster", "slower", "same", "inconclusive")
                },
                "ab_slower_holding_2": ab_ok,
                "aa_median_rounds": _median(aa, "rounds"),
                "aa_median_seconds": _median(aa, "seconds"),
                "ab_median_rounds": _median(ab, "rounds"),
                "ab_median_seconds": _median(ab, "seconds"),
                "stall_pair": pair,
                "targets": {
                    "aa": f"<= {allowed_wrong} of {args.runs} faster or slower",
                    "ab": f">= {needed_ok} of {args.runs} slower holding 2",
                    "stall_pair": "step_time, busy and idle better",
                },
                "verdict": "pass" if aa_wrong <= allowed_wrong and ab_ok >= needed_ok and pair_ok else "short",
            }
        )
    )


if __name__ == "__main__":
    main()
