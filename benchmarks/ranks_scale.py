"""A folder of rank traces read as one job: ``gpucost_lab.timeline.load_ranks`` + ``rank_table`` against
HolisticTraceAnalysis's ``TraceAnalysis(trace_dir=...)`` + ``get_temporal_breakdown()`` on the same folder.

The folder holds ``--ranks`` synthetic traces of ``--events`` events each (``benchmarks/timeline_scale.py``'s
``write_trace``, one ``ProfilerStep#N`` every 33,400 launches: a real profile's schedule; each file's
``distributedInfo.rank`` its own), written uncompressed. Two child processes analyze it, each timing itself after
its imports and reading its peak memory with ``resource.getrusage``: ``ours`` (this repository's .venv; its workers,
one per core) and ``hta`` (``--hta-python``, traceinsight 0.6.1, its default parser and process pool). Peak memory is
the largest of the process and its workers (``RUSAGE_SELF`` and ``RUSAGE_CHILDREN``'s ``ru_maxrss``), since both
sides load ranks in a pool of worker processes; the busy time of every rank is compared as a check that both read the
same job. The load average at the start and end is recorded.

    .venv/bin/python benchmarks/ranks_scale.py [--ranks 8] [--events 1000000] [--hta-python .venv-hta/bin/python]

Prints one JSON line (also written to benchmarks/results/ranks_scale.json by ``make bench``); exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _peak_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, workers) / 1024  # Linux: kilobytes


def child(mode: str, folder: str) -> None:
    """Analyze the folder as ``mode`` says and print ``{seconds, peak_mb, busy_us}`` as JSON."""
    if mode == "ours":
        from gpucost_lab.timeline import load_ranks, rank_table

        start = time.perf_counter()
        table = rank_table(load_ranks(folder))
        busy = dict(zip(table["rank"].astype(int), table["busy_us"].astype(float)))
    else:
        import logging

        logging.disable(logging.CRITICAL)
        from hta.trace_analysis import TraceAnalysis

        start = time.perf_counter()
        row = TraceAnalysis(trace_dir=folder).get_temporal_breakdown(visualize=False)
        columns = ["rank", "compute_time(us)", "non_compute_time(us)"]
        busy = {int(rank): float(c + n) for rank, c, n in row[columns].itertuples(index=False, name=None)}
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_mb": _peak_mb(), "busy_us": {str(k): v for k, v in busy.items()}}))


def write_folder(folder: Path, ranks: int, events: int) -> None:
    """``ranks`` traces of ``events`` events, rank r's file saying rank r."""
    sys.path.insert(0, str(HERE))
    from timeline_scale import write_trace

    first = folder / "rank0.json"
    write_trace(str(first), events, gzipped=False, launches_per_step=33_400)
    for r in range(1, ranks):
        with first.open() as src, (folder / f"rank{r}.json").open("w") as dst:
            dst.write(src.readline().replace('"rank": 0', f'"rank": {r}', 1))
            while block := src.read(1 << 20):
                dst.write(block)


def run(python: str, mode: str, folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [python, __file__, "--child", mode, str(folder)], check=True, capture_output=True, text=True, env=env
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs ours")
    parser.add_argument("--hta-python", default=str(ROOT / ".venv-hta" / "bin" / "python"))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_folder(folder, args.ranks, args.events)
        ours, hta = run(args.python, "ours", folder), run(args.hta_python, "hta", folder)
    result = {
        "benchmark": "ranks_scale",
        "ranks": args.ranks,
        "events_per_rank": args.events,
        "cores": os.cpu_count(),
        "ours": ours,
        "hta": hta,
        "speedup": hta["seconds"] / ours["seconds"],
        "memory_ratio": ours["peak_mb"] / hta["peak_mb"],
        "busy_equal": ours["busy_us"] == hta["busy_us"],
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
