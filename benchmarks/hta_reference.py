"""Reference figures for ``gpucost_lab.timeline`` (``busy_idle``, ``idle_breakdown``, ``kernel_breakdown``,
``kernels_by_name``) from HolisticTraceAnalysis (HTA).

Runs HTA's ``get_temporal_breakdown()``, ``get_idle_time_breakdown()`` and ``get_gpu_kernel_breakdown()`` (default
arguments) on a copy of each GPU fixture in ``gpucost_lab/data/hta_traces/`` and prints one JSON line per trace:
HTA's figures in microseconds (temporal breakdown; idle time per stream and category; time per kernel type and
overlap; total per kernel name, for the names HTA lists rather than folds into "others"), next to ours when
``gpucost_lab`` is importable, with the largest relative difference of each table.

HTA is NOT a dependency of the project. Install it into a separate scratch environment:

    python3 -m venv .venv-hta && .venv-hta/bin/pip install traceinsight==0.6.1   # import name: hta
    .venv-hta/bin/python benchmarks/hta_reference.py

Our figures and the relative differences are printed beside HTA's: when gpucost_lab does not import in the HTA
environment, they are computed by ``--ours-python`` (default: the repository's ``.venv/bin/python``);
``.venv/bin/python benchmarks/hta_reference.py --ours`` prints ours alone.

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
Under ``--definitions hta`` (the default here; ``--definitions course`` prints the course's), ours equals HTA's
temporal breakdown, idle-time breakdown and kernel-type breakdown exactly on all six shipped GPU traces (A100, both
sampled ranks, MI250, MTIA) and on ``--synthetic``'s traces (tests/timeline/synthetic_hta.py, one differing rule
each); ``kernels_by_name`` keeps the course's definitions (no HTA view), so it differs where a rule does.
Under the course's definitions, ``idle_breakdown``, ``kernel_breakdown`` and ``kernels_by_name`` agree exactly with
HTA on all three traces (every stream and category, every kernel type and overlap, every kernel HTA names);
tests/timeline/hta_figures.py holds HTA's figures.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "gpucost_lab" / "data" / "hta_traces"
GPU_TRACES = [
    "sampled_rank0_gpu.json.gz",
    "sampled_rank1_gpu.json.gz",
    "a100_alexnet_train.json.gz",
    "a100_cuda_event_sync.json.gz",
    "mi250_rocm_minitoy_train.json.gz",
    "mtia_inference_rank0.json.gz",
]
SYNTHETIC = ROOT / "tests" / "timeline"  # synthetic_hta.py: one differing rule per trace


def hta_breakdown(fixture: Path) -> dict:
    """HTA's figures for one trace (copied alone into a temp dir; HTA reads the rank from the file)."""
    from importlib.metadata import version

    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(fixture, Path(tmp) / fixture.name)
        analysis = TraceAnalysis(trace_dir=tmp)
        row = analysis.get_temporal_breakdown(visualize=False).iloc[0]
        # ranks: the file's own rank (HTA's default, [0], fails with a ValueError on sampled_rank1_gpu, rank 1)
        idle = analysis.get_idle_time_breakdown(ranks=analysis.t.get_ranks()[:1], visualize=False)[0]
        by_type, by_name = analysis.get_gpu_kernel_breakdown(visualize=False)
    return {
        "hta_version": version("traceinsight"),
        "idle_time_us": float(row["idle_time(us)"]),
        "compute_time_us": float(row["compute_time(us)"]),
        "non_compute_time_us": float(row["non_compute_time(us)"]),
        "kernel_time_us": float(row["kernel_time(us)"]),
        "idle_breakdown": {f"{int(r.stream)} {r.idle_category}": float(r.idle_time) for r in idle.itertuples()},
        "kernel_types": {r.kernel_type.lower(): float(r.sum) for r in by_type.itertuples()},
        "kernels_by_name": {
            r.name: float(r.sum) for r in by_name.rename(columns={"sum (us)": "sum"}).itertuples() if r.name != "others"
        },
    }


