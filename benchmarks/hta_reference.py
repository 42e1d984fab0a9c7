"""Reference figures for ``gpucost_lab.timeline.busy_idle`` from HolisticTraceAnalysis (HTA).

Runs HTA's ``TraceAnalysis(...).get_temporal_breakdown()`` on a copy of each GPU fixture in
``gpucost_lab/data/hta_traces/`` and prints one JSON line per trace: HTA's idle, compute, non-compute and
kernel ("span") times in microseconds, next to what ``busy_idle`` reports when ``gpucost_lab`` is importable.

HTA is NOT a dependency of the project. Install it into a separate scratch environment:

    python3 -m venv /tmp/htavenv && /tmp/htavenv/bin/pip install traceinsight   # import name: hta
    /tmp/htavenv/bin/python benchmarks/hta_reference.py

To print our figures and the relative differences beside HTA's, make gpucost_lab importable there too:
``/tmp/htavenv/bin/pip install ijson`` (pandas and numpy come with traceinsight), then run from the repository root
with ``PYTHONPATH=.``; ``.venv/bin/python benchmarks/hta_reference.py --ours`` prints ours alone.

What HTA counts (hta/analyzers/breakdown_analysis.py, traceinsight 0.6.1):
- every GPU event that carries a ``stream`` (kernels, gpu_memcpy, gpu_memset; cuda_sync events too when
  they survive the filter below) on all streams, merged into a union of intervals;
- span ("kernel_time") = end of the last merged interval - start of the first; idle = span - union;
- when the trace has two or more ``ProfilerStep#N`` annotations, only GPU events whose correlation id matches a
  CPU event (cpu_op, user_annotation, *_runtime) that starts before the LAST ProfilerStep starts are kept: the
  last, possibly incomplete, profiler step is dropped (``include_last_profiler_step=False``, the default).

``busy_idle`` follows the same span and last-step rule but leaves cuda_sync events out of busy time (they mark a
stream waiting). Results with traceinsight 0.6.1: sampled_rank0_gpu agrees exactly (busy 278,680 us, idle
321,378 us of 600,058 us); a100_alexnet_train within 0.6% (HTA counts 186 us of stream-carrying cuda_sync
events as busy, which also stretch its span); a100_cuda_event_sync, 263 us long, differs by one 5 us "Stream Sync".
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "gpucost_lab" / "data" / "hta_traces"
GPU_TRACES = ["sampled_rank0_gpu.json.gz", "a100_alexnet_train.json.gz", "a100_cuda_event_sync.json.gz"]


def hta_breakdown(fixture: Path) -> dict:
    """HTA's temporal breakdown of one trace (copied alone into a temp dir; HTA reads the rank from the file)."""
    from importlib.metadata import version

    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(fixture, Path(tmp) / fixture.name)
        row = TraceAnalysis(trace_dir=tmp).get_temporal_breakdown(visualize=False).iloc[0]
    return {"hta_version": version("traceinsight"), "idle_time_us": float(row["idle_time(us)"]),
            "compute_time_us": float(row["compute_time(us)"]),
            "non_compute_time_us": float(row["non_compute_time(us)"]),
            "kernel_time_us": float(row["kernel_time(us)"])}


def ours(fixture: Path) -> dict:
    from gpucost_lab.timeline import busy_idle, load_trace

    b = busy_idle(load_trace(fixture))
    return {"span_us": b.span_us, "busy_us": b.busy_us, "idle_us": b.idle_us, "basis": b.basis}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", action="store_true", help="print only gpucost_lab's figures (no HTA needed)")
    args = parser.parse_args()
    have_hta = not args.ours
    if have_hta and importlib.util.find_spec("hta") is None:
        sys.exit("hta is not importable: run this with a Python that has `traceinsight` (see the docstring)")
    for name in GPU_TRACES:
        result: dict = {"trace": name}
        if have_hta:
            result["hta"] = hta_breakdown(FIXTURES / name)
        try:
            result["gpucost_lab"] = ours(FIXTURES / name)
        except ImportError as exc:
            result["gpucost_lab"] = f"not importable here: {exc}"
        if have_hta and isinstance(result["gpucost_lab"], dict):
            h, o = result["hta"], result["gpucost_lab"]
            result["relative_difference"] = {
                "busy": o["busy_us"] / (h["compute_time_us"] + h["non_compute_time_us"]) - 1,
                "idle": o["idle_us"] / h["idle_time_us"] - 1, "span": o["span_us"] / h["kernel_time_us"] - 1}
        print(json.dumps(result))


if __name__ == "__main__":
    main()
