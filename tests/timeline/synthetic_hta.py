"""Small traces written to trigger one rule at a time where the course's definitions and HolisticTraceAnalysis's
differ (gpucost_lab.timeline.definitions.RULES). ``benchmarks/hta_reference.py --synthetic`` runs HTA 0.6.1 on them;
tests/timeline/test_definitions.py checks both definitions by hand and against HTA's recorded figures."""

from __future__ import annotations

import json
from pathlib import Path


def _x(cat, name, ts, dur, tid=1, pid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _kernel(name, ts, dur, correlation, stream=7):
    return _x("kernel", name, ts, dur, tid=stream, pid=0, stream=stream, correlation=correlation, device=0)


def _launch(correlation, ts):
    return _x("cuda_runtime", "cudaLaunchKernel", ts, 1, correlation=correlation)


def _pair(name, ts, dur, correlation, launch_ts, stream=7):
    return [_launch(correlation, launch_ts), _kernel(name, ts, dur, correlation, stream)]


TRACES = {
    # kernel [0, 10), a Stream Wait Event [10, 20) on the same stream, kernel [20, 30): course busy 20, HTA busy 30
    "stream_wait": [
        *_pair("gemm", 0, 10, 1, -5),
        _x("cuda_sync", "Stream Wait Event", 10, 10, tid=7, pid=0, stream=7, correlation=2, device=0),
        _launch(2, -4),
        *_pair("relu", 20, 10, 3, -3),
    ],
    # a gpu_user_annotation with a stream over [0, 50) around a kernel [10, 20): course busy 10, HTA busy 50
    "annotated_stream": [
        _x("gpu_user_annotation", "## forward ##", 0, 50, tid=7, pid=0, stream=7, device=0),
        *_pair("gemm", 10, 10, 1, 5),
    ],
    # kernels [0.4, 10.6) and [20.2, 25.9): course busy 15.9 of a span of 25.5; HTA [1, 10) + [21, 25): 13 of 24
    "fractional_times": [*_pair("gemm", 0.4, 10.2, 1, 0.1), *_pair("relu", 20.2, 5.7, 2, 0.2)],
    # whole-microsecond events but a [memory] instant at 3.5 us: HTA rounds the whole trace, kernel [0, 10.6) to
    # [0, 10): course busy 10.6, HTA busy 10
    "fractional_instant": [
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3.5, "args": {"Total Allocated": 8}},
        *_pair("gemm", 0, 10.6, 1, -5),
    ],
    # steps [0, 100) and [100, 200); gemm launched at 10; relu's launch at 150, in the last step, but an operator
    # sharing its correlation id starts at 50: the course leaves relu out (busy 20), HTA keeps it (busy 30)
    "late_launch": [
        _x("user_annotation", "ProfilerStep#1", 0, 100),
        _x("user_annotation", "ProfilerStep#2", 100, 100),
        *_pair("gemm", 20, 20, 1, 10),
        _x("cpu_op", "aten::relu", 50, 5, correlation=2),
        *_pair("relu", 160, 10, 2, 150),
    ],
    # two streams and two ranks' worth of work in one file: kernels on stream 7 [0, 40), stream 9 [20, 60) and an
    # NCCL kernel on stream 11 [50, 90): both definitions give busy 90 of 90
    "multi_stream": [
        *_pair("gemm", 0, 40, 1, -10),
        *_pair("gemm", 20, 40, 2, -9, stream=9),
        *_pair("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 50, 40, 3, -8, 11),
    ],
}


def write(name: str, folder: Path, rank: int = 0) -> Path:
    """``TRACES[name]`` as ``folder/<name>.json``, rank ``rank`` of a two-rank NCCL job; the path."""
    path = Path(folder) / f"{name}.json"
    doc = {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}, "traceEvents": TRACES[name]}
    path.write_text(json.dumps(doc))
    return path
