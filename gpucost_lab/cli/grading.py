"""``gpucost-lab grade-class``: a whole class's submissions graded in worker processes (instructors).

Bad input (a missing folder, a file, a folder with no submission, ``--workers`` below 1, a bad ``--timeout``)
raises ValueError naming the field; :mod:`gpucost_lab.cli.main` prints it as one line naming the flag and exits
with status 2. A submission that cannot be graded is a row with its error, not a failure of the command.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from gpucost_lab.grading.notebooks import DEFAULT_TIMEOUT_S
from gpucost_lab.grading.passmark import PASS_MARK_PERCENT

# Library errors name the Python field; the CLI user typed the flag (or the positional argument).
FLAGS = {
    "submissions_dir": "SUBMITTED_DIR",
    "submitted_dir": "SUBMITTED_DIR",  # the argument's own name, as an OSError's line names it
    "workers": "--workers",
    "feedback_dir": "--feedback",
}


def add_parser(sub) -> argparse.ArgumentParser:
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
    p.add_argument("--json", action="store_true", help="print one JSON object: a row per learner and a summary")
    return p


# Worker processes of grade-class: each takes about 1 GB with its learner's kernel, so 64 need a 64 GB machine; more
# than the class has are never started.
MAX_WORKERS = 64


def _number(value) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def grade_class_command(args: argparse.Namespace) -> tuple[dict, str]:
    from gpucost_lab._validate import InputError
    from gpucost_lab.cli.main import _shown
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
    rows = [
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
    graded = [r for r in rows if r["error"] is None]
    passed = sum(r["passed"] for r in graded)
    summary = {
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
    width = max([7] + [len(_shown(r["student"])) for r in rows])
    lines = [f"{'student':<{width}}  {'score':>13}  {'percent':>7}  verdict"]
    for r in rows:
        name = _shown(r["student"])
        if r["error"] is not None:
            lines.append(f"{name:<{width}}  {'-':>13}  {'-':>7}  NOT GRADED: {_shown(r['error'])}")
        else:
            score = f"{r['score']:g} / {r['max_score']:g}"
            lines.append(
                f"{name:<{width}}  {score:>13}  {r['percent']:>6.2f}%  {'PASSED' if r['passed'] else 'NOT PASSED'}"
            )
    lines.append(
        f"{summary['submissions']} submissions: {passed} passed, {summary['not_passed']} not passed, "
        f"{summary['errors']} not graded (pass mark {PASS_MARK_PERCENT}%); {seconds:.1f} s with "
        f"{workers} worker{'s' if workers != 1 else ''}"
    )
    return {"students": rows, "summary": summary}, "\n".join(lines)


def exit_status(out: dict) -> int:
    """0 when every submission was graded (passed or not), 1 when some could not be."""
    return 0 if out["summary"]["errors"] == 0 else 1
