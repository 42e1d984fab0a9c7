"""A folder of many synthetic rank traces, one rank delayed before each collective, analyzed three ways: the process
pool (``load_ranks(folder)``), a two-worker Dask ``LocalCluster`` (``load_ranks(folder, scheduler=ADDRESS)``) and
HolisticTraceAnalysis's ``TraceAnalysis(trace_dir=...)`` + ``get_potential_stragglers(num_candidates=1)``.

The folder holds ``--ranks`` traces of about ``--events`` events each, written by tests/timeline/delayed_ranks.py
(``--steps`` steps of 4 all-reduces, each after computation kernels enough to reach the events asked; rank
``ranks // 2`` computes 2,000 us longer before each all-reduce, so the others wait 2,000 us in each), uncompressed.
10,000 events a rank by default, not 100,000: HTA read 16 ranks of 20,000 in 25 s here, so 256 of 100,000 (25.6M
events) would take it about half an hour on 2 cores; 256 of 10,000 keep the whole run near 6 minutes.
Every run is a child process that times itself after its imports and reads its peak memory (``ru_maxrss``):

- ``pool``: this repository's .venv, its workers one per core; peak = the largest of the process and its workers;
- ``cluster``: a client alone, connected to a LocalCluster of 2 single-thread worker processes started by another
  child (the scheduler's process), as a laptop connects to a cluster: the client's peak is its own process's, the
  workers' each worker's own (asked of them before they stop); run at ``--small-ranks`` ranks too, so that the
  client's peak can be compared from 8 to 256 ranks;
- ``hta``: ``--hta-python`` (traceinsight 0.6.1, its default parser and process pool); peak as ``pool``'s.

Each says the straggler it found (ours: ``straggler(job).rank``; HTA: its one candidate) and ours the wait per
collective. The load average at the start and end is recorded.

    .venv/bin/python benchmarks/ranks_cluster_scale.py [--ranks 256] [--events 10000] \
        [--hta-python .venv-hta/bin/python]

Prints one JSON line (benchmarks/results/ranks_cluster.json by ``benchmarks/collect.py ranks_cluster``); exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DELAY_US = 2_000.0
COLLECTIVES = 4
CLIENT_FLAT = 1.2  # the client's peak at the most ranks over its peak at the fewest: at most this


def _peak_mb(children: bool = True) -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if children else 0
    return max(own, workers) / 1024  # Linux: kilobytes


def _own_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ours(folder: str, scheduler: str | None) -> dict:
    """Our analysis of the folder (a child process): seconds, peaks, the straggler and its wait."""
    from gpucost_lab.timeline import load_ranks, straggler

    start = time.perf_counter()
    found = straggler(load_ranks(folder, scheduler=scheduler))
    out = {"seconds": time.perf_counter() - start, "straggler": found.rank, "wait_ms": found.wait_us.value / 1e3}
    if scheduler is None:
        return {**out, "peak_mb": _peak_mb()}
    from distributed import Client

    with Client(scheduler, set_as_default=False) as client:
        workers = client.run(_own_peak_mb)
    return {**out, "client_peak_mb": _own_peak_mb(), "worker_peak_mb": max(workers.values())}


def hta(folder: str) -> dict:
    import logging

    logging.disable(logging.CRITICAL)
    from hta.trace_analysis import TraceAnalysis

    start = time.perf_counter()
    found = TraceAnalysis(trace_dir=folder).get_potential_stragglers(num_candidates=1)
    return {"seconds": time.perf_counter() - start, "peak_mb": _peak_mb(), "straggler": [int(r) for r in found]}


def serve_cluster() -> None:
    """A LocalCluster of 2 single-thread workers: its address on stdout, then up until stdin closes."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        print(cluster.scheduler_address, flush=True)
        sys.stdin.read()


def write_folder(folder: Path, ranks: int, events: int, steps: int) -> tuple[int, int]:
    """``ranks`` traces of about ``events`` events; (the delayed rank, the events of each trace). The waiting ranks'
    traces are one file copied with its rank changed (theirs differ by nothing else)."""
    sys.path.insert(0, str(ROOT / "tests" / "timeline"))
    from delayed_ranks import schedule, write_rank

    delayed = ranks // 2
    kernels = max(1, round(events / (steps * COLLECTIVES * 2)) - 1)  # a launch and a kernel per kernel
    plan = schedule(ranks, delayed=delayed, steps=steps, collectives=COLLECTIVES, delay_us=DELAY_US)
    write_rank(folder / f"rank{delayed}.json", delayed, plan, world_size=ranks, kernels=kernels)
    template = write_rank(folder / "rank0.json", 0, plan, world_size=ranks, kernels=kernels)
    head = template.read_bytes()[:200]
    for r in range(1, ranks):
        if r != delayed:
            with template.open("rb") as src, (folder / f"rank{r}.json").open("wb") as dst:
                src.seek(len(head))
                dst.write(head.replace(b'"rank": 0', f'"rank": {r}'.encode(), 1))
                shutil.copyfileobj(src, dst, 1 << 20)
    return delayed, steps * (1 + COLLECTIVES * (kernels + 1) * 2)


def _child(python: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([python, __file__, "--child", *args], check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def on_local_cluster(python: str, folder: Path) -> dict:
    """Our analysis by a client of a fresh two-worker LocalCluster, which is always stopped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cluster = subprocess.Popen(
        [python, __file__, "--child", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        address = cluster.stdout.readline().strip()  # type: ignore[union-attr]
        return _child(python, "ours", str(folder), address)
    finally:
        cluster.stdin.close()  # type: ignore[union-attr]
        try:
            cluster.wait(timeout=60)
        except subprocess.TimeoutExpired:
            cluster.kill()
            cluster.wait()


def measure(args, ranks: int, with_hta: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        delayed, events = write_folder(folder, ranks, args.events, args.steps)
        out: dict = {"ranks": ranks, "delayed": delayed, "events_per_rank": events}
        out["pool"] = _child(args.python, "ours", str(folder))
        out["cluster"] = on_local_cluster(args.python, folder)
        if with_hta:
            out["hta"] = _child(args.hta_python, "hta", str(folder))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--small-ranks", type=int, default=8)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs ours")
    parser.add_argument("--hta-python", default=str(ROOT / ".venv-hta" / "bin" / "python"))
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, *rest = args.child
        if mode == "serve":
            serve_cluster()
            return
        print(json.dumps(hta(*rest) if mode == "hta" else ours(rest[0], rest[1] if len(rest) > 1 else None)))
        return
    load_start = os.getloadavg()
    small, large = measure(args, args.small_ranks, False), measure(args, args.ranks, True)
    flat = large["cluster"]["client_peak_mb"] / small["cluster"]["client_peak_mb"]
    found = {k: large[k]["straggler"] for k in ("pool", "cluster")} | {"hta": large["hta"]["straggler"][0]}
    result = {
        "benchmark": "ranks_cluster",
        "ranks": args.ranks,
        "small_ranks": args.small_ranks,
        "events_per_rank": args.events,
        "delay_us": DELAY_US,
        "cores": os.cpu_count(),
        "small": small,
        "large": large,
        "client_peak_ratio": flat,
        "stragglers_found": found,
        "all_found_the_delayed_rank": all(v == large["delayed"] for v in found.values()),
        "verdict": "pass" if flat <= CLIENT_FLAT and all(v == large["delayed"] for v in found.values()) else "fail",
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
