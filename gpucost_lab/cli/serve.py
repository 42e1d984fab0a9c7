"""``gpucost-lab serve-bench``: chapter 08's model server put under load and priced (:mod:`gpucost_lab.serve`).

It starts ``--instances`` model-server processes on 127.0.0.1 (:func:`~gpucost_lab.serve.instances.serve_instances`),
sends a few warm-up requests to each (the first calls of a fresh torch model are not the service's latency), runs
the load (MLPerf LoadGen's ``--scenario``, :func:`~gpucost_lab.serve.loadgen.run_loadgen`; or with ``--client closed``
the closed-loop client, :func:`~gpucost_lab.serve.closed_loop.run_closed_loop`, kept to show coordinated omission),
gathers the server's per-request phases and reports p50/p90/p99 with their 95% intervals, the verdict against
``--slo-ms`` (:func:`~gpucost_lab.serve.sizing.slo_verdict` on the p99's interval), the instances ``--target-qps``
needs and the price of a million requests. Every server process is stopped when the command ends, however it ends
(Ctrl-C included). Bad input raises :class:`~gpucost_lab.InputError` naming the field before any server starts; a
server that cannot start, LoadGen missing or failing, and requests that got no answer are one line too (exit 2).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from gpucost_lab import cost
from gpucost_lab._validate import InputError, integer_at_least, one_of, positive, price_per_hour
from gpucost_lab.cli.command import Command, Subcommands, add_json_flag

SCENARIOS = ("server", "single-stream", "offline")  # as gpucost_lab.serve.loadgen.SCENARIOS (imported lazily)
CLIENTS = ("loadgen", "closed")
STALLS = ("none", "serialize", "pause")  # as gpucost_lab.serve.config.STALLS
# The faults as the chapter shows them. The serialize stall turns every output value into JSON on its own: with the
# model's widest output (2,048 values, config.MAX_WIDTH) that is about 5-15 ms a request, against under 1 ms for one
# json.dumps, so at 40 requests a second the queue behind it lifts the p99 well above the healthy server's. Every run
# serves the same model (the same width), so a run with the stall and one without differ by the stall alone.
OUTPUT_WIDTH = 2048
# The pause: 300 ms every 200 requests (per instance), a collector's or a compaction's stop. At 100 requests a second
# a 3 s run meets it once: about 30 open-loop arrivals wait it out (the p99 is one of them), while a closed-loop
# user sends one slow request of about 300 (its p99 stays an ordinary request's).
PAUSE_EVERY = 200
PAUSE_MS = 300.0
WARM_UP_REQUESTS = 5  # per instance, before the load: torch's first calls and the first connection, not counted
# The most requests a run may be asked for (--qps x --duration-s): about a minute of one instance's work at the few
# hundred requests a second it serves (an Offline run sends them all at once and lasts until they are answered).
MAX_REQUESTS = 10_000
# A stated arrival rate for --target-qps: ten million requests a second is beyond the largest services' mean rate.
MAX_TARGET_QPS = 1e7
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command ended by Ctrl-C

FLAGS = {
    "scenario": "--scenario",
    "qps": "--qps",
    "slo_ms": "--slo-ms",
    "duration_s": "--duration-s",
    "instances": "--instances",
    "max_batch": "--max-batch",
    "max_wait_ms": "--max-wait-ms",
    "stall": "--stall",
    "client": "--client",
    "target_qps": "--target-qps",
    "price_per_hour_usd": "--price-per-hour",
}


def add_serve_bench(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "serve-bench",
        help="a model server under load: p50/p90/p99 with intervals, per-phase latency, SLO verdict, cost per 1M",
    )
    p.add_argument("--scenario", choices=SCENARIOS, default="server", help="LoadGen's scenario (default: server)")
    p.add_argument("--qps", type=float, default=40.0, help="target requests/s (Server), expected (Offline)")
    p.add_argument("--slo-ms", type=float, default=200.0, help="the p99 latency bound in ms")
    p.add_argument("--duration-s", type=float, default=10.0, help="the load's duration in seconds")
    p.add_argument("--instances", type=int, default=1, help="server processes, one core each")
    p.add_argument("--max-batch", type=int, default=1, help="requests the model runs together at most (1: none)")
    p.add_argument("--max-wait-ms", type=float, default=0.0, help="how long a batch waits for more requests")
    p.add_argument("--stall", choices=STALLS, default="none", help="a fault: per-request serialization or a pause")
    p.add_argument("--client", choices=CLIENTS, default="loadgen", help="loadgen (open loop) or closed (users)")
    p.add_argument("--target-qps", type=float, default=None, help="an arrival rate to size the instances for")
    p.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD, help="USD per instance")
    add_json_flag(p)
    return p


def _bounded(name: str, value: object, low: float, high: float, unit: str, *, low_open: bool = True) -> float:
    """``value`` as a float within its stated range (``(low, high]``, or ``[low, high]`` with ``low_open=False``)."""
    x = positive(name, value) if low_open else float(value)  # type: ignore[arg-type]
    if not (low < x if low_open else low <= x) or not x <= high or math.isnan(x):
        bracket = "(" if low_open else "["
        raise InputError(name, f"{name} must be in {bracket}{low:g}, {high:g}] {unit}, got {value!r}")
    return x


def _check_args(args: argparse.Namespace) -> None:
    """Every flag within its range before any server starts (README, CLI reference: ``serve-bench``)."""
    from gpucost_lab.serve.instances import MAX_INSTANCES
    from gpucost_lab.serve.loadgen import MAX_DURATION_S, MAX_QPS, MAX_SLO_MS, MIN_DURATION_S

    one_of("scenario", args.scenario, SCENARIOS)
    one_of("client", args.client, CLIENTS)
    one_of("stall", args.stall, STALLS)
    qps = _bounded("qps", args.qps, 0.0, MAX_QPS, "requests per second")
    _bounded("slo_ms", args.slo_ms, 0.0, MAX_SLO_MS, "milliseconds")
    duration_s = positive("duration_s", args.duration_s)
    _bounded("duration_s", duration_s, MIN_DURATION_S, MAX_DURATION_S, "seconds", low_open=False)
    integer_at_least("instances", args.instances, 1, MAX_INSTANCES)
    if qps * duration_s > MAX_REQUESTS:
        raise InputError(
            "qps",
            f"qps x duration_s must be at most {MAX_REQUESTS:,} requests, got {qps:g} x {duration_s:g} = "
            f"{qps * duration_s:,.0f}; lower qps or duration_s",
        )
    if args.target_qps is not None:
        _bounded("target_qps", args.target_qps, 0.0, MAX_TARGET_QPS, "requests per second")
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    if args.client == "closed" and args.scenario != "server":
        raise InputError(
            "client",
            f"client 'closed' takes scenario 'server' only (its users send at about qps), got {args.scenario!r}",
        )
    _config(args)  # the server's own knobs (max_batch, max_wait_ms) checked by ServeConfig


def _config(args: argparse.Namespace) -> Any:
    from gpucost_lab.serve.config import ServeConfig

    return ServeConfig(
        max_batch=args.max_batch,
        max_wait_ms=args.max_wait_ms,
        stall=args.stall,
        pause_every=PAUSE_EVERY,
        pause_ms=PAUSE_MS,
        output_width=OUTPUT_WIDTH,
    )


def _warm_up(service: Any) -> None:
    """A few requests to each instance, then its phase records cleared: the load's records alone are reported."""
    from gpucost_lab.serve.client import infer

    row = [0.0] * service.config.input_width
    for url in service.urls:
        for _ in range(WARM_UP_REQUESTS):
            infer(url, [row])
    service.clear_phases()


