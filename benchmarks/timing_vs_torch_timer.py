"""``gpucost_lab.measure.timing.measure`` against ``torch.utils.benchmark.Timer(...).blocked_autorange()``.

The same step functions, the same thread count (``Timer`` defaults to ONE thread; here it is given
``torch.get_num_threads()``), measured in alternation ``--rounds`` times so that drift of a shared machine
falls on both alike:

- ``linear``: the worked example's training step, ``gpucost_lab.course.profile_to_cost.LinearWorkload.step``
  (Linear(1024, 1024), batch 256, MSE loss, SGD);
- ``mlp``: ``gpucost_lab.quality.train.TrainingStep(ClassificationTask(), batch_size=256)`` (a small MLP step).

Ours runs ``--repeats`` repeats of enough steps to last about as long as one Timer run (``--min-run-time``).
Ours is measured twice per round: as shipped (Python's garbage collector on) and with ``gc.disable()``, as timeit
and so Timer time. Figures per workload: our median seconds per step (the median of every repeat's per-step
time, all rounds pooled) over Timer's median (the median of every block's per-step time, all rounds pooled):
target within 3%;
whether each round's 95% CI (``Measurement.step_time_s``, an interval for the mean of that round's repeat means)
contains that round's Timer median, and whether the pooled CI across rounds does. Harness overhead: an empty
step timed with ``measure`` (seconds per step), beside Timer's own figure for an empty statement; target:
under 1% of the faster workload's step time. Prints one JSON line; exit 0 even when short.

    .venv/bin/python benchmarks/timing_vs_torch_timer.py [--rounds 5] [--min-run-time 1.0] [--threads N]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import time

import torch
import torch.utils.benchmark as tb
from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run

from gpucost_lab.course.profile_to_cost import LinearWorkload
from gpucost_lab.measure.contract import BenchmarkContract
from gpucost_lab.measure.timing import measure
from gpucost_lab.quality.tasks import ClassificationTask
from gpucost_lab.quality.train import TrainingStep
from gpucost_lab.stats import Estimate


def timer_run(step, threads: int, min_run_time: float):
    m = tb.Timer(stmt="step()", globals={"step": step}, num_threads=threads).blocked_autorange(
        min_run_time=min_run_time
    )
    return m.median, list(m.times)  # m.times: per-run (per-step) time of each block


def sized(step, args) -> int:
    """``--measured-steps``, or enough steps that one round of ours lasts about as long as one of Timer's."""
    if args.measured_steps:
        return args.measured_steps
    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(10):
        step()
    per_step = (time.perf_counter() - t0) / 10
    return max(20, math.ceil(args.min_run_time / args.repeats / per_step))


def _ours(step, contract: BenchmarkContract, gc_off: bool):
    if not gc_off:
        return measure(step, contract).step_time_s
    gc.disable()  # as timeit (and so Timer) does while timing
    try:
        return measure(step, contract).step_time_s
    finally:
        gc.enable()


