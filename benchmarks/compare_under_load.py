"""A/A and A/B comparisons of a real training step: the verdicts of compare_steps, run after run.

Run it beside two busy programs: ``benchmarks/under_load.sh .venv/bin/python benchmarks/compare_under_load.py``.

- A/A: the course's training step (``TrainingStep(ClassificationTask(), 64)``, one torch thread) against an
  identical copy. Target: "inconclusive", or an interval containing 1, in at least 9 of 10 runs.
- A/B: the same baseline against a candidate that does the work twice (two steps per call). Target: "slower"
  with its 95% interval inside [1.5, 2.7] in at least 9 of 10 runs.

Each run is one ``compare_steps`` with the course's settings (10 ABBA/BAAB rounds of 40-step blocks, 10 warm-up
steps). Prints one JSON line with every run's ratio, interval and verdict; exits 0 even when short.
"""

from __future__ import annotations

import argparse
import json
import os
import platform

import torch
from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run

from gpucost_lab.compare import MAX_WIDTH_FACTOR, compare_steps
from gpucost_lab.contract import BenchmarkContract
from gpucost_lab.workloads import ClassificationTask, TrainingStep


def one_run(kind: str, rounds: int, measured_steps: int) -> dict:
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
    )
    cmp = compare_steps(baseline, candidate, contract)
    return {"time_ratio": cmp.time_ratio, "ci95": [cmp.ci95_low, cmp.ci95_high], "verdict": cmp.verdict}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--measured-steps", type=int, default=40)
    args = parser.parse_args()
    run = Run.start()
    torch.set_num_threads(1)
    aa = [one_run("A/A", args.rounds, args.measured_steps) for _ in range(args.runs)]
    ab = [one_run("A/B", args.rounds, args.measured_steps) for _ in range(args.runs)]
    aa_ok = sum(r["verdict"] == "inconclusive" or r["ci95"][0] <= 1 <= r["ci95"][1] for r in aa)
    ab_ok = sum(r["verdict"] == "slower" and 1.5 <= r["ci95"][0] and r["ci95"][1] <= 2.7 for r in ab)
    need = -(-9 * args.runs // 10)
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
                "rounds": args.rounds,
                "measured_steps": args.measured_steps,
                "max_width_factor": MAX_WIDTH_FACTOR,
                "aa_runs": aa,
                "ab_runs": ab,
                "aa_inconclusive_or_contains_1": aa_ok,
                "ab_slower_inside_1.5_2.7": ab_ok,
                "targets": {"aa": f">= {need} of {args.runs}", "ab": f">= {need} of {args.runs}"},
                "verdict": "pass" if aa_ok >= need and ab_ok >= need else "short",
            }
        )
    )


if __name__ == "__main__":
    main()