def _load(args: argparse.Namespace, service: Any) -> tuple[Any, dict | None]:
    """The load: a LoadGen run (with LoadGen's own summary) or a closed-loop run (no LoadGen figures)."""
    if args.client == "closed":
        from gpucost_lab.serve.closed_loop import MAX_THINK_MS, run_closed_loop

        users = args.instances  # one user per instance, each thinking so that together they send about --qps
        think_ms = min(MAX_THINK_MS, users * 1000.0 / args.qps)
        closed = run_closed_loop(service.urls, users=users, duration_s=args.duration_s, think_ms=think_ms)
        return closed, None
    from gpucost_lab.serve.loadgen import run_loadgen

    run = run_loadgen(
        service.urls, args.scenario, qps=args.qps, slo_ms=args.slo_ms, duration_s=args.duration_s, min_queries=1
    )
    return run, run.loadgen_summary()


def _measure(args: argparse.Namespace) -> tuple[Any, dict | None, Any, int]:
    """Serve, warm up, load, and gather: (the run, LoadGen's figures, the phases' DataFrame, the largest RSS)."""
    from gpucost_lab.serve import instances

    with instances.serve_instances(_config(args), instances=args.instances) as service:
        _warm_up(service)
        run, loadgen = _load(args, service)
        phases = service.phases()
        memory = max(service.memory_bytes())
    return run, loadgen, phases, memory


