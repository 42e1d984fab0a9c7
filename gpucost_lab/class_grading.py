"""Grading a whole class's lab submissions at once (instructors; README "For instructors", the lab in `labs/`).

``grade_class(submissions_dir)`` finds one notebook per student, either ``<dir>/<student>/<notebook>.ipynb`` or
``<dir>/<student>.ipynb``, and grades each with :func:`gpucost_lab.grading.grade` (the standard nbgrader 0.9
steps, each submission in its own temporary course) in parallel worker processes. A submission that cannot be
graded (broken JSON, not the lab, a folder with no or several notebooks, an unusable student id) becomes a row
with ``error`` set; it never stops the others. The pass mark is the one ``grading`` defines (80%, exact).
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import tempfile
from pathlib import Path

from .grading import DEFAULT_TIMEOUT_S, grade

COLUMNS = ["student", "score", "max_score", "percent", "passed", "error"]


def find_submissions(submissions_dir: str | os.PathLike) -> list[tuple[str, Path | None, str | None]]:
    """``(student, notebook, problem)`` for each entry of ``submissions_dir``, sorted by student.

    A folder must hold exactly one ``.ipynb`` (checkpoint folders ignored); otherwise ``notebook`` is None and
    ``problem`` says why. Hidden entries and files that are not ``.ipynb`` are skipped.
    """
    root = Path(submissions_dir)
    if not root.is_dir():
        raise ValueError(f"submissions_dir {root} is not a directory (expected <dir>/<student>/<notebook>.ipynb "
                         f"or <dir>/<student>.ipynb)")
    found = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            notebooks = sorted(p for p in entry.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if len(notebooks) == 1:
                found.append((entry.name, notebooks[0], None))
            else:
                found.append((entry.name, None, f"{entry}: expected one notebook, found {len(notebooks)}"))
        elif entry.suffix == ".ipynb":
            found.append((entry.stem, entry, None))
    return sorted(found, key=lambda row: row[0])


def _grade_one(student: str, notebook: str, assignment: str | None, source_root: str | None,
               timeout_s: int, feedback_dir: str | None, self_study: bool = False) -> dict:
    """Worker: grade one submission; any failure becomes the row's ``error`` (the last line of the message)."""
    row = {"student": student, "score": None, "max_score": None, "percent": None, "passed": False, "error": None}
    try:
        with tempfile.TemporaryDirectory(prefix="gpucost-class-") as scratch:
            report = grade(notebook, student=student, assignment=assignment, timeout_s=timeout_s,
                           source_root=source_root, feedback_dir=feedback_dir or scratch, self_study=self_study)
        row.update(score=report.score, max_score=report.max_score, percent=report.percent, passed=report.passed)
    except Exception as err:  # noqa: BLE001 -- one bad submission must not stop the class
        text = str(err).strip().splitlines()
        row["error"] = f"{type(err).__name__}: {text[-1] if text else ''}".rstrip(": ")
    return row


def grade_class(submissions_dir: str | os.PathLike, *, workers: int = 2, assignment: str | None = None,
                source_root: str | os.PathLike | None = None, progress: bool = False,
                timeout_s: int = DEFAULT_TIMEOUT_S, feedback_dir: str | os.PathLike | None = None,
                self_study: bool = False):
    """Grade every submission in ``submissions_dir`` with ``workers`` processes; a DataFrame, one row a student.

    Columns: ``student``, ``score``, ``max_score``, ``percent``, ``passed`` (80% of the points, inclusive),
    ``error`` (None, or why the submission could not be graded; its score columns are then empty and
    ``passed`` is False). ``timeout_s`` is the per-cell limit (an infinite loop fails its cell, the rest is
    graded). Feedback pages go to ``feedback_dir`` as ``<student>_<notebook>_feedback.html`` when given, else
    they are discarded. ``progress=True`` shows a tqdm bar. Each student's lab numbers derive from their id
    (:mod:`gpucost_lab.variants`); ``self_study=True`` grades every submission as the self-study lab instead.
    """
    import pandas as pd

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
    entries = find_submissions(submissions_dir)
    rows = [{"student": s, "score": None, "max_score": None, "percent": None, "passed": False, "error": problem}
            for s, nb, problem in entries if nb is None]
    jobs = [(s, str(nb)) for s, nb, _ in entries if nb is not None]
    root = str(source_root) if source_root is not None else None
    out = str(feedback_dir) if feedback_dir is not None else None

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(entries), unit="submission", desc="grading")
        bar.update(len(rows))
    if jobs:
        # spawn: each worker starts clean (no inherited kernels, sockets or threads from the caller)
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context) as pool:
            futures = {pool.submit(_grade_one, s, nb, assignment, root, timeout_s, out, self_study): s for s, nb in jobs}
            for future in concurrent.futures.as_completed(futures):
                try:
                    rows.append(future.result())
                except Exception as err:  # noqa: BLE001 -- a worker that died (killed, out of memory)
                    rows.append({"student": futures[future], "score": None, "max_score": None, "percent": None,
                                 "passed": False, "error": f"{type(err).__name__}: worker failed ({err})"})
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["passed"] = frame["passed"].astype(bool)
    errors = frame["error"].astype(object)
    frame["error"] = errors.where(errors.notna(), None)  # None, not NaN, where there is no error
    return frame.sort_values("student", ignore_index=True)
