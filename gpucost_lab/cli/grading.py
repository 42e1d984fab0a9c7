"""The grading commands of ``gpucost-lab`` (the labs, graded with nbgrader): ``grade`` (one submission),
``self-check`` (a learner's own lab against its visible tests) and ``grade-class`` (a whole class's submissions in
worker processes, for instructors).

Bad input (a missing folder, a file, a folder with no submission, ``--workers`` below 1, a bad ``--timeout``)
raises ValueError naming the field; :mod:`gpucost_lab.cli.main` prints it as one line naming the flag (:data:`FLAGS`
maps this module's fields) and exits with status 2. A submission that cannot be graded is a row of grade-class with
its error, not a failure of the command. nbgrader loads only when a command runs (seconds).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from gpucost_lab._validate import InputError
from gpucost_lab.cli.command import Command, Subcommands, add_json_flag
from gpucost_lab.cli.errors import shown
from gpucost_lab.grading.notebooks import DEFAULT_TIMEOUT_S
from gpucost_lab.grading.passmark import PASS_MARK_PERCENT

# Library errors name the Python field; the CLI user typed the flag (or the positional argument).
FLAGS = {
    **{name: "--" + name.replace("_", "-") for name in ("student", "learner", "assignment", "source_root")},
    "timeout_s": "--timeout",
    "submissions_dir": "SUBMITTED_DIR",
    "submitted_dir": "SUBMITTED_DIR",  # the argument's own name, as an OSError's line names it
    "workers": "--workers",
    "feedback_dir": "--feedback",
}

# Seconds each notebook cell may run, at most: an integer of 400 digits overflowed the grader's own check.
MAX_TIMEOUT_S = 3600


def add_grade(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "grade",
        help=f"autograde a submitted lab with nbgrader; exit 0 when it passes ({PASS_MARK_PERCENT}%%), 1 when not",
    )
    p.add_argument("notebook", help="the submitted .ipynb")
    p.add_argument(
        "--student",
        default=None,
        help="the learner's id; their lab's numbers derive from it (default: the self-study lab)",
    )
    p.add_argument("--assignment", default=None, help="the lab (default: the one whose cells the notebook carries)")
    p.add_argument(
        "--source-root",
        default=None,
        help="the nbgrader source folder holding ASSIGNMENT/ (default: the repository's solutions/)",
    )
    p.add_argument("--feedback-dir", default=None, help="where to keep the feedback HTML (default: beside NOTEBOOK)")
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds each cell may run")
    add_json_flag(p)
    return p


def add_self_check(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "self-check",
        help="run your lab's visible tests and show progress toward the pass mark (hidden tests may still fail)",
    )
    p.add_argument(
        "notebook",
        help="your saved copy of the lab (.ipynb): its path, or its name from the lab's folder or the course's folder "
        "(there LAB.ipynb is labs/LAB/LAB.ipynb)",
    )
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds each cell may run")
    p.add_argument(
        "--learner",
        default=None,
        help="run the lab with this learner's numbers (default: the id in the environment, else the self-study lab)",
    )
    p.add_argument("--self-study", action="store_true", help="run the lab with the self-study numbers")
    add_json_flag(p)
    return p


def add_grade_class(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "grade-class",
        help="autograde every submission in a folder with nbgrader, in parallel "
        "worker processes; one row per learner; exit 0 when every submission "
        "was graded, 1 when some could not be",
    )
    p.add_argument(
        "submitted_dir",
        metavar="SUBMITTED_DIR",
        help="a folder of <student>/<notebook>.ipynb or <student>.ipynb (the folder name, or the file "
        "name, is the student id)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes, each started once for the class (default: one more than the cores; "
        "each takes about 1 GB with its learner's kernel)",
    )
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds each cell may run")
    p.add_argument(
        "--feedback",
        default=None,
        metavar="DIR",
        help="write each learner's feedback page to DIR (default: none is made, which is faster)",
    )
    p.add_argument(
        "--self-study",
        action="store_true",
        help="grade every submission as the self-study lab (default: each learner's numbers derive "
        "from their student id)",
    )
    p.add_argument(
        "--assignment", default=None, help="the lab (default: for each notebook, the one whose cells it carries)"
    )
    p.add_argument(
        "--source-root",
        default=None,
        help="the nbgrader source folder holding ASSIGNMENT/ (default: the repository's solutions/)",
    )
    add_json_flag(p, "print one JSON object: a row per learner and a summary")
    return p


# Worker processes of grade-class: each takes about 1 GB with its learner's kernel, so 64 need a 64 GB machine; more
# than the class has are never started.
MAX_WORKERS = 64


def check_timeout(args: argparse.Namespace) -> None:
    """``--timeout``, checked before the command runs: a whole number of seconds from 1 to :data:`MAX_TIMEOUT_S`."""
    timeout = args.timeout
    if not (isinstance(timeout, int) and 1 <= timeout <= MAX_TIMEOUT_S):
        raise InputError(
            "timeout_s", f"timeout_s must be a whole number of seconds from 1 to {MAX_TIMEOUT_S}, got {timeout!r}"
        )


def grade_command(args: argparse.Namespace) -> tuple[dict, str]:
    from gpucost_lab.grading import GradingError, grade

    try:
        report = grade(
            args.notebook,
            student=args.student,
            assignment=args.assignment,
            timeout_s=args.timeout,
            source_root=args.source_root,
            feedback_dir=args.feedback_dir,
        )
    except GradingError as err:  # nbgrader could not build the course or grade it: one line, status 2
        raise ValueError(str(err)) from None
    return report.to_dict(), report.text()


def self_check_command(args: argparse.Namespace) -> tuple[dict, str]:
    from gpucost_lab.grading import self_check

    learner = None if args.self_study else (args.learner if args.learner is not None else ...)
    report = self_check(args.notebook, timeout_s=args.timeout, learner=learner)
    if report is None:
        raise ValueError("self-check does not run inside another self-check or an nbgrader run")
    text = report.text()
    if Path(report.notebook) != Path(args.notebook):  # a bare name found in the lab's folder under this one
        text = f"{shown(args.notebook)} is not in this folder: checking {shown(report.notebook)}\n{text}"
    return report.to_dict(), text


def _number(value) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _class_rows(frame) -> list[dict]:
    """One plain row per learner of grade_class's frame (NaN scores as None)."""
    return [
        {
            "student": str(r.student),
            "score": _number(r.score),
            "max_score": _number(r.max_score),
            "percent": _number(r.percent),
            "passed": bool(r.passed),
            "error": r.error,
        }
        for r in frame.itertuples(index=False)
    ]