def _failure_as_input(err: Exception) -> InputError | None:
    """A server that did not start or answer, LoadGen missing or failing, no request answered: one line (exit 2)."""
    from gpucost_lab.serve.client import InferError
    from gpucost_lab.serve.closed_loop import ClosedLoopError
    from gpucost_lab.serve.instances import ServeError
    from gpucost_lab.serve.loadgen import LoadGenError

    named = {ServeError: "server", InferError: "server", LoadGenError: "loadgen", ClosedLoopError: "closed-loop client"}
    for kind, what in named.items():
        if isinstance(err, kind):
            return InputError(what, f"{what}: {err}")
    return None


def _percentiles(latencies_ms: Any) -> dict[str, dict] | None:
    from gpucost_lab.serve.percentiles import latency_percentiles

    values = [float(v) for v in latencies_ms]
    if not values:
        return None
    return {name: p.to_dict() for name, p in latency_percentiles(values).items()}


def _sizing(args: argparse.Namespace, run: Any, verdict: str) -> dict[str, Any]:
    """The instances ``--target-qps`` needs (from this run's rate per instance, only when it met the SLO) and the
    price of a million requests at the rate achieved."""
    from gpucost_lab.serve.sizing import cost_per_million_requests_usd, instances_needed

    needed, reason = None, "no --target-qps given"
    per_instance_qps = run.qps_achieved / args.instances
    if args.target_qps is not None and verdict != "meets":
        reason = (
            f"the p99's verdict against the SLO of {args.slo_ms:g} ms is {verdict!r}, not 'meets': this run gives no "
            f"rate one instance sustains within it (lower --qps, or run longer, until it meets)"
        )
    elif args.target_qps is not None:
        sized = instances_needed(args.target_qps, per_instance_qps)
        needed, reason = sized.instances, sized.reason
    price = (
        cost_per_million_requests_usd(args.price_per_hour, run.qps_achieved, args.instances).to_dict()
        if run.qps_achieved > 0
        else None
    )
    return {"instances_needed": needed, "instances_needed_reason": reason, "cost_per_million_requests_usd": price}


