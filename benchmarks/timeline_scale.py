"""Scale check of ``gpucost_lab.timeline``: load and analyze a synthetic 1,000,000-event Kineto trace.

Writes a CUDA-style trace (ProfilerStep annotations, cpu_ops, cudaLaunchKernel runtime calls, kernels on two
streams correlated to them, HtoD/DtoH copies, ``[memory]`` instants, ac2g flow events to be skipped) to a temp
file, then, each in a fresh child process so that each peak RSS is its own:

- ``ours``: ``load_trace`` + ``busy_idle`` + ``gaps``, then ``analyze`` (every view);
- ``reference``: the same file only parsed by ijson (the lower bound for any streaming loader).

Targets: load + busy/idle under 10 s and peak RSS under 2 GB on the course's 2-core machine. Prints one JSON line.

    .venv/bin/python benchmarks/timeline_scale.py [--events 1000000] [--gzip]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def write_trace(path: str, n_events: int, gzipped: bool) -> int:
    """A synthetic trace with ``n_events`` timeline events (plus flows); returns the events written."""
    opener = gzip.open if gzipped else open
    written, ts, corr, step = 0, 1_000_000.0, 0, 0
    with opener(path, "wt") as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": [\n')
        f.write('{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}')
        while written < n_events:
            step += 1  # one step: an annotation, then 1000 launches (op, runtime, kernel, flow) and a copy
            f.write(f',\n{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 1, '
                    f'"tid": 1, "ts": {ts:.3f}, "dur": {1000 * 12.0:.3f}, "args": {{}}}}')
            written += 1
            for i in range(1000):
                corr += 1
                stream = 7 + (i % 2) * 13
                f.write(f',\n{{"ph": "X", "cat": "cpu_op", "name": "aten::op{i % 40}", "pid": 1, "tid": 1, '
                        f'"ts": {ts:.3f}, "dur": 10.0, "args": {{"External id": {corr}}}}}'
                        f',\n{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
                        f'"ts": {ts + 1:.3f}, "dur": 5.0, "args": {{"correlation": {corr}, "cbid": 211}}}}'
                        f',\n{{"ph": "X", "cat": "kernel", "name": "kernel_{i % 50}", "pid": 0, "tid": {stream}, '
                        f'"ts": {ts + 7:.3f}, "dur": {3 + i % 9:.1f}, "args": {{"External id": {corr}, "queued": 0, '
                        f'"device": 0, "context": 1, "stream": {stream}, "correlation": {corr}, '
                        f'"registers per thread": 32, "shared memory": 0, "blocks per SM": 1.185185, '
                        f'"warps per SM": 4.740741, "grid": [128, 1, 1], "block": [256, 1, 1], '
                        f'"est. achieved occupancy %": 7}}}}'
                        f',\n{{"ph": "f", "id": {corr}, "pid": 0, "tid": {stream}, "ts": {ts + 7:.3f}, '
                        f'"cat": "ac2g", "name": "ac2g", "bp": "e"}}')
                written += 3
                if i % 100 == 0:
                    f.write(f',\n{{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": {ts + 2:.3f}, '
                            f'"args": {{"Total Allocated": {1000 * (i + 1)}, "Bytes": 1000, "Device Type": 1}}}}'
                            f',\n{{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy {"HtoD" if i % 200 else "DtoH"} '
                            f'(Pageable -> Device)", "pid": 0, "tid": 7, "ts": {ts + 9:.3f}, "dur": 2.0, '
                            f'"args": {{"device": 0, "stream": 7, "correlation": {corr}, "bytes": 4096}}}}')
                    written += 2
                ts += 12.0
        f.write("\n]}\n")
    return written


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def child(mode: str, path: str) -> None:
    t0 = time.perf_counter()
    if mode == "reference":
        import ijson

        with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
            count = sum(1 for _ in ijson.get_backend("yajl2_c").items(f, "traceEvents.item", use_float=True))
        print(json.dumps({"parse_only_s": time.perf_counter() - t0, "items": count, "peak_rss_mb": peak_rss_mb()}))
        return
    from gpucost_lab.timeline import analyze, busy_idle, gaps, load_trace

    trace = load_trace(path)
    t_load = time.perf_counter()
    b = busy_idle(trace)
    widest = gaps(trace, top=10)
    t_busy = time.perf_counter()
    summary = analyze(trace, top=10)
    t_all = time.perf_counter()
    print(json.dumps({"rows": len(trace.events), "load_s": t_load - t0, "busy_idle_and_gaps_s": t_busy - t_load,
                      "load_plus_busy_idle_s": t_busy - t0, "analyze_s": t_all - t_busy, "total_s": t_all - t0,
                      "peak_rss_mb": peak_rss_mb(), "busy_ms": b.busy_us / 1e3, "idle_ms": b.idle_us / 1e3,
                      "gaps": len(widest), "sync_points": len(summary["sync_points"]), "steps": summary["steps"]}))


def run_child(mode: str, path: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, path], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true", help="write the trace gzipped (.json.gz)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    fd, path = tempfile.mkstemp(suffix=".json.gz" if args.gzip else ".json")
    os.close(fd)
    try:
        t0 = time.perf_counter()
        n = write_trace(path, args.events, args.gzip)
        written_s, size_mb = time.perf_counter() - t0, os.path.getsize(path) / 1e6
        ours, reference = run_child("ours", path), run_child("reference", path)
    finally:
        os.unlink(path)
    print(json.dumps({
        "events": n, "file_mb": round(size_mb, 1), "gzip": args.gzip, "write_s": round(written_s, 2),
        "cpus": os.cpu_count(), "ours": ours, "reference_ijson_parse_only": reference,
        "load_over_parse_only": ours["load_s"] / reference["parse_only_s"],
        "meets_10s_target": ours["load_plus_busy_idle_s"] < 10.0, "meets_2gb_target": ours["peak_rss_mb"] < 2048,
    }))


if __name__ == "__main__":
    main()
