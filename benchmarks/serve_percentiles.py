"""Chapter 08's latency percentiles against MLPerf LoadGen's own, and open-loop against closed-loop p99 with a pause.

**Ours against LoadGen's, in the same run.** One instance of the model ``gpucost-lab serve-bench`` serves
(``cli/serve.py``'s ``OUTPUT_WIDTH``, no batching, no stall), warmed up as the command warms it; LoadGen's Server
scenario (Poisson arrivals, :func:`~gpucost_lab.serve.loadgen.run_loadgen`) at each of ``--agreement-qps`` for
``--agreement-s`` seconds, with at least rate x duration queries. Each run gives our p50 and p99
(:meth:`LoadGenRun.percentiles`: each latency from the request's scheduled send time, LoadGen's own order statistic)
and LoadGen's from its summary. The two count from nearly the same instants (ours stops just before
``QuerySamplesComplete``, and starts at the latest origin consistent with every query's arrival, so it falls short of
LoadGen's by at most the smallest wait for our callback), so they should be the same figure. Target: ours within 10%
of LoadGen's, or within one step between neighbouring order statistics of ours around the percentile's rank,
whichever is wider (``tests/serve/test_loadgen_runs.py`` asserts the same). The ratio ours / LoadGen's is exact (one
sample read twice; its interval is itself), so the verdict is the course's rule (``stats.decide``) applied once on
each side, two one-sided tests: "within" (pass) when the ratio over 1 + tolerance is "below" 1 and the ratio times
1 + tolerance "above" it (symmetric on the log scale, a hair stricter below than +-tolerance). Reported beside it:
ours / LoadGen's across all the runs, its geometric mean, Student-t 95% interval and the direction it shows. The
open-loop runs below are LoadGen runs too, with a heavy tail: their p50 and p99 are checked the same way.

**Open loop against closed loop, the server pausing.** One instance with ``stall="pause"`` (``cli/serve.py``'s
``PAUSE_EVERY`` and ``PAUSE_MS``: 300 ms every 200 requests since the worker started), ``--pair-rounds`` rounds, each
a closed-loop run (one user, thinking so that it sends about ``--pair-qps``, as ``serve-bench --client closed``
does; :func:`~gpucost_lab.serve.closed_loop.run_closed_loop`) and an open-loop LoadGen Server run at ``--pair-qps``,
``--pair-s`` seconds each, in a seeded random order, each with its own seed (the open loop's Poisson schedule).
A run of at least 200 requests meets at least one pause (the worker counts every request it served). The
closed-loop user sends nothing while the worker is stopped, so it records one slow request per pause, which its p99
does not reach; the open-loop arrivals keep coming and wait the pause out, and the p99 is one of them. Target (set
before measuring): the open-loop p99 at least twice the closed-loop one. The verdict: ``stats.decide`` on the
per-round ratio open p99 / (2 x closed p99), its geometric mean with the Student-t 95% interval across rounds
(``stats.Estimate``): "at least twice" (pass) when the whole interval lies above 1.

Every server started is stopped (``serve_instances``), one after the other. Prints one JSON line; exits 0 even when
short.

    .venv/bin/python benchmarks/serve_percentiles.py [--agreement-qps 40 100] [--agreement-s 5]
        [--pair-rounds 3] [--pair-qps 100] [--pair-s 4]
"""

from __future__ import annotations

import argparse
import json
import random

import numpy as np
from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run

from gpucost_lab.cli.serve import OUTPUT_WIDTH, PAUSE_EVERY, PAUSE_MS, WARM_UP_REQUESTS
from gpucost_lab.serve.client import InferClient, seeded_bodies
from gpucost_lab.serve.closed_loop import ClosedLoopRun, run_closed_loop
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.instances import serve_instances
from gpucost_lab.serve.loadgen import LoadGenRun, run_loadgen
from gpucost_lab.serve.percentiles import value_rank
from gpucost_lab.stats import Estimate, Interval, combine, decide

SLO_MS = 200.0  # serve-bench's default bound: LoadGen's Server settings need one; no verdict here rests on it
AGREEMENT_TOLERANCE = 0.10  # the target: within 10% of LoadGen's (or one order-statistic step)
PAIR_FACTOR = 2.0  # the target: the open-loop p99 at least twice the closed-loop one
SEED = 0


