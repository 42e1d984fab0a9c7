"""Grading a class: ``grade_class`` on generated submissions of the profile_training_loop lab, against the
instructor's standard one-by-one ``nbgrader autograde`` measured in the same run.

Submissions (16 points, 13 pass; the verdict each is generated to have, by hand from the lab's headings):

- ``full``: every reference answer (the lever: the one for the learner's own job, their numbers deriving from
  their id), 16/16 pass;  ``no_dominant``: section 3's answer cell left as released,
  13/16 pass;  ``no_dominant_correlate``: sections 3 and 4 left out, 12/16 fail;  ``blank``: the release, 0/16 fail;
- ``exception``: full answers but section 3's answer raises, 13/16 pass;  ``loop``: full answers but section 3's
  answer loops forever, interrupted at the per-cell timeout, 13/16 pass;  ``broken``: malformed JSON, an error row.

Every row's verdict (and score) is compared with the generated one. Throughput: submissions per minute of
``grade_class(workers=W)`` over all N (W: its default, one more than the cores, unless ``--workers``),
and of ``nbgrader autograde LAB --student ID`` run one by one in one
course directory (``generate_assignment`` once, not counted, reported apart) over a sample covering every kind;
their ratio is the speed-up. Both use the same per-cell timeout (the reference course's ``SandboxedExecute`` and
``Execute`` limits are set to it) and grade each learner with their own numbers; the reference's scores, read
from its gradebook, are checked against the same expected ones. Prints one JSON line; exits 0 even when short.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LAB = "profile_training_loop"
SOURCE = ROOT / "solutions" / LAB / f"{LAB}.ipynb"
RELEASE = ROOT / "labs" / LAB / f"{LAB}.ipynb"

# kind -> (expected score, expected passed); None score = an error row
EXPECTED = {
    "full": (16, True),
    "no_dominant": (13, True),
    "no_dominant_correlate": (12, False),
    "blank": (0, False),
    "exception": (13, True),
    "loop": (13, True),
    "broken": (None, False),
}
# one block of 20, repeated: 6 full, 3 + 3 partial, 3 blank, 2 exception, 2 loop, 1 broken
PATTERN = [
    "full",
    "no_dominant",
    "no_dominant_correlate",
    "blank",
    "full",
    "exception",
    "full",
    "loop",
    "no_dominant",
    "broken",
    "full",
    "no_dominant_correlate",
    "blank",
    "full",
    "exception",
    "no_dominant",
    "loop",
    "full",
    "no_dominant_correlate",
    "blank",
]


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _lever(student: str) -> str:
    """The lever for this learner's job: the first that targets their largest overhead phase (their lab's numbers
    derive from their id, gpucost_lab.course.variants), written as a literal so that a submission without section 3
    still has one."""
    from gpucost_lab.course.variants import lab_variant
    from gpucost_lab.grading.truth import lab_balance
    from gpucost_lab.loop.simulated import LOOP_LEVERS

    seconds = lab_balance(lab_variant(LAB, student).loop()).set_index("phase")["seconds"]
    largest = seconds.drop("forward_backward").idxmax()
    return next(name for name, (phase, _) in LOOP_LEVERS.items() if phase == largest)


def _submission(kind: str, student: str):
    source = {_meta(c)["grade_id"]: c for c in nbformat.read(SOURCE, as_version=4).cells if _meta(c).get("grade_id")}
    nb = nbformat.read(RELEASE, as_version=4)
    left_out = {
        "blank": set(source),
        "no_dominant": {"lab_dominant"},
        "no_dominant_correlate": {"lab_dominant", "lab_correlate"},
    }.get(kind, set())
    for cell in nb.cells:
        gid = _meta(cell).get("grade_id")
        if _meta(cell).get("solution") and gid not in left_out:
            cell.source = "\n".join(ln for ln in source[gid].source.splitlines() if "### " not in ln)
            if gid == "lab_decide":
                cell.source = re.sub(r"^lever = .*$", f"lever = {_lever(student)!r}", cell.source, flags=re.M)
        if gid == "lab_dominant" and kind == "exception":
            cell.source = 'raise RuntimeError("a learner bug")'
        if gid == "lab_dominant" and kind == "loop":
            cell.source = "while True:\n    pass"
    return nb


def generate(class_dir: Path, n: int) -> dict[str, str]:
    kinds = {}
    for i in range(n):
        student, kind = f"s{i:03d}", PATTERN[i % len(PATTERN)]
        kinds[student] = kind
        (class_dir / student).mkdir(parents=True)
        path = class_dir / student / f"{LAB}.ipynb"
        if kind == "broken":
            path.write_text('{"cells": [ {"cell_type": "code", "source": "x = ', encoding="utf-8")
        else:
            nbformat.write(_submission(kind, student), path)
    return kinds


def stratified_sample(kinds: dict[str, str], k: int) -> list[str]:
    """``k`` students, round-robin over the kinds so each kind appears once before any appears twice."""
    by_kind: dict[str, list[str]] = {}
    for student, kind in kinds.items():
        by_kind.setdefault(kind, []).append(student)
    order = [kind for kind in dict.fromkeys(PATTERN) if kind in by_kind]
    out, i = [], 0
    while len(out) < min(k, len(kinds)):
        kind = order[i % len(order)]
        if by_kind[kind]:
            out.append(by_kind[kind].pop(0))
        i += 1
    return out


def one_by_one(class_dir: Path, students: list[str], timeout_s: int, work: Path) -> dict:
    """The instructor's way: one course directory, generate_assignment once, autograde each student in turn."""
    course = work / "course"
    shutil.copytree(ROOT / "solutions", course / "solutions")
    config = (ROOT / "nbgrader_config.py").read_text(encoding="utf-8")
    # the same per-cell limit as grade_class: the course config sets it for the sandboxed step (30 s) and for
    # nbgrader's own Execute; both are overridden
    (course / "nbgrader_config.py").write_text(
        config + f"\nc.SandboxedExecute.timeout = {timeout_s}\nc.Execute.timeout = {timeout_s}\n", encoding="utf-8"
    )
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")

    def nbgrader(*args) -> tuple[float, int]:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [str(bin_dir / "nbgrader"), *args, "--log-level=ERROR"],
            cwd=course,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        return time.perf_counter() - t0, proc.returncode

    setup_s, rc = nbgrader("generate_assignment", LAB, "--force")
    if rc != 0:
        raise RuntimeError("nbgrader generate_assignment failed in the reference course")
    times, codes = [], []
    for student in students:
        target = course / "submitted" / student / LAB
        target.mkdir(parents=True)
        shutil.copy(class_dir / student / f"{LAB}.ipynb", target / f"{LAB}.ipynb")
        seconds, rc = nbgrader("autograde", LAB, "--student", student)
        times.append(seconds)
        codes.append(rc)
    scores = {}
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "gpucost-lab") as gb:
        for student, rc in zip(students, codes):
            try:
                sub = gb.find_submission(LAB, student)
            except MissingEntry:
                sub = None
            # nbgrader exits 1 on a notebook it cannot read (the malformed one): not graded, whatever its row says
            scores[student] = (float(sub.score), float(sub.max_score)) if sub is not None and rc == 0 else None
    return {"setup_s": setup_s, "times_s": times, "returncodes": codes, "scores": scores}


