"""``gpucost-lab``: the course's tools on the command line. Every command takes ``--json``.

Bad input prints one line on stderr and exits with status 2. A library's :class:`~gpucost_lab.InputError` names
its field (``err.field``), which the line shows as the flag typed (``price_per_hour_usd`` as ``--price-per-hour``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
import warnings
from collections.abc import Sequence

# The profiler warns that blocks allocated before it started are freed inside its window; the
# CPU peak already accounts for that (resident bytes are added separately), so keep stderr clean.
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")

from gpucost_lab import cost, grading, timeline
from gpucost_lab._validate import InputError, integer_at_least, output_file, price_per_hour  # noqa: E402
from gpucost_lab.cli import export as cli_export
from gpucost_lab.cli import grading as cli_grading
from gpucost_lab.cli import memory as cli_memory
from gpucost_lab.cli import pipeline as cli_pipeline
from gpucost_lab.cli.errors import EXIT_INTERNAL, check_inputs, error_line, failure, internal_error, one_line_warnings  # noqa: E402
from gpucost_lab.cli.errors import FLAGS as _FLAGS  # noqa: E402, F401  (cli_export registers its flags here)
from gpucost_lab.cli.errors import shown as _shown  # noqa: E402
from gpucost_lab.course import profile_to_cost
from gpucost_lab.measure.device import DEVICE_CHOICES  # noqa: E402
from gpucost_lab.release.plan import CANDIDATES  # noqa: E402
from gpucost_lab.simulate import write as simulate
from gpucost_lab.simulate.config import SCENARIOS, SimConfig  # noqa: E402
from gpucost_lab.timeline.text import render_analysis  # noqa: E402

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line, without the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpucost-lab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ledger, fix_oom = cli_memory.add_parsers(sub)  # ledger, fix-oom

    predict = sub.add_parser("predict", help="is +X%% throughput with +Y%% steps to target cheaper?")
    predict.add_argument("--throughput-gain", type=float, required=True, help="0.20 for +20%% samples/s")
    predict.add_argument("--steps-change", type=float, required=True, help="0.25 for +25%% steps to target")
    predict.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD)
    predict.add_argument("--baseline-hours", type=float, help="the baseline run's length, to price both runs")
    predict.add_argument("--window-hours", type=float, help="the nightly window the run must finish in")

    ptc = sub.add_parser("profile-to-cost", help="the worked example: contract, synchronized timing, profile, price")
    ptc.add_argument("--device", default="auto", help=f"one of {', '.join(DEVICE_CHOICES)} or cuda:N")
    ptc.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD)
    ptc.add_argument("--repeats", type=int, default=5)

    analyze = sub.add_parser("analyze", help="read a profiler trace: busy/idle, gaps, syncs, copies, memory, phases")
    analyze.add_argument("trace", help="a Chrome/Kineto trace, .json or .json.gz")
    analyze.add_argument("--top", type=int, default=10, help="gaps and operators to list")
    tdiff = sub.add_parser(
        "diff",
        help="before vs after traces per step: step time, busy, idle, phases, kernels, "
        "each with a 95%% interval and a verdict",
    )
    tdiff.add_argument("before", nargs="+", help="the before traces (one run, or repeated runs)")
    tdiff.add_argument("--after", nargs="+", required=True, help="the after traces")
    tdiff.add_argument("--top", type=int, default=5, help="kernels (CPU traces: operators) to list")

    sim = sub.add_parser("simulate", help="write a deterministic simulated GPU training trace")
    sim.add_argument("--scenario", default="healthy", help=f"one of {', '.join(SCENARIOS)}; knobs below override it")
    sim.add_argument("-o", "--output", required=True, help="where to write the trace (.json or .json.gz)")
    for name, field in SimConfig.__dataclass_fields__.items():
        flag = "--" + name.replace("_", "-")
        if field.type in ("bool", bool):
            sim.add_argument(flag, action=argparse.BooleanOptionalAction, default=None)
        else:
            sim.add_argument(
                flag, type=float if field.type in ("float", float) else (str if name == "gpu" else int), default=None
            )

    plan = sub.add_parser(
        "plan",
        help="the optimization plan on the built-in workload: profile, parity, memory, "
        "cost to target, release decision",
    )
    plan.add_argument("--candidate", default="batch128-lr-scaled", help=f"one of {', '.join(CANDIDATES)}")
    plan.add_argument("--price-per-hour", type=float, default=cost.DEFAULT_PRICE_PER_HOUR_USD)
    plan.add_argument("--rounds", type=int, default=10, help="ABBA/BAAB rounds of the interleaved timing")
    plan.add_argument("--registry", help="a release registry (JSON) to record the decision in and fall back to")
    plan.add_argument("--report", help="write the throughput/cost report here (.md or .html)")

    for p in (ledger, fix_oom, predict, ptc, analyze, tdiff, sim, plan):
        p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_grading_parsers(sub)
    return parser


def _add_grading_parsers(sub) -> None:
    grade = sub.add_parser(
        "grade",
        help=f"autograde a submitted lab with nbgrader; exit 0 when it passes "
        f"({grading.PASS_MARK_PERCENT}%%), 1 when not",
    )
    grade.add_argument("notebook", help="the submitted .ipynb")
    grade.add_argument(
        "--student",
        default=None,
        help="the learner's id; their lab's numbers derive from it (default: the self-study lab)",
    )
    grade.add_argument("--assignment", default=None, help="the lab (default: the one whose cells the notebook carries)")
    grade.add_argument(
        "--source-root",
        default=None,
        help="the nbgrader source folder holding ASSIGNMENT/ (default: the repository's solutions/)",
    )
    grade.add_argument(
        "--feedback-dir", default=None, help="where to keep the feedback HTML (default: beside NOTEBOOK)"
    )
    grade.add_argument("--timeout", type=int, default=grading.DEFAULT_TIMEOUT_S, help="seconds each cell may run")
    check = sub.add_parser(
        "self-check",
        help="run your lab's visible tests and show progress toward the pass mark (hidden tests may still fail)",
    )
    check.add_argument("notebook", help="your saved copy of the lab (.ipynb)")
    check.add_argument("--timeout", type=int, default=grading.DEFAULT_TIMEOUT_S, help="seconds each cell may run")
    check.add_argument(
        "--learner",
        default=None,
        help="run the lab with this learner's numbers (default: the id in the environment, else the self-study lab)",
    )
    check.add_argument("--self-study", action="store_true", help="run the lab with the self-study numbers")
    for p in (grade, check):
        p.add_argument("--json", action="store_true", help="print one JSON object")
    cli_grading.add_parser(sub)  # grade-class
    cli_export.add_export_grades(sub)  # export-grades
    cli_pipeline.add_parser(sub)  # pipeline


def _predict(args: argparse.Namespace) -> tuple[dict, str]:
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    out = cost.predict(
        args.throughput_gain, args.steps_change, args.price_per_hour, args.baseline_hours, args.window_hours
    )
    lines = [f"relative cost {out['relative_cost']:.3f} -> {out['verdict']}"]
    if "baseline_hours" in out:
        lines.append(
            f"baseline {out['baseline_hours']:.2f} h = ${out['baseline_cost_usd']:.2f}; candidate "
            f"{out['candidate_hours']:.2f} h = ${out['candidate_cost_usd']:.2f} at ${args.price_per_hour:.2f}/h"
        )
    if "window_hours" in out:
        lines.append(
            f"{out['window_hours']:.2f} h window: baseline {'fits' if out['baseline_fits_window'] else 'late'}, "
            f"candidate {'fits' if out['candidate_fits_window'] else 'late'}"
        )
    return out, "\n".join(lines)


def _profile_to_cost(args: argparse.Namespace) -> tuple[dict, str]:
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    result = profile_to_cost.run(
        device=args.device, price_per_hour_usd=args.price_per_hour, repeats=args.repeats, progress=not args.json
    )
    out = result.to_dict()
    sps, cps = out["samples_per_second"], out["cost_per_sample_usd"]
    c = out["contract"]
    lines = [
        f"contract {out['contract_fingerprint']}: {c['model_name']} on {c['gpu_name'] or c['cpu_model']}, "
        f"{c['dtype']}, batch {c['units_per_step']}, {c['warmup_steps']} warm-up + {c['measured_steps']} steps "
        f"x {c['repeats']} repeats, sync: {c['sync_method']}",
        f"samples/s {sps['geomean']:,.0f} (95% CI {sps['ci95_low']:,.0f} to {sps['ci95_high']:,.0f})",
        f"cost per sample ${cps['geomean']:.3e} (95% CI {cps['ci95_low']:.3e} to {cps['ci95_high']:.3e}) "
        f"at an assumed ${out['price_per_hour_usd']:.2f} per accelerator-hour",
        f"peak memory {out['peak_memory_bytes'] / 1e6:.1f} MB ({out['peak_memory_method']})",
        "top operators by self time:",
    ]
    lines += [
        f"  {_shown(op['name']):<36} {op['calls']:>5} calls {op['self_time_s'] * 1e3:9.2f} ms" for op in out["top_ops"]
    ]
    if out["plausibility"]:
        lines.append(f"roofline check: {out['plausibility']['message']}")
    return out, "\n".join(lines)


@contextlib.contextmanager
def _writing(field: str, path: str | None):
    """An OSError while writing ``path`` (a full disk, a folder made unwritable meanwhile) as a one-line InputError;
    the writers leave no half-written file."""
    try:
        yield
    except OSError as err:
        raise InputError(
            field,
            f"{field} {path!r} could not be written ({err.strerror or err}); allowed: a file path in "
            f"an existing folder you may write to, on a disk with room",
        ) from None


# Rows each list of analyze and diff prints (--top): more than anyone reads; the JSON of a list stays small.
MAX_TOP = 1000
# Traces on each side of diff, all held at once: repeated runs of one setting are a few to a dozen.
MAX_DIFF_TRACES = 32


def _analyze(args: argparse.Namespace) -> tuple[dict, str]:
    integer_at_least("top", args.top, 1, MAX_TOP)
    trace = timeline.load_trace(args.trace, progress=not args.json and sys.stderr.isatty())
    out = timeline.analyze(trace, top=args.top)
    return out, render_analysis(out, args.trace, top=args.top)


def _diff(args: argparse.Namespace) -> tuple[dict, str]:
    integer_at_least("top", args.top, 1, MAX_TOP)
    for field in ("before", "after"):
        if len(getattr(args, field)) > MAX_DIFF_TRACES:
            raise InputError(
                field,
                f"{field} must name at most {MAX_DIFF_TRACES} traces (all are held at once), got "
                f"{len(getattr(args, field))}",
            )
    result = timeline.diff(args.before, args.after, top=args.top)
    return result.to_dict(), result.text()


def _simulate(args: argparse.Namespace) -> tuple[dict, str]:
    if args.scenario not in SCENARIOS:
        raise InputError(
            "scenario", f"scenario must be one of {', '.join(map(repr, SCENARIOS))}, got {args.scenario!r}"
        )
    knobs = {k: v for k, v in vars(args).items() if k in SimConfig.__dataclass_fields__ and v is not None}
    config = dataclasses.replace(SCENARIOS[args.scenario], **knobs)
    simulate.trace_path(args.output, "output")
    with _writing("output", args.output):
        path = simulate.write_trace(config, args.output)
    out = {
        "path": str(path),
        "scenario": args.scenario,
        "config": dataclasses.asdict(config),
        "bytes": path.stat().st_size,
    }
    return out, f"wrote {_shown(path)} ({out['bytes']:,} bytes): scenario {args.scenario}, " + ", ".join(
        f"{k}={_shown(v)}" for k, v in knobs.items()
    )


def _grade(args: argparse.Namespace) -> tuple[dict, str]:
    try:
        report = grading.grade(
            args.notebook,
            student=args.student,
            assignment=args.assignment,
            timeout_s=args.timeout,
            source_root=args.source_root,
            feedback_dir=args.feedback_dir,
        )
    except grading.GradingError as err:  # nbgrader could not build the course or grade it: one line, status 2
        raise ValueError(str(err)) from None
    return report.to_dict(), report.text()


def _self_check(args: argparse.Namespace) -> tuple[dict, str]:
    learner = None if args.self_study else (args.learner if args.learner is not None else ...)
    report = grading.self_check(args.notebook, timeout_s=args.timeout, learner=learner)
    if report is None:
        raise ValueError("self-check does not run inside another self-check or an nbgrader run")
    return report.to_dict(), report.text()


# grade: 0 when the submission passes, 1 when it does not; self-check: 0 when the visible tests reach the pass mark.
_EXIT_STATUS = {
    "grade": lambda out: 0 if out["passed"] else 1,
    "self-check": lambda out: 0 if out["reaches_pass_mark"] else 1,
    "grade-class": cli_grading.exit_status,
}


def _plan(args: argparse.Namespace) -> tuple[dict, str]:
    from gpucost_lab.release import Registry
    from gpucost_lab.release.plan import check_rounds, run_plan
    from gpucost_lab.release.report import report_path, write_report_pending

    # every input and output checked before the plan runs (minutes), not when its files are written
    price_per_hour("price_per_hour_usd", args.price_per_hour)
    check_rounds(args.rounds)
    if args.report is not None:
        report_path(args.report, "report")
    registry = None
    if args.registry is not None:

        class FlagRegistry(Registry):  # its errors name the flag; its write waits for the report's (one decision)
            pending = None

            def _load(self):
                try:
                    return super()._load()
                except InputError:
                    raise
                except ValueError as err:
                    raise InputError("registry", f"registry: {err}") from None

            def record(self, decision, at=None):
                with _writing("registry", args.registry):
                    entry, self.pending = self.prepare_record(decision, at)
                return entry

        registry = FlagRegistry(output_file("registry", args.registry))
        registry.current()  # a registry that cannot be read is refused now
    report = None
    try:
        result = run_plan(args.candidate, price_per_hour_usd=args.price_per_hour, rounds=args.rounds, registry=registry)
        out = result.to_dict()
        if args.report is not None:
            with _writing("report", args.report):
                report = write_report_pending(result.report_data(), args.report)
        if registry is not None and registry.pending is not None:  # the decision and its report land together
            with _writing("registry", args.registry):
                registry.pending.commit()
        if report is not None:
            with _writing("report", args.report):
                out["report"] = str(report.commit())
    finally:  # a write that failed, or a plan that did: no temporary file left, the registry as it was
        for pending in (report, registry.pending if registry is not None else None):
            if pending is not None and not pending.done:
                pending.discard()
    d, c = out["decision"], out["cost_to_target"]
    lines = [
        f"{d['action'].upper()}: {out['candidate']['name']} against {out['baseline']['name']} -> "
        f"production runs {d['to']}"
    ]
    if c["ratio"] is not None:
        lines.append(
            f"cost to target {c['ratio']:.3f}x baseline (95% CI {c['ratio_ci95'][0]:.3f} to "
            f"{c['ratio_ci95'][1]:.3f}), {c['verdict']}, at an assumed ${out['price_per_hour_usd']:.2f}/h"
        )
    lines += [f"  {reason}" for reason in d["reasons"]]
    if args.report is not None:
        lines.append(f"report: {_shown(out['report'])}")
    return out, "\n".join(lines)


_COMMANDS = {
    "ledger": cli_memory.ledger_command,
    "fix-oom": cli_memory.fix_oom_command,
    "predict": _predict,
    "profile-to-cost": _profile_to_cost,
    "analyze": _analyze,
    "diff": _diff,
    "simulate": _simulate,
    "plan": _plan,
    "grade": _grade,
    "self-check": _self_check,
    "grade-class": cli_grading.grade_class_command,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = one_line_warnings(args.command)
        try:
            check_inputs(args)
            out, text = _COMMANDS[args.command](args)
        except ValueError as err:
            print(error_line(args.command, err), file=sys.stderr)
            return EXIT_USAGE
        except grading.SandboxUnavailable as err:  # no sandbox on this machine: the line says what to install or allow
            print(_shown(f"gpucost-lab {args.command}: error: {err}"), file=sys.stderr)
            return EXIT_USAGE
        except Exception as err:  # noqa: BLE001 - a file the system refuses, nesting, memory, or a bug: one line
            line, status = failure(args.command, args, err)
            print(line, file=sys.stderr)
            return status
        try:
            printed = json.dumps(out, allow_nan=False) if args.json else text
        except ValueError as err:  # a result that is not a finite number: the package's error, not the input's
            print(internal_error(args.command, err), file=sys.stderr)
            return EXIT_INTERNAL
    print(printed)
    return _EXIT_STATUS.get(args.command, lambda out: 0)(out)


if __name__ == "__main__":
    sys.exit(main())