def warm_up(url: str) -> None:
    """As ``serve-bench`` does: a few requests before the load (torch's first calls, the first connection)."""
    bodies = seeded_bodies(1, ServeConfig().input_width, SEED)
    with InferClient(url) as client:
        for _ in range(WARM_UP_REQUESTS):
            client.post(bodies[0])


def step_ms(latencies_ms: tuple[float, ...], quantile: float) -> float:
    """The wider of the gaps between the order statistic at the quantile's rank (LoadGen's) and its two neighbours."""
    ordered = np.sort(np.asarray(latencies_ms))
    k = value_rank(len(ordered), quantile) - 1  # 0-based
    below = ordered[k] - ordered[max(k - 1, 0)]
    above = ordered[min(k + 1, len(ordered) - 1)] - ordered[k]
    return float(max(below, above))


def within(ratio: float, margin: float) -> str:
    """ "within" when ``ratio`` lies within ``margin`` of 1 (between 1 / (1 + margin) and 1 + margin), by the course's
    rule applied twice, one side each (two one-sided tests): the ratio over 1 + margin decided "below" 1 and the ratio
    times 1 + margin decided "above" it; else "outside". The ratio is exact (one sample read twice): its interval is
    itself."""
    high, low = ratio / (1.0 + margin), ratio * (1.0 + margin)
    below = decide(Interval(high, high, high), "below", "above") == "below"
    above = decide(Interval(low, low, low), "below", "above") == "above"
    return "within" if below and above else "outside"


def agreement(run: LoadGenRun, label: str) -> dict:
    """Our p50 and p99 against LoadGen's in ``run``: the ratio, the tolerance and the verdict of each."""
    ours = run.percentiles((0.5, 0.99))
    out: dict = {"run": label, "qps_offered": run.qps_offered, "requests": run.requests, "errors": run.errors}
    for name, quantile in (("p50", 0.5), ("p99", 0.99)):
        mine, theirs = ours[name].value, run.loadgen_latency_ms[name]
        tolerance_ms = max(AGREEMENT_TOLERANCE * theirs, step_ms(run.latencies_ms, quantile))
        ratio = mine / theirs
        out[name] = {
            "ours_ms": mine,
            "ours_ci95_ms": [ours[name].ci95_low, ours[name].ci95_high if np.isfinite(ours[name].ci95_high) else None],
            "loadgen_ms": theirs,
            "ours_over_loadgen": ratio,
            "tolerance_ms": tolerance_ms,
            "verdict": within(ratio, tolerance_ms / theirs),
        }
    return out


def direction(runs: list[dict]) -> dict:
    """Reported beside the verdict: ours / LoadGen's across the runs (geometric mean, Student-t 95% interval) for p50
    and p99, and the direction the course's rule reads from it (ours should fall short by the smallest issue wait)."""
    out = {}
    for name in ("p50", "p99"):
        ratio = Estimate.of(r[name]["ours_over_loadgen"] for r in runs)
        out[f"{name}_ours_over_loadgen"] = {**ratio.to_dict(), "verdict": decide(ratio.interval, "below", "above")}
    return out


def agreement_runs(args: argparse.Namespace) -> list[dict]:
    """LoadGen Server runs against the healthy server at each rate; ours against LoadGen's in each."""
    config = ServeConfig(output_width=OUTPUT_WIDTH)
    out = []
    with serve_instances(config, instances=1) as service:
        warm_up(service.urls[0])
        for qps in args.agreement_qps:
            run = run_loadgen(
                service.urls,
                "server",
                qps=qps,
                slo_ms=SLO_MS,
                duration_s=args.agreement_s,
                min_queries=max(1, round(qps * args.agreement_s)),
                seed=SEED,
            )
            out.append(agreement(run, f"{qps:g} QPS"))
    return out


def pair_round(
    urls: tuple[str, ...], first: str, seed: int, args: argparse.Namespace
) -> tuple[ClosedLoopRun, LoadGenRun]:
    """One closed-loop and one open-loop run against the pausing server, ``first`` first (``seed``: the open-loop
    schedule's and the closed loop's bodies')."""
    think_ms = 1000.0 / args.pair_qps  # one user, as serve-bench --client closed: users x 1000 / qps
    closed = opened = None
    for side in (first, "open" if first == "closed" else "closed"):
        if side == "closed":
            closed = run_closed_loop(urls, users=1, duration_s=args.pair_s, think_ms=think_ms, seed=seed)
        else:
            opened = run_loadgen(
                urls, "server", qps=args.pair_qps, slo_ms=SLO_MS, duration_s=args.pair_s, min_queries=1, seed=seed
            )
    assert closed is not None and opened is not None
    return closed, opened