def _cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) CPU time of the whole machine so far (/proc/stat), or None where there is no /proc."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _busy_percent(before, after) -> float | None:
    """How busy all the cores were between two readings, in percent (this benchmark and anything else running)."""
    if before is None or after is None or after[1] == before[1]:
        return None
    return round(100 * (after[0] - before[0]) / (after[1] - before[1]), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="submissions graded with grade_class")
    parser.add_argument("--sample", type=int, default=10, help="submissions graded one by one (reference)")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="grade_class worker processes (default: its own, one more than the cores)",
    )
    parser.add_argument("--timeout", type=int, default=5, help="per-cell timeout (s), both ways (the loop's cost)")
    parser.add_argument("--min-ratio", type=float, default=3.5, help="target: grade_class rate / one-by-one rate")
    args = parser.parse_args()
    from gpucost_lab.grading import meets_pass_mark
    from gpucost_lab.grading.classes import default_workers, grade_class

    if args.workers is None:
        args.workers = default_workers()

    with tempfile.TemporaryDirectory(prefix="gpucost-class-bench-") as tmp:
        work = Path(tmp)
        class_dir = work / "submissions"
        kinds = generate(class_dir, args.n)

        load_before = os.getloadavg()[0]
        cpu0, t0 = _cpu_jiffies(), time.perf_counter()
        frame = grade_class(class_dir, workers=args.workers, timeout_s=args.timeout)
        parallel_s, cpu1 = time.perf_counter() - t0, _cpu_jiffies()

        wrong = []
        for row in frame.itertuples():
            score, passed = EXPECTED[kinds[row.student]]
            got_score = None if row.error is not None else row.score
            if bool(row.passed) != passed or got_score != score or ((score is None) != (row.error is not None)):
                wrong.append(
                    {
                        "student": row.student,
                        "kind": kinds[row.student],
                        "score": got_score,
                        "passed": bool(row.passed),
                        "error": row.error,
                    }
                )

        sample = stratified_sample(kinds, args.sample)
        ref = one_by_one(class_dir, sample, args.timeout, work)
        cpu2 = _cpu_jiffies()

    reference_s = sum(ref["times_s"])
    ref_wrong = []
    for student, got in ref["scores"].items():
        score, passed = EXPECTED[kinds[student]]
        if (got is None) != (score is None) or (
            got is not None and (got[0] != score or meets_pass_mark(*got) != passed)
        ):
            ref_wrong.append({"student": student, "kind": kinds[student], "score": got})
    parallel_per_min = 60 * args.n / parallel_s
    reference_per_min = 60 * len(sample) / reference_s
    ratio = parallel_per_min / reference_per_min
    mix = {kind: list(kinds.values()).count(kind) for kind in EXPECTED}
    correct = args.n - len(wrong)
    result = {
        "benchmark": "class_autograding",
        "lab": LAB,
        "n_submissions": args.n,
        "mix": mix,
        "workers": args.workers,
        "cpu_count": os.cpu_count(),
        "cell_timeout_s": args.timeout,
        "load_average_1min_before": round(load_before, 2),
        "cores_busy_percent": {"grade_class": _busy_percent(cpu0, cpu1), "reference": _busy_percent(cpu1, cpu2)},
        "grade_class_s": round(parallel_s, 1),
        "grade_class_per_min": round(parallel_per_min, 2),
        "verdicts_correct": correct,
        "wrong": wrong,
        "reference": "nbgrader autograde --student, one by one, one course directory",
        "reference_sample": len(sample),
        "reference_sample_mix": {k: [kinds[s] for s in sample].count(k) for k in EXPECTED},
        "reference_generate_assignment_s": round(ref["setup_s"], 2),
        "reference_autograde_s_each": [round(t, 2) for t in ref["times_s"]],
        "reference_returncodes": ref["returncodes"],
        "reference_verdicts_correct": len(sample) - len(ref_wrong),
        "reference_wrong": ref_wrong,
        "reference_s": round(reference_s, 1),
        "reference_per_min": round(reference_per_min, 2),
        "ratio_grade_class_to_reference": round(ratio, 2),
        "targets": {"verdicts_correct": f"{args.n} of {args.n}", "ratio_min": args.min_ratio},
        "verdict": "pass" if correct == args.n and ratio >= args.min_ratio else "short",
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