def _class_summary(args: argparse.Namespace, rows: list[dict], workers: int, seconds: float) -> dict:
    graded = [r for r in rows if r["error"] is None]
    passed = sum(r["passed"] for r in graded)
    return {
        "submissions": len(rows),
        "graded": len(graded),
        "passed": passed,
        "not_passed": len(graded) - passed,
        "errors": len(rows) - len(graded),
        "mean_percent": round(sum(r["percent"] for r in graded) / len(graded), 2) if graded else None,
        "pass_mark_percent": PASS_MARK_PERCENT,
        "workers": workers,
        "timeout_s": args.timeout,
        "feedback_dir": args.feedback,
        "self_study": args.self_study,
        "seconds": round(seconds, 1),
        "per_minute": round(60 * len(rows) / seconds, 2) if seconds > 0 else None,
    }


def _class_table(rows: list[dict], summary: dict, seconds: float) -> str:
    """A line per learner (score, percent, verdict or the error), then the class's counts."""
    width = max([7] + [len(shown(r["student"])) for r in rows])
    lines = [f"{'student':<{width}}  {'score':>13}  {'percent':>7}  verdict"]
    for r in rows:
        name = shown(r["student"])
        if r["error"] is not None:
            lines.append(f"{name:<{width}}  {'-':>13}  {'-':>7}  NOT GRADED: {shown(r['error'])}")
        else:
            score = f"{r['score']:g} / {r['max_score']:g}"
            lines.append(
                f"{name:<{width}}  {score:>13}  {r['percent']:>6.2f}%  {'PASSED' if r['passed'] else 'NOT PASSED'}"
            )
    workers = summary["workers"]
    lines.append(
        f"{summary['submissions']} submissions: {summary['passed']} passed, {summary['not_passed']} not passed, "
        f"{summary['errors']} not graded (pass mark {PASS_MARK_PERCENT}%); {seconds:.1f} s with "
        f"{workers} worker{'s' if workers != 1 else ''}"
    )
    return "\n".join(lines)


def grade_class_command(args: argparse.Namespace) -> tuple[dict, str]:
    from gpucost_lab.grading.classes import default_workers, grade_class

    if args.workers is not None and args.workers > MAX_WORKERS:  # below 1: grade_class's own line
        raise InputError(
            "workers", f"workers must be a whole number from 1 to {MAX_WORKERS} (about 1 GB each), got {args.workers}"
        )
    started = time.perf_counter()
    frame = grade_class(
        args.submitted_dir,
        workers=args.workers,
        assignment=args.assignment,
        source_root=args.source_root,
        progress=sys.stderr.isatty(),
        timeout_s=args.timeout,
        feedback_dir=args.feedback,
        self_study=args.self_study,
    )
    seconds = time.perf_counter() - started
    workers = args.workers if args.workers is not None else default_workers()
    rows = _class_rows(frame)
    summary = _class_summary(args, rows, workers, seconds)
    return {"students": rows, "summary": summary}, _class_table(rows, summary, seconds)


def grade_exit_status(out: dict) -> int:
    """0 when the submission passes, 1 when it does not."""
    return 0 if out["passed"] else 1


def self_check_exit_status(out: dict) -> int:
    """0 when the visible tests reach the pass mark, 1 when they do not."""
    return 0 if out["reaches_pass_mark"] else 1


def grade_class_exit_status(out: dict) -> int:
    """0 when every submission was graded (passed or not), 1 when some could not be."""
    return 0 if out["summary"]["errors"] == 0 else 1


COMMANDS = (
    Command(
        "grade",
        add_grade,
        grade_command,
        FLAGS,
        paths=("notebook", "source_root", "feedback_dir"),
        nested_input="notebook",
        checks=(check_timeout,),
        exit_status=grade_exit_status,
    ),
    Command(
        "self-check",
        add_self_check,
        self_check_command,
        FLAGS,
        paths=("notebook",),
        nested_input="notebook",
        checks=(check_timeout,),
        exit_status=self_check_exit_status,
    ),
    Command(
        "grade-class",
        add_grade_class,
        grade_class_command,
        FLAGS,
        paths=("submitted_dir", "source_root", "feedback"),
        nested_input="submitted_dir",
        checks=(check_timeout,),
        exit_status=grade_class_exit_status,
    ),
)
