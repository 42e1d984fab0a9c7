"""Chapter 08's model server against its own model called in-process: what HTTP costs per request.

The served side: one instance of ``gpucost_lab.serve`` (uvicorn with h11 on asyncio, the Starlette app, one torch
thread; :func:`~gpucost_lab.serve.instances.serve_instances`) serving the model ``gpucost-lab serve-bench`` serves
(``cli/serve.py``'s ``OUTPUT_WIDTH``: 2,048 outputs, no batching, no stall), warmed up with
``--warm-up`` requests, then a closed loop of one user with no think time
(:func:`~gpucost_lab.serve.closed_loop.run_closed_loop`) for ``--round-s`` seconds per round: each latency from just
before the request is written to the socket until the whole answer is read.

The reference, at its best: the same work called directly in this process on one torch thread, warmed up the same
way, on the same seeded request bodies (:func:`~gpucost_lab.serve.client.seeded_bodies`): the steps of the app's
``/infer`` handler that are not HTTP, written out here with the package's public pieces (the body's JSON decoded, its
rows made a float64 tensor checked finite and within bounds and cast to float32, :func:`~gpucost_lab.serve.model.
forward`, :func:`~gpucost_lab.serve.app.serialize`), each call timed on ``time.perf_counter_ns``.

``--rounds`` rounds, each one block of each side in a seeded random order (so drift and the scheduler's rhythm fall
on both alike); each block's figure is its median latency. Figures: the overhead per request (the geometric means of
the served and the direct block medians, their difference in ms), the served / direct ratio (the geometric mean of
the paired per-round ratios with its Student-t 95% interval, ``stats.Estimate``), and the server's own per-request
phases (``Service.phases``: the time inside the app, against the client's latency).

Target, set before measuring: an overhead under ``--target-ms`` (2 ms) a request. Why 2 ms: the chapter's rates are a
few hundred requests a second on one instance (``serve/config.py``); at 300 a second a request has 3.3 ms of the
instance's core in all, and the model and its serialization (the ``json.dumps`` of 2,048 outputs alone is under 1 ms,
``cli/serve.py``) must fit in it beside HTTP, so HTTP may take at most about 2 ms. That uvicorn's pure-Python h11
protocol, Starlette's routing and response, the asyncio turns of the batcher and the client's ``http.client`` each
cost some hundreds of microseconds a request on loopback is an assumption, stated here, which this benchmark checks.
The verdict is the course's one rule (``stats.decide``) on the per-round ratio
served / (direct + target): "within" (pass) when its whole 95% interval lies below 1, that is when the overhead is
below the target with 95% confidence. Every server started is stopped (``serve_instances``). Prints one JSON line;
exits 0 even when short.

    .venv/bin/python benchmarks/serve_overhead.py [--rounds 20] [--round-s 0.3] [--warm-up 50] [--target-ms 2]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import torch
from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run

from gpucost_lab.cli.serve import OUTPUT_WIDTH
from gpucost_lab.serve.app import MAX_ABS_INPUT, PHASE_FIELDS, serialize
from gpucost_lab.serve.client import InferClient, seeded_bodies
from gpucost_lab.serve.closed_loop import run_closed_loop
from gpucost_lab.serve.config import ServeConfig
from gpucost_lab.serve.instances import serve_instances
from gpucost_lab.serve.model import build_model, forward
from gpucost_lab.stats import Estimate, RatioVerdict, combine, decide

# The closed loop's defaults (closed_loop.run_closed_loop): 8 seeded one-row bodies of seed 0; the reference sends the
# same ones.
SAMPLES = 8
SEED = 0


def direct_call(model: torch.nn.Module, body: bytes) -> bytes:
    """The handler's work on ``body`` without HTTP: decode, check and convert the rows, run the model, serialize."""
    inputs = json.loads(body)["inputs"]
    tensor = torch.tensor(inputs, dtype=torch.float64)
    if not bool(torch.isfinite(tensor).all()) or float(tensor.abs().max()) > MAX_ABS_INPUT:
        raise ValueError("a seeded body out of the server's bounds")
    return serialize(forward(model, tensor.to(torch.float32)), "none")


def direct_block(model: torch.nn.Module, bodies: tuple[bytes, ...], seconds: float) -> list[float]:
    """Direct calls for ``seconds``, cycling through ``bodies``: each call's latency in ms."""
    latencies_ms, index = [], 0
    deadline_ns = time.perf_counter_ns() + int(seconds * 1e9)
    while time.perf_counter_ns() < deadline_ns:
        start_ns = time.perf_counter_ns()
        direct_call(model, bodies[index % len(bodies)])
        latencies_ms.append((time.perf_counter_ns() - start_ns) / 1e6)
        index += 1
    return latencies_ms