def pair_runs(args: argparse.Namespace) -> tuple[list[dict], list[dict]]:
    """The rounds against the pausing server: each round's p99s, and ours against LoadGen's in each open run."""
    config = ServeConfig(stall="pause", pause_every=PAUSE_EVERY, pause_ms=PAUSE_MS, output_width=OUTPUT_WIDTH)
    order = random.Random(SEED)
    rounds, agreements = [], []
    with serve_instances(config, instances=1) as service:
        warm_up(service.urls[0])
        for index in range(args.pair_rounds):
            first = order.choice(["closed", "open"])
            closed, opened = pair_round(service.urls, first, SEED + index, args)
            closed_p99, open_p99 = closed.percentiles()["p99"], opened.percentiles()["p99"]
            rounds.append(
                {
                    "first": first,
                    "closed_requests": closed.requests,
                    "closed_qps": closed.qps_achieved,
                    "closed_pauses_met": sum(v >= PAUSE_MS for v in closed.latencies_ms),
                    "closed_p99_ms": closed_p99.value,
                    "closed_max_ms": max(closed.latencies_ms),
                    "open_requests": opened.requests,
                    "open_qps": opened.qps_achieved,
                    "open_over_half_the_pause": sum(v >= PAUSE_MS / 2 for v in opened.latencies_ms),
                    "open_p99_ms": open_p99.value,
                    "open_loadgen_p99_ms": opened.loadgen_p99_ms,
                    "open_over_closed_p99": open_p99.value / closed_p99.value,
                    "errors": closed.errors + opened.errors,
                }
            )
            agreements.append(agreement(opened, f"{args.pair_qps:g} QPS, pause, round {index + 1}"))
    return rounds, agreements


def pair_summary(rounds: list[dict]) -> dict:
    ratio = Estimate.of(r["open_over_closed_p99"] for r in rounds)
    over_target = combine((ratio, 1), (PAIR_FACTOR, -1))
    verdict = decide(over_target, "short of twice", "at least twice")
    return {
        "open_over_closed_p99": ratio.to_dict(),
        "open_over_twice_closed": {**over_target.to_dict(), "verdict": verdict},
        "open_p99_ms": Estimate.of(r["open_p99_ms"] for r in rounds).to_dict(),
        "closed_p99_ms": Estimate.of(r["closed_p99_ms"] for r in rounds).to_dict(),
        "verdict": "pass" if verdict == "at least twice" else "short",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agreement-qps", type=float, nargs="+", default=[40.0, 100.0])
    parser.add_argument("--agreement-s", type=float, default=5.0, help="seconds of each agreement run")
    parser.add_argument("--pair-rounds", type=int, default=3)
    parser.add_argument("--pair-qps", type=float, default=100.0, help="open-loop rate; the closed loop's about")
    parser.add_argument("--pair-s", type=float, default=4.0, help="seconds of each closed and open run")
    args = parser.parse_args()
    if args.pair_rounds < 2:
        parser.error(f"--pair-rounds must be at least 2 (an interval across rounds needs two), got {args.pair_rounds}")
    run = Run.start("mlcommons-loadgen")
    healthy = agreement_runs(args)
    rounds, paused = pair_runs(args)
    checks = [c[name]["verdict"] for c in healthy + paused for name in ("p50", "p99")]
    agree = all(v == "within" for v in checks)
    pair = pair_summary(rounds)
    print(
        json.dumps(
            {
                "benchmark": "serve_percentiles",
                "run": run.finish(),
                "slo_ms": SLO_MS,
                "pause_every": PAUSE_EVERY,
                "pause_ms": PAUSE_MS,
                "targets": {
                    "agreement": f"ours within {AGREEMENT_TOLERANCE:.0%} of LoadGen's or one order-statistic step",
                    "open_vs_closed": f"open-loop p99 >= {PAIR_FACTOR:g} x closed-loop p99 (95% interval)",
                },
                "agreement": {
                    "runs": healthy + paused,
                    "within": sum(v == "within" for v in checks),
                    **direction(healthy + paused),
                    "checks": len(checks),
                    "verdict": "pass" if agree else "short",
                },
                "open_vs_closed": {**pair, "rounds": rounds},
                "verdict": "pass" if agree and pair["verdict"] == "pass" else "short",
            }
        )
    )


if __name__ == "__main__":
    main()
