"""``gpucost_lab.timeline`` against HolisticTraceAnalysis (HTA): agreement, speed and memory.

For each GPU fixture in ``gpucost_lab/data/hta_traces/`` and for a synthetic trace of ``--events`` events
(written by ``benchmarks/timeline_scale.py``'s ``write_trace``; it carries ``distributedInfo.rank`` so HTA reads
it), two child processes analyze the same file, each timing itself and reading its own peak RSS with
``resource.getrusage`` (self and any children it spawned):

- ``ours`` (this repository's .venv): ``load_trace`` + ``busy_idle``;
- ``hta`` (``--hta-python``, a scratch venv with ``traceinsight``): ``TraceAnalysis(trace_dir=...)`` +
  ``get_temporal_breakdown()``; busy = compute + non-compute time, idle = idle time.

Targets: busy and idle agree within 1% (relative to HTA's); ours at least 10x faster end to end (load + temporal
breakdown, timed inside each child after imports; the whole child's wall time is reported too); the synthetic
trace analyzed by ours in under 10 s and 2 GB peak RSS. HTA is not a project dependency:

    python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install traceinsight
    .venv/bin/python benchmarks/trace_vs_hta.py [--events 1000000] [--hta-python /tmp/htavenv/bin/python]

Prints one JSON line; exit 0 even when a target is missed ("verdict": "short").
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FIXTURES = ROOT / "gpucost_lab" / "data" / "hta_traces"
GPU_TRACES = ["sampled_rank0_gpu.json.gz", "a100_alexnet_train.json.gz", "a100_cuda_event_sync.json.gz"]


def peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024  # Linux: kilobytes


def child(mode: str, path: str) -> None:
    if mode == "ours":
        from gpucost_lab.timeline import busy_idle, load_trace

        t0 = time.perf_counter()
        b = busy_idle(load_trace(path))
        elapsed = time.perf_counter() - t0
        out = {"busy_us": b.busy_us, "idle_us": b.idle_us, "span_us": b.span_us}
    else:
        import logging
        from importlib.metadata import version

        logging.disable(logging.WARNING)
        from hta.trace_analysis import TraceAnalysis

        with tempfile.TemporaryDirectory() as tmp:
            os.symlink(path, Path(tmp) / Path(path).name)  # HTA reads every trace file in the directory
            t0 = time.perf_counter()
            row = TraceAnalysis(trace_dir=tmp).get_temporal_breakdown(visualize=False).iloc[0]
            elapsed = time.perf_counter() - t0
        out = {"busy_us": float(row["compute_time(us)"]) + float(row["non_compute_time(us)"]),
               "idle_us": float(row["idle_time(us)"]), "span_us": float(row["kernel_time(us)"]),
               "hta_version": version("traceinsight")}
    out.update({"load_plus_breakdown_s": elapsed, "peak_rss_mb": peak_rss_mb()})
    print(json.dumps(out))


def run_child(python: str, mode: str, path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    out = subprocess.run([python, __file__, "--child", mode, str(path)], check=True, capture_output=True,
                         text=True, env=env)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = time.perf_counter() - t0
    return result


def compare(name: str, path: Path, hta_python: str) -> dict:
    ours, hta = run_child(sys.executable, "ours", path), run_child(hta_python, "hta", path)
    busy_rel = ours["busy_us"] / hta["busy_us"] - 1 if hta["busy_us"] else None
    idle_rel = ours["idle_us"] / hta["idle_us"] - 1 if hta["idle_us"] else (0.0 if not ours["idle_us"] else None)
    speedup = hta["load_plus_breakdown_s"] / ours["load_plus_breakdown_s"]
    return {"trace": name, "ours": ours, "hta": hta, "busy_rel_diff": busy_rel, "idle_rel_diff": idle_rel,
            "agree_within_1pct": busy_rel is not None and idle_rel is not None
            and abs(busy_rel) <= 0.01 and abs(idle_rel) <= 0.01,
            "speedup_load_plus_breakdown": speedup,
            "speedup_process_wall": hta["process_wall_s"] / ours["process_wall_s"],
            "at_least_10x_faster": speedup >= 10}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--hta-python", default="/tmp/htavenv/bin/python")
    parser.add_argument("--skip-fixtures", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sys.path.insert(0, str(HERE))
    from timeline_scale import write_trace

    rows = [] if args.skip_fixtures else [compare(n, FIXTURES / n, args.hta_python) for n in GPU_TRACES]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"synthetic_{args.events}.json"
        n = write_trace(str(path), args.events, gzipped=False)
        synth = compare(f"synthetic_{n}_events", path, args.hta_python)
        synth["file_mb"] = round(path.stat().st_size / 1e6, 1)
    rows.append(synth)
    synth["ours_under_10s"] = synth["ours"]["load_plus_breakdown_s"] < 10.0
    synth["ours_under_2gb"] = synth["ours"]["peak_rss_mb"] < 2048
    import torch  # only for the version line

    ok = all(r["agree_within_1pct"] and r["at_least_10x_faster"] for r in rows) and synth["ours_under_10s"] \
        and synth["ours_under_2gb"]
    print(json.dumps({
        "benchmark": "trace_vs_hta", "cpu_model": _cpu_model(), "cpu_cores": os.cpu_count(),
        "python": platform.python_version(), "torch": torch.__version__,
        "hta": rows[-1]["hta"].get("hta_version"), "synthetic_events": n, "results": rows,
        "targets": {"busy_idle_agreement": "within 1% of HTA", "speedup": ">= 10x (load + temporal breakdown)",
                    "synthetic": "ours < 10 s and < 2048 MB peak RSS"},
        "verdict": "pass" if ok else "short"}))


def _cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


if __name__ == "__main__":
    main()