def warm_up(url: str, model: torch.nn.Module, bodies: tuple[bytes, ...], requests: int) -> None:
    """``requests`` calls on each side before anything is timed: torch's first calls, the first connection."""
    with InferClient(url) as client:
        for i in range(requests):
            client.post(bodies[i % len(bodies)])
    for i in range(requests):
        direct_call(model, bodies[i % len(bodies)])


def rounds(url: str, model: torch.nn.Module, bodies: tuple[bytes, ...], args: argparse.Namespace) -> list[dict]:
    """``args.rounds`` rounds of one served and one direct block, in a seeded random order: each block's median."""
    order = random.Random(SEED)
    out = []
    for _ in range(args.rounds):
        sides = ["served", "direct"]
        order.shuffle(sides)
        medians, counts = {}, {}
        for side in sides:
            if side == "served":
                latencies = run_closed_loop([url], users=1, duration_s=args.round_s).latencies_ms
            else:
                latencies = direct_block(model, bodies, args.round_s)
            medians[side], counts[side] = statistics.median(latencies), len(latencies)
        out.append(
            {
                "first": sides[0],
                "served_median_ms": medians["served"],
                "direct_median_ms": medians["direct"],
                "served_requests": counts["served"],
                "direct_calls": counts["direct"],
            }
        )
    return out


def phase_medians(phases) -> dict:
    """The server's own record: each phase's median and the median of their sum (the time inside the app), in ms."""
    inside = phases[list(PHASE_FIELDS)].sum(axis=1)
    return {
        "requests": int(len(phases)),
        "in_app_median_ms": float(inside.median()),
        **{f"{name.removesuffix('_ms')}_median_ms": float(phases[name].median()) for name in PHASE_FIELDS},
    }


def summary(per_round: list[dict], phases: dict, target_ms: float) -> dict:
    """The figures and the verdict from the rounds (module docstring)."""
    served = Estimate.of(r["served_median_ms"] for r in per_round)
    direct = Estimate.of(r["direct_median_ms"] for r in per_round)
    paired = Estimate.of(r["served_median_ms"] / r["direct_median_ms"] for r in per_round)
    ratio = RatioVerdict(combine((paired, 1)), subject="served / direct latency", lower="faster", higher="slower")
    budget = Estimate.of(r["served_median_ms"] / (r["direct_median_ms"] + target_ms) for r in per_round)
    budget_interval = combine((budget, 1))
    budget_verdict = decide(budget_interval, "within", "over")
    overheads = [r["served_median_ms"] - r["direct_median_ms"] for r in per_round]
    return {
        "served_median_ms": served.to_dict(),
        "direct_median_ms": direct.to_dict(),
        "overhead_ms_per_request": served.geomean - direct.geomean,
        "overhead_ms_per_round_min_max": [min(overheads), max(overheads)],
        "served_over_direct": ratio.to_dict(),
        "served_over_direct_plus_target": {**budget_interval.to_dict(), "verdict": budget_verdict},
        "outside_app_median_ms": served.geomean - phases["in_app_median_ms"],
        "verdict": "pass" if budget_verdict == "within" else "short",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--round-s", type=float, default=0.3, help="seconds of each side per round")
    parser.add_argument("--warm-up", type=int, default=50, help="requests (and direct calls) before timing")
    parser.add_argument("--target-ms", type=float, default=2.0, help="the overhead a request may add, ms")
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error(f"--rounds must be at least 2 (an interval across rounds needs two), got {args.rounds}")
    run = Run.start()
    torch.set_num_threads(1)
    config = ServeConfig(output_width=OUTPUT_WIDTH)
    model = build_model(config)  # the served model: the same seed, so the same weights
    bodies = seeded_bodies(SAMPLES, config.input_width, SEED)
    with serve_instances(config, instances=1) as service:
        warm_up(service.urls[0], model, bodies, args.warm_up)
        service.clear_phases()
        per_round = rounds(service.urls[0], model, bodies, args)
        phases = phase_medians(service.phases())
    print(
        json.dumps(
            {
                "benchmark": "serve_overhead",
                "run": run.finish(),
                "config": config.to_dict(),
                "rounds": args.rounds,
                "round_s": args.round_s,
                "warm_up_requests": args.warm_up,
                "threads": torch.get_num_threads(),
                "target_ms": args.target_ms,
                "targets": {"overhead": f"< {args.target_ms:g} ms per request (95% interval)"},
                **summary(per_round, phases, args.target_ms),
                "server_phases": phases,
                "per_round": per_round,
            }
        )
    )


if __name__ == "__main__":
    main()
