"""Time per optimizer step with gradient accumulation: K microbatches of B/K against one batch of B.

Model fitted (the ledger's stated model, ``gpucost_lab.memory.figures``):

    T(B, K) = o + K x c + B x p

``o`` is paid once per optimizer step (zero_grad and the optimizer's update), ``c`` once per microbatch (the
fixed cost of a forward + backward whatever its size: operator dispatch, reading every weight, adding each
microbatch's gradients into the accumulated ones) and ``p`` per sample. At a fixed global batch B the step
time then grows linearly with K, and relative to one batch of B

    step_time_factor(K) = T(B, K) / T(B, 1) = 1 + (K - 1) x f,   f = c / T(B, 1)

``f``, the per-microbatch overhead as a fraction of the one-batch step, is what the ledger takes
(``MemoryLedger(microbatch_overhead_fraction=...)``).

Workload: the MLP 784-1024-1024-10 of ``ledger_accuracy.py`` (1,863,690 parameters), float32, AdamW, one torch
thread (two threads on this shared 2-core machine make times bimodal). Each (B, K) is timed in ``--rounds``
rounds, the configurations in a seeded random order inside each round (interleaved, so drift hits all alike);
a round times ``--steps`` optimizer steps after one warm-up step. Figure per configuration: the median over
rounds of the mean step time. ``o``, ``c`` and ``p`` are fitted by least squares on all configurations;
reported: c, p, o, f at each B, the fitted factor against the measured one for every (B, K), and the line fitted
at each B alone (its slope is c measured at that batch: the same slope at every B supports a per-microbatch cost).

Target: the model's factor within 10% of the measured factor at every (B, K) (good enough to price accumulation
with; on this shared machine one configuration's step time varies by 10-20% between rounds). Ratios only: the
absolute times depend on the machine.

    .venv/bin/python benchmarks/accumulation_timing.py [--rounds 9] [--steps 10] [--threads 1]

Prints one JSON line; exit 0 even when short.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time

import numpy as np
import torch
from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run
from torch import nn

from gpucost_lab.measure.contract import cpu_model

BATCHES = (32, 64, 128, 256)
ACCUMULATION = (1, 2, 4, 8)


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )


def optimizer_step(
    model: nn.Module, opt: torch.optim.Optimizer, chunks: list[torch.Tensor], targets: list[torch.Tensor]
) -> None:
    """One optimizer step over the microbatches ``chunks``: each loss scaled by 1/K so the update equals one
    batch's."""
    opt.zero_grad(set_to_none=True)
    k = len(chunks)
    for x, y in zip(chunks, targets):
        loss = nn.functional.cross_entropy(model(x), y) / k
        loss.backward()
    opt.step()


def time_config(model, opt, batch: int, k: int, steps: int) -> float:
    g = torch.Generator().manual_seed(batch * 100 + k)
    x = torch.randn(batch, 784, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    chunks, targets = list(x.chunk(k)), list(y.chunk(k))
    optimizer_step(model, opt, chunks, targets)  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        optimizer_step(model, opt, chunks, targets)
    return (time.perf_counter() - t0) / steps


def fit(configs: list[tuple[int, int]], times_s: list[float]) -> tuple[float, float, float]:
    """Least squares T = o + K c + B p: returns (o, c, p) in seconds."""
    a = np.array([[1.0, k, b] for b, k in configs])
    (o, c, p), *_ = np.linalg.lstsq(a, np.array(times_s), rcond=None)
    return float(o), float(c), float(p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = make_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    configs = [(b, k) for b in BATCHES for k in ACCUMULATION]
    rng = random.Random(0)
    samples: dict[tuple[int, int], list[float]] = {c: [] for c in configs}
    run = Run.start()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        order = configs[:]
        rng.shuffle(order)
        for b, k in order:
            samples[(b, k)].append(time_config(model, opt, b, k, args.steps))
    medians = {c: statistics.median(v) for c, v in samples.items()}
    o, c, p = fit(configs, [medians[cfg] for cfg in configs])
    rows = []
    for b, k in configs:
        measured = medians[(b, k)] / medians[(b, 1)]
        f = c / (o + c + b * p)
        model_factor = 1 + (k - 1) * f
        rows.append(
            {
                "batch": b,
                "accumulation_steps": k,
                "microbatch": b // k,
                "step_time_ms": medians[(b, k)] * 1e3,
                "measured_factor": measured,
                "model_factor": model_factor,
                "model_over_measured": model_factor / measured,
                "overhead_fraction": f,
            }
        )
    worst = max(abs(r["model_over_measured"] - 1) for r in rows)
    # the same line fitted at each batch alone: is c the same whatever the batch (a per-microbatch cost)?
    per_batch = {}
    for b in BATCHES:
        slope, intercept = np.polyfit(ACCUMULATION, [medians[(b, k)] for k in ACCUMULATION], 1)
        per_batch[str(b)] = {"per_microbatch_s": float(slope), "overhead_fraction": float(slope / (intercept + slope))}
    print(
        json.dumps(
            {
                "benchmark": "accumulation_timing",
                "started": started,
                "load_average_before": load_before,
                "load_average_after": os.getloadavg(),
                "cpu_model": cpu_model(),
                "cpu_cores": os.cpu_count(),
                "threads": args.threads,
                "python": platform.python_version(),
                "torch": torch.__version__,
                "rounds": args.rounds,
                "steps_per_round": args.steps,
                "run": run.finish(),
                "fit": {"per_step_s": o, "per_microbatch_s": c, "per_sample_s": p},
                "overhead_fraction_by_batch": {str(b): c / (o + c + b * p) for b in BATCHES},
                "fit_at_each_batch": per_batch,
                "results": rows,
                "worst_model_error": worst,
                "targets": {"model_factor": "within 10% of the measured factor at every (batch, accumulation_steps)"},
                "verdict": "pass" if worst <= 0.10 else "short",
            }
        )
    )


if __name__ == "__main__":
    main()
