"""Scale check of ``gpucost_lab.timeline``: time and memory of ``load_trace`` + ``busy_idle`` at 0.1M, 1M and 10M
events, to show that time grows linearly with the trace and memory only with the columns kept.

For each size, writes a CUDA-style trace (ProfilerStep annotations, cpu_ops, cudaLaunchKernel runtime calls,
kernels on two streams correlated to them, HtoD/DtoH copies, ``[memory]`` instants, ac2g flow events to be
skipped) to a temp file (plain JSON: 264 MB per million events), then, in a fresh child process so that each peak
RSS is its own: ``load_trace`` + ``busy_idle`` + ``gaps`` (timed apart), then ``analyze`` (every view; up to
``--analyze-up-to`` events). It reports seconds per million events at each size and the slope of log time
against log events between consecutive sizes (1.0: linear), and peak RSS beside the loaded frame's own arrays
(``DataFrame.memory_usage(deep=False)``: the few distinct strings the text columns point to aside) and the RSS
after imports: what reading adds beyond the columns kept. The JSON itself is never held whole (264 MB per
million events): a segment of about 1 MB at a time.

Targets: time linear in the events from 1M up (slopes within 0.85-1.15, seconds per million events within 25% of
each other; below 1M, fixed costs show as a slope under 1); at 1M, load + busy/idle under 10 s and peak RSS under
400 MB; at every size, loading peaks at most 100 MB + a quarter of the frame above the RSS after imports plus the
frame (a constant and the sort's working copy, nothing that grows with the JSON). Prints one JSON line.

    .venv/bin/python benchmarks/timeline_scale.py [--events 100000,1000000,10000000] [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

from machine import Run  # benchmarks/machine.py: date, load average, machine and versions of the run


def write_trace(path: str, n_events: int, gzipped: bool, launches_per_step: int = 1000) -> int:
    """A synthetic trace with ``n_events`` timeline events (plus flows), ``ProfilerStep#N`` annotations every
    ``launches_per_step`` kernel launches (three events each); returns the events written."""
    opener = gzip.open if gzipped else open
    written, ts, corr, step = 0, 1_000_000.0, 0, 0
    with opener(path, "wt") as f:
        f.write('{"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": [\n')
        f.write('{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}')
        while written < n_events:
            step += 1  # one step: an annotation, then its launches (op, runtime, kernel, flow), a copy every 100
            f.write(
                f',\n{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 1, '
                f'"tid": 1, "ts": {ts:.3f}, "dur": {launches_per_step * 12.0:.3f}, "args": {{}}}}'
            )
            written += 1
            for i in range(launches_per_step):
                if i % 1000 == 0 and written >= n_events:  # a long step ends with the trace (a short one ends whole)
                    break
                corr += 1
                stream = 7 + (i % 2) * 13
                f.write(
                    f',\n{{"ph": "X", "cat": "cpu_op", "name": "aten::op{i % 40}", "pid": 1, "tid": 1, '
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
                    f'"cat": "ac2g", "name": "ac2g", "bp": "e"}}'
                )
                written += 3
                if i % 100 == 0:
                    f.write(
                        f',\n{{"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": {ts + 2:.3f}, '
                        f'"args": {{"Total Allocated": {1000 * (i + 1)}, "Bytes": 1000, "Device Type": 1}}}}'
                        f',\n{{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy {"HtoD" if i % 200 else "DtoH"} '
                        f'(Pageable -> Device)", "pid": 0, "tid": 7, "ts": {ts + 9:.3f}, "dur": 2.0, '
                        f'"args": {{"device": 0, "stream": 7, "correlation": {corr}, "bytes": 4096}}}}'
                    )
                    written += 2
                ts += 12.0
        f.write("\n]}\n")
    return written


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def child(path: str, analyze_too: bool) -> None:
    from gpucost_lab.timeline import analyze, busy_idle, gaps, load_trace

    rss_imports = peak_rss_mb()
    t0 = time.perf_counter()
    trace = load_trace(path, max_events=50_000_000)  # the 10M-event trace holds 12.5M elements (flows too)
    t_load = time.perf_counter()
    peak_after_load = peak_rss_mb()
    b = busy_idle(trace)
    t_busy = time.perf_counter()
    widest = gaps(trace, top=10)
    t_gaps = time.perf_counter()
    frame_mb = trace.events.memory_usage(deep=False).sum() / 2**20  # its arrays; the few distinct strings aside
    out = {
        "rows": len(trace.events),
        "load_s": t_load - t0,
        "busy_idle_s": t_busy - t_load,
        "load_plus_busy_idle_s": t_busy - t0,
        "gaps_s": t_gaps - t_busy,
        "peak_rss_mb": peak_rss_mb(),
        "peak_rss_after_load_mb": peak_after_load,
        "rss_after_imports_mb": rss_imports,
        "frame_mb": frame_mb,
        "load_peak_beyond_imports_and_frame_mb": peak_after_load - rss_imports - frame_mb,
        "busy_ms": b.busy_us / 1e3,
        "idle_ms": b.idle_us / 1e3,
        "gaps": len(widest),
    }
    if analyze_too:
        t0 = time.perf_counter()
        summary = analyze(trace, top=10)
        out.update(
            {
                "analyze_s": time.perf_counter() - t0,
                "peak_rss_with_analyze_mb": peak_rss_mb(),
                "sync_points": len(summary["sync_points"]),
                "steps": summary["steps"],
            }
        )
    print(json.dumps(out))


def run_child(path: str, analyze_too: bool) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", path, str(int(analyze_too))], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", default="100000,1000000,10000000", help="comma-separated sizes")
    parser.add_argument("--analyze-up-to", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true", help="write the traces gzipped (.json.gz)")
    parser.add_argument("--child", nargs=2, metavar=("PATH", "ANALYZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1] == "1")
        return
    run = Run.start()
    load_before, sizes, rows = os.getloadavg(), [int(n) for n in args.events.split(",")], []
    for size in sizes:
        fd, path = tempfile.mkstemp(suffix=".json.gz" if args.gzip else ".json")
        os.close(fd)
        try:
            t0 = time.perf_counter()
            n = write_trace(path, size, args.gzip)
            written_s, size_mb = time.perf_counter() - t0, os.path.getsize(path) / 1e6
            ours = run_child(path, size <= args.analyze_up_to)
        finally:
            os.unlink(path)
        ours.update(
            {
                "events": n,
                "file_mb": round(size_mb, 1),
                "write_s": round(written_s, 1),
                "s_per_million_events": ours["load_plus_busy_idle_s"] / (n / 1e6),
            }
        )
        rows.append(ours)
    slopes = [
        math.log(b["load_plus_busy_idle_s"] / a["load_plus_busy_idle_s"]) / math.log(b["events"] / a["events"])
        for a, b in zip(rows, rows[1:])
    ]
    per_million = [r["s_per_million_events"] for r in rows if r["events"] >= 1e6]
    at_1m = [r for r in rows if 0.9e6 <= r["events"] <= 1.1e6]
    targets = {
        "linear_time": all(0.85 <= s <= 1.15 for s, a in zip(slopes, rows) if a["events"] >= 1e6)
        and (len(per_million) < 2 or max(per_million) <= 1.25 * min(per_million)),
        "memory_bounded_by_columns": all(
            r["load_peak_beyond_imports_and_frame_mb"] < 100 + 0.25 * r["frame_mb"] for r in rows
        ),
        "at_1m_under_10s_and_400mb": all(r["load_plus_busy_idle_s"] < 10 and r["peak_rss_mb"] < 400 for r in at_1m),
    }
    print(
        json.dumps(
            {
                "benchmark": "timeline_scale",
                "gzip": args.gzip,
                "cpus": os.cpu_count(),
                "load_average_1_5_15_before": load_before,
                "load_average_1_5_15_after": os.getloadavg(),
                "run": run.finish(),
                "sizes": rows,
                "log_log_slopes": slopes,
                "targets_met": targets,
                "verdict": "pass" if all(targets.values()) else "short",
            }
        )
    )


if __name__ == "__main__":
    main()