def compare(name: str, step, contract: BenchmarkContract, threads: int, rounds: int, min_run_time: float) -> dict:
    ours_steps, nogc_steps, timer_times, per_round = [], [], [], []
    orders = [("ours", "nogc", "timer"), ("timer", "ours", "nogc"), ("nogc", "timer", "ours")]
    for r in range(rounds):
        for who in orders[r % 3]:  # rotate who goes first
            if who == "ours":
                est = _ours(step, contract, gc_off=False)
            elif who == "nogc":
                nogc = _ours(step, contract, gc_off=True)
            else:
                t_med, t_times = timer_run(step, threads, min_run_time)
        ours_steps.extend(est.values)
        nogc_steps.extend(nogc.values)
        timer_times.extend(t_times)
        per_round.append(
            {
                "ours_geomean_s": est.geomean,
                "ours_ci95_s": [est.ci95_low, est.ci95_high],
                "ours_median_s": statistics.median(est.values),
                "ours_gc_off_median_s": statistics.median(nogc.values),
                "timer_median_s": t_med,
                "ci_contains_timer_median": est.ci95_low <= t_med <= est.ci95_high,
            }
        )
    ours_med, timer_med = statistics.median(ours_steps), statistics.median(timer_times)
    nogc_med = statistics.median(nogc_steps)
    pooled = Estimate.of(p["ours_geomean_s"] for p in per_round)  # a CI across rounds sees the drift between them
    ratio = ours_med / timer_med
    return {
        "workload": name,
        "measured_steps": contract.measured_steps,
        "repeats": contract.repeats,
        "ours_median_step_s": ours_med,
        "timer_median_step_s": timer_med,
        "ours_over_timer_median": ratio,
        "target_within": 0.03,
        "medians_agree": abs(ratio - 1) <= 0.03,
        "timer_mean_step_s": statistics.fmean(timer_times),
        "ours_over_timer_mean": ours_med / statistics.fmean(timer_times),
        "ours_gc_off_median_step_s": nogc_med,
        "ours_gc_off_over_timer_median": nogc_med / timer_med,
        "rounds_ci_contains_timer_median": sum(p["ci_contains_timer_median"] for p in per_round),
        "rounds": rounds,
        "pooled_ci95_s": [pooled.ci95_low, pooled.ci95_high],
        "pooled_ci_contains_timer_median": pooled.ci95_low <= timer_med <= pooled.ci95_high,
        "per_round": per_round,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-run-time", type=float, default=1.0, help="Timer.blocked_autorange's, seconds")
    parser.add_argument(
        "--measured-steps",
        type=int,
        default=0,
        help="steps per repeat; 0 (default): enough for repeats x steps to last --min-run-time",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="torch threads for both (0: torch's default)")
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error(f"--rounds must be at least 2 (a CI across rounds needs two), got {args.rounds}")
    run = Run.start()
    if args.threads:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    kw = dict(device="cpu", warmup_steps=5, repeats=args.repeats)

    linear = LinearWorkload.build("cpu")
    c_lin = BenchmarkContract.capture(
        inputs=[(256, 1024)],
        model_name="Linear(1024, 1024)",
        parameter_count=1024 * 1025,
        **kw,
        measured_steps=sized(linear.step, args),
    )
    mlp = TrainingStep(ClassificationTask(), batch_size=256)
    c_mlp = BenchmarkContract.capture(model=mlp.model, inputs=[mlp.x], **kw, measured_steps=sized(mlp, args))
    results = [
        compare("linear_worked_example", linear.step, c_lin, threads, args.rounds, args.min_run_time),
        compare("mlp_training_step", mlp, c_mlp, threads, args.rounds, args.min_run_time),
    ]

    def empty() -> None:
        return None

    c_empty = BenchmarkContract.capture(
        inputs=[(1,)],
        model_name="empty",
        parameter_count=0,
        device="cpu",
        warmup_steps=5,
        measured_steps=10_000,
        repeats=5,
    )
    overhead = measure(empty, c_empty).step_time_s
    timer_empty = (
        tb.Timer(stmt="step()", globals={"step": empty}, num_threads=threads).blocked_autorange(min_run_time=0.5).median
    )
    fastest = min(r["timer_median_step_s"] for r in results)
    overhead_fraction = overhead.geomean / fastest
    all_agree = all(r["medians_agree"] for r in results)
    print(
        json.dumps(
            {
                "benchmark": "timing_vs_torch_timer",
                "cpu_model": BenchmarkContract.capture(inputs=[(1,)], device="cpu").cpu_model,
                "cpu_cores": os.cpu_count(),
                "threads": threads,
                "python": platform.python_version(),
                "torch": torch.__version__,
                "run": run.finish(),
                "results": results,
                "harness_overhead_s_per_step": overhead.geomean,
                "harness_overhead_ci95_s": [overhead.ci95_low, overhead.ci95_high],
                "timer_empty_stmt_s": timer_empty,
                "overhead_over_fastest_step": overhead_fraction,
                "overhead_target_fraction": 0.01,
                "targets": {
                    "median_agreement": "within 3%",
                    "ci_contains_timer_median": "reported",
                    "overhead": "< 1% of the faster step",
                },
                "verdict": "pass" if all_agree and overhead_fraction < 0.01 else "short",
            }
        )
    )


if __name__ == "__main__":
    main()
