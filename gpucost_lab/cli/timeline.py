"""The timeline commands of ``gpucost-lab`` (chapter 02, read the timeline): ``analyze`` (one profiler trace: busy and
idle, gaps, syncs, copies, memory, phases), ``diff`` (before and after traces, per step, each figure with its 95%
interval and a verdict) and ``simulate`` (a deterministic simulated training trace to read).

Bad input raises :class:`~gpucost_lab.InputError` naming the field; :mod:`gpucost_lab.cli.main` prints it as one line
naming the flag (:data:`FLAGS` maps this module's fields) and exits with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from gpucost_lab import timeline as tl
from gpucost_lab._validate import InputError, integer_at_least
from gpucost_lab.cli.command import Command, Subcommands, add_json_flag
from gpucost_lab.cli.errors import shown, writing
from gpucost_lab.simulate import write as simulate
from gpucost_lab.simulate.config import SCENARIOS, SimConfig
from gpucost_lab.timeline.definitions import check_definitions
from gpucost_lab.timeline.ranks_text import render_job
from gpucost_lab.timeline.text import render_analysis

# Library errors name the Python field; the CLI user typed the flag (or the positional argument).
FLAGS = {
    **{name: "--" + name.replace("_", "-") for name in ("top", "scenario", *SimConfig.__dataclass_fields__, "output")},
    "after": "--after",  # diff's sides
    "before": "BEFORE",
    "trace": "TRACE",
    "workers": "--workers",
    "paths": "TRACE",
    "definitions": "--definitions",
    "scheduler": "--scheduler",
}

# Rows each list of analyze and diff prints (--top): more than anyone reads; the JSON of a list stays small.
MAX_TOP = 1000
# Traces on each side of diff, all held at once: repeated runs of one setting are a few to a dozen.
MAX_DIFF_TRACES = 32
# Files or folders analyze reads as one job (each rank's figures are kept, not its events): more than a shell passes.
MAX_RANKS = 4096


def add_analyze(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "analyze",
        help="read a profiler trace: busy/idle, gaps, syncs, copies, memory, phases; "
        "a folder (or several files) of rank traces: a row per rank and the straggler per step",
    )
    p.add_argument(
        "trace", nargs="+", help="a Chrome/Kineto trace, .json or .json.gz; or a folder of them, one per rank"
    )
    p.add_argument("--top", type=int, default=10, help="gaps and operators to list")
    p.add_argument(
        "--definitions",
        default="course",
        help="whose definitions of busy, idle and kernel time: course (default) or hta (HolisticTraceAnalysis 0.6.1)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="ranks loaded at once (default: one per core, at most one per file); with --scheduler local, its workers",
    )
    _add_scheduler(p)
    add_json_flag(p)
    return p


def _add_scheduler(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scheduler",
        default=None,
        help="read each rank's trace as a task on a Dask cluster, where it lies: a scheduler's address "
        "(tcp://host:8786) or local (a LocalCluster here); the paths are resolved on each worker (a folder, a file "
        "or a glob pattern in quotes); needs gpucost-lab[cluster]",
    )


def add_diff(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "diff",
        help="before vs after traces per step: step time, busy, idle, phases, kernels, "
        "each with a 95%% interval and a verdict",
    )
    p.add_argument(
        "before", nargs="+", help="the before traces (one run, or repeated runs); or a folder of rank traces"
    )
    p.add_argument(
        "--after", nargs="+", required=True, help="the after traces; or a folder of rank traces: compared rank by rank"
    )
    p.add_argument("--top", type=int, default=5, help="kernels (CPU traces: operators) to list")
    _add_scheduler(p)
    add_json_flag(p)
    return p


def add_simulate(sub: Subcommands) -> argparse.ArgumentParser:
    """``simulate``, with a flag for every knob of :class:`~gpucost_lab.simulate.config.SimConfig`."""
    p = sub.add_parser("simulate", help="write a deterministic simulated GPU training trace")
    p.add_argument("--scenario", default="healthy", help=f"one of {', '.join(SCENARIOS)}; knobs below override it")
    p.add_argument("-o", "--output", required=True, help="where to write the trace (.json or .json.gz)")
    for name, field in SimConfig.__dataclass_fields__.items():
        flag = "--" + name.replace("_", "-")
        if field.type in ("bool", bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        else:
            p.add_argument(
                flag, type=float if field.type in ("float", float) else (str if name == "gpu" else int), default=None
            )
    add_json_flag(p)
    return p


def analyze_command(args: argparse.Namespace) -> tuple[dict, str]:
    integer_at_least("top", args.top, 1, MAX_TOP)
    check_definitions(args.definitions)
    if len(args.trace) > 1 or Path(args.trace[0]).is_dir() or args.scheduler is not None:
        return _analyze_job(args)
    if args.workers is not None:
        raise InputError("workers", f"workers applies to a folder or several traces (one per rank), got {args.workers}")
    path = args.trace[0]
    trace = tl.load_trace(path, progress=not args.json and sys.stderr.isatty())
    out = tl.analyze(trace, top=args.top, definitions=args.definitions)
    return out, render_analysis(out, path, top=args.top)


def _analyze_job(args: argparse.Namespace) -> tuple[dict, str]:
    """A folder, or several files, of one job's rank traces: :func:`~gpucost_lab.timeline.analyze_ranks`."""
    if len(args.trace) > MAX_RANKS:
        raise InputError("trace", f"trace must name at most {MAX_RANKS} files or folders, got {len(args.trace)}")
    workers = None if args.workers is None else integer_at_least("workers", args.workers, 1, MAX_RANKS)
    job = tl.load_ranks(args.trace, workers=workers, definitions=args.definitions, scheduler=args.scheduler)
    out = tl.analyze_ranks(job)
    return out, render_job(out)