def ours(fixture: Path, definitions: str = "hta") -> dict:
    from gpucost_lab.timeline import busy_idle, idle_breakdown, kernel_breakdown, kernels_by_name, load_trace

    trace = load_trace(fixture)
    b = busy_idle(trace, definitions=definitions)
    types, names = kernel_breakdown(trace, definitions=definitions), kernels_by_name(trace)
    return {
        "span_us": b.span_us,
        "busy_us": b.busy_us,
        "idle_us": b.idle_us,
        "basis": b.basis,
        "idle_breakdown": {
            f"{r.stream} {r.idle_category}": r.idle_us
            for r in idle_breakdown(trace, definitions=definitions).itertuples()
        },
        "kernel_types": dict(zip(types["kernel_type"], types["total_us"])),
        "kernels_by_name": dict(zip(names["name"], names["total_us"])),
    }


@functools.cache
def ours_elsewhere(python: str) -> dict:
    """Our figures computed by another interpreter (one where gpucost_lab and its dependencies import), by trace."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [python, __file__, "--ours", *sys.argv[1:]], check=True, capture_output=True, text=True, cwd=ROOT, env=env
    )
    return {row["trace"]: row["gpucost_lab"] for row in map(json.loads, run.stdout.splitlines())}


def _worst(hta: dict, mine: dict) -> float:
    """Largest relative difference over HTA's entries (an entry we lack counts as 0; 0 against 0 agrees)."""
    return max(
        (abs(mine.get(k, 0.0) - v) / v if v else float(mine.get(k, 0.0) != 0) for k, v in hta.items()), default=0.0
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ours", action="store_true", help="print only gpucost_lab's figures (no HTA needed)")
    parser.add_argument(
        "--ours-python",
        default=str(ROOT / ".venv" / "bin" / "python"),
        help="where to compute our figures when gpucost_lab does not import here",
    )
    parser.add_argument("--definitions", default="hta", help="ours under these definitions: hta (default) or course")
    parser.add_argument("--synthetic", action="store_true", help="tests/timeline/synthetic_hta.py's traces instead")
    args = parser.parse_args()
    have_hta = not args.ours
    if have_hta and importlib.util.find_spec("hta") is None:
        sys.exit("hta is not importable: run this with a Python that has `traceinsight` (see the docstring)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in _traces(args.synthetic, Path(tmp)):
            _report(name, path, args, have_hta)


def _traces(synthetic: bool, tmp: Path) -> list[tuple[str, Path]]:
    """(name, path) of the shipped GPU traces, or of the synthetic ones written into ``tmp``."""
    if not synthetic:
        return [(name, FIXTURES / name) for name in GPU_TRACES]
    sys.path.insert(0, str(SYNTHETIC))
    import synthetic_hta  # type: ignore[import-not-found]

    return [(name, synthetic_hta.write(name, tmp)) for name in synthetic_hta.TRACES]


def _relative(ours: float, hta: float) -> float:
    """ours / HTA's - 1 (0 when both are 0)."""
    return ours / hta - 1 if hta else float(ours != 0)


def _report(name: str, path: Path, args: argparse.Namespace, have_hta: bool) -> None:
    """One JSON line: HTA's figures and ours for one trace, with the largest relative differences."""
    result: dict = {"trace": name, "definitions": args.definitions}
    if have_hta:
        result["hta"] = hta_breakdown(path)
    try:
        result["gpucost_lab"] = ours(path, args.definitions)
    except ImportError as exc:
        if have_hta and Path(args.ours_python).exists():
            result["gpucost_lab"] = ours_elsewhere(args.ours_python)[name]
        else:
            result["gpucost_lab"] = f"not importable here: {exc}"
    if have_hta and isinstance(result["gpucost_lab"], dict):
        h, o = result["hta"], result["gpucost_lab"]
        result["relative_difference"] = {
            "busy": _relative(o["busy_us"], h["compute_time_us"] + h["non_compute_time_us"]),
            "idle": _relative(o["idle_us"], h["idle_time_us"]),
            "span": _relative(o["span_us"], h["kernel_time_us"]),
            **{f"worst_{k}": _worst(h[k], o[k]) for k in ("idle_breakdown", "kernel_types", "kernels_by_name")},
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