def serve_bench_command(args: argparse.Namespace) -> tuple[dict, str]:
    """Run the bench and assemble its JSON object and text report."""
    from gpucost_lab.serve.percentiles import DEFAULT_QUANTILES
    from gpucost_lab.serve.phase_table import percentiles_json, phase_percentiles
    from gpucost_lab.serve.sizing import slo_verdict

    try:
        run, loadgen, phases, memory = _measure(args)
    except KeyboardInterrupt:  # Ctrl-C: the servers are stopped by now (serve_instances); one line, the shell's 130
        _interrupted()
    except Exception as err:
        line = _failure_as_input(err)
        if line is None:
            raise
        raise line from None
    latency = _percentiles(run.latencies_ms)
    assert latency is not None  # both clients raise when no request was answered
    p99 = latency["p99"]
    high = math.inf if p99["ci95_high"] is None else p99["ci95_high"]
    verdict = slo_verdict(p99["ci95_low"] or 0.0, high, args.slo_ms)
    out = {
        "scenario": args.scenario,
        "client": args.client,
        "stall": args.stall,
        "qps_offered": args.qps if args.client == "closed" else run.qps_offered,
        "qps_achieved": run.qps_achieved,
        "requests": run.requests,
        "errors": run.errors,
        "duration_s": args.duration_s,
        "latency_ms": latency,
        "phases_ms": percentiles_json(phase_percentiles(phases, DEFAULT_QUANTILES), DEFAULT_QUANTILES),
        "slo_ms": args.slo_ms,
        "slo_verdict": verdict,
        "instances": args.instances,
        "target_qps": args.target_qps,
        **_sizing(args, run, verdict),
        "memory_per_instance_bytes": memory,
        "price_per_hour_usd": args.price_per_hour,
        "loadgen": None if loadgen is None else {k: loadgen[k] for k in _LOADGEN_KEYS},
    }
    return out, _text(out)


def _interrupted() -> None:
    """Ctrl-C: say so in one line and end now with the shell's status 130. The servers are stopped by then
    (serve_instances' ``finally``); an interrupt inside LoadGen's test can leave its C++ threads mid-run, whose
    teardown at a normal interpreter exit may crash, so the process ends at once (``os._exit``) after flushing."""
    import os

    print("gpucost-lab serve-bench: interrupted; every server process was stopped", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


_LOADGEN_KEYS = ("p50_ms", "p99_ms", "result_valid", "early_stopping_met", "early_stopping")


def _figure(p: dict | None) -> str:
    if p is None:
        return "none"
    low = "-" if p["ci95_low"] is None else f"{p['ci95_low']:.1f}"
    high = "inf" if p["ci95_high"] is None else f"{p['ci95_high']:.1f}"
    return f"{p['value']:.1f} [{low}-{high}]"


def _text(out: dict) -> str:
    lat = out["latency_ms"]
    lines = [
        f"{out['requests']} requests ({out['errors']} failed) to {out['instances']} instance(s), {out['scenario']} "
        f"scenario, {out['client']} client, stall {out['stall']}: {out['qps_achieved']:.1f} requests/s achieved of "
        f"{out['qps_offered']:.1f} offered",
        "latency ms, value [95% CI]: " + ", ".join(f"{k} {_figure(lat[k])}" for k in ("p50", "p90", "p99")),
        f"p99 against the SLO of {out['slo_ms']:g} ms: {out['slo_verdict']}",
        "per phase, p50 / p99 ms: "
        + ", ".join(f"{k} {_figure(v and v['p50'])} / {_figure(v and v['p99'])}" for k, v in out["phases_ms"].items()),
        f"memory per instance: {out['memory_per_instance_bytes'] / 2**20:.0f} MiB",
    ]
    price = out["cost_per_million_requests_usd"]
    if price is not None:
        lines.append(
            f"cost per million requests at ${out['price_per_hour_usd']:.2f}/h an instance: ${price['value']:.4f}"
        )
    if out["target_qps"] is not None:
        lines.append(
            f"instances for {out['target_qps']:g} requests/s: {out['instances_needed']} "
            f"({out['instances_needed_reason']})"
        )
    if out["loadgen"] is not None:
        lg = out["loadgen"]
        lines.append(
            f"LoadGen's own: p50 {lg['p50_ms']:.1f} ms, p99 {lg['p99_ms']:.1f} ms, result "
            f"{'VALID' if lg['result_valid'] else 'INVALID'}, early stopping "
            f"{'met' if lg['early_stopping_met'] else 'not met'}"
        )
    return "\n".join(lines)


COMMANDS = (Command("serve-bench", add_serve_bench, serve_bench_command, FLAGS, checks=(_check_args,)),)