def diff_command(args: argparse.Namespace) -> tuple[dict, str]:
    integer_at_least("top", args.top, 1, MAX_TOP)
    for field in ("before", "after"):
        if len(getattr(args, field)) > MAX_DIFF_TRACES:
            raise InputError(
                field,
                f"{field} must name at most {MAX_DIFF_TRACES} traces (all are held at once), got "
                f"{len(getattr(args, field))}",
            )
    if args.scheduler is not None or (_one_folder(args.before) and _one_folder(args.after)):
        _one_side_each(args)
        per_rank = tl.diff_ranks(args.before[0], args.after[0], top=args.top, scheduler=args.scheduler)
        out = {"ranks": [{"rank": rank, **d.to_dict()} for rank, d in per_rank.items()]}
        return out, "\n\n".join(f"rank {rank}:\n{d.text()}" for rank, d in per_rank.items())
    result = tl.diff(args.before, args.after, top=args.top)
    return result.to_dict(), result.text()


def _one_side_each(args: argparse.Namespace) -> None:
    """On a cluster, each side is one folder (or one glob pattern) of rank traces, resolved on the workers."""
    for field in ("before", "after"):
        if len(getattr(args, field)) != 1:
            raise InputError(
                field,
                f"{field} must be one folder (or glob pattern) of rank traces with --scheduler, got "
                f"{len(getattr(args, field))} paths",
            )


def _one_folder(paths: list[str]) -> bool:
    """One argument naming a folder: a job's rank traces, compared rank by rank."""
    return len(paths) == 1 and Path(paths[0]).is_dir()


def simulate_command(args: argparse.Namespace) -> tuple[dict, str]:
    if args.scenario not in SCENARIOS:
        raise InputError(
            "scenario", f"scenario must be one of {', '.join(map(repr, SCENARIOS))}, got {args.scenario!r}"
        )
    knobs = {k: v for k, v in vars(args).items() if k in SimConfig.__dataclass_fields__ and v is not None}
    config = dataclasses.replace(SCENARIOS[args.scenario], **knobs)
    simulate.trace_path(args.output, "output")
    with writing("output", args.output):
        path = simulate.write_trace(config, args.output)
    out = {
        "path": str(path),
        "scenario": args.scenario,
        "config": dataclasses.asdict(config),
        "bytes": path.stat().st_size,
    }
    return out, f"wrote {shown(path)} ({out['bytes']:,} bytes): scenario {args.scenario}, " + ", ".join(
        f"{k}={shown(v)}" for k, v in knobs.items()
    )


COMMANDS = (
    Command("analyze", add_analyze, analyze_command, FLAGS, paths=("trace",), nested_input="trace"),
    Command("diff", add_diff, diff_command, FLAGS, paths=("before", "after"), nested_input="before"),
    Command("simulate", add_simulate, simulate_command, FLAGS, paths=("output",)),
)
