"""A lab's round trip on the hub, as its people do it: release, fetch, answer, submit, collect, autograde, export.

The learners' answers are the class-grading benchmark's kinds (benchmarks/class_autograding.py ``_submission``:
the reference answers with some sections left as released), copied by grade id into the notebook each learner
fetched; the hostile learner's notebook is blank but for the gradebook writer of the grading-integrity attacks
(tests/grading/test_workflow_attacks.py), aimed at the whole class folder: every gradebook, every learner's home,
the exchange and the course, and for two cells at its end that display HTML meant to run in the instructor's
formgrader (the hostile cells of tests/grading/helpers.py).
"""

from __future__ import annotations

import concurrent.futures
import copy
import csv
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from hubrun import ROOT, HubError, HubRun, hubctl

sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
import class_autograding  # noqa: E402
from grading.helpers import HOSTILE_CELL, HOSTILE_MARKDOWN  # noqa: E402
from grading.test_workflow_attacks import gradebook_writer  # noqa: E402
from nbformat.v4 import new_code_cell, new_markdown_cell  # noqa: E402

LAB = hubctl.LAB
NOTEBOOK = f"{LAB}/{LAB}.ipynb"  # where fetch puts it, relative to the learner's home
HOSTILE = "hostile"


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def answered(fetched: dict, kind: str, student: str, class_folder: Path) -> dict:
    """The fetched notebook with the answer cells of submission ``kind`` (a benchmark kind, or ``hostile``) for
    ``student`` (the lever answered is the one for their own job, whose numbers derive from their id)."""
    reference = class_autograding._submission("blank" if kind == HOSTILE else kind, student)
    answers = {_meta(c)["grade_id"]: c.source for c in reference.cells if _meta(c).get("solution")}
    nb = copy.deepcopy(fetched)
    first = True
    for cell in nb["cells"]:
        meta = _meta(cell)
        if meta.get("solution"):
            cell["source"] = answers[meta["grade_id"]]
            if kind == HOSTILE and first:
                cell["source"] = gradebook_writer(class_folder) + "\n" + cell["source"]
            first = False
    if kind == HOSTILE:  # and, at the end, a cell that displays HTML meant to run in the formgrader, and markdown
        nb["cells"] += [new_code_cell(HOSTILE_CELL), new_markdown_cell(HOSTILE_MARKDOWN)]
    return nb


def files(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def learner_work(run: HubRun, user: str) -> dict:
    """What a learner's own files of the lab are: their fetched and answered lab, their submission cache."""
    home = run.klass.home(user)
    return {**files(home / LAB), **files(home / ".local" / "share" / "jupyter" / "nbgrader_cache")}


def protected(run: HubRun, hostile: str | None) -> dict:
    """Everything the hostile learner's code must not change: the course's source, release and collected
    submissions, the exchange, and every other learner's work."""
    k = run.klass
    out = {
        "solutions": files(k.course / "solutions"),
        "labs": files(k.course / "labs"),
        "submitted": files(k.course / "submitted"),
        "exchange": files(k.exchange),
    }
    for user in k.learners:
        if user != hostile:
            out[f"home/{user}"] = learner_work(run, user)
    return out


def learner_round(run: HubRun, user: str, kind: str) -> dict:
    """One learner: list, fetch, answer, submit, list again, through their own server."""
    seen = {"before": run.assignments(user)}
    seen["fetched"] = run.assignment_action(user, "fetch", LAB)
    fetched = run.read_notebook(user, NOTEBOOK)
    run.write_notebook(user, NOTEBOOK, answered(fetched, kind, user, run.klass.state))
    seen["submitted"] = run.assignment_action(user, "submit", LAB)
    return seen


def run_class(run: HubRun, kinds: dict[str, str], *, at_once: bool = False, autograde: str = "formgrader"):
    """The whole round trip for ``kinds`` (learner -> kind); what each step returned, its times, the grades."""
    times = {}
    t0 = time.perf_counter()
    run.start()
    times["start_s"] = time.perf_counter() - t0

    t = time.perf_counter()
    run.formgrader(f"assignment/{LAB}/assign")  # generate_assignment, from the course's solutions/
    run.formgrader(f"assignment/{LAB}/release")
    times["release_s"] = time.perf_counter() - t

    t = time.perf_counter()
    if at_once:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(kinds)) as pool:
            futures = {user: pool.submit(learner_round, run, user, kind) for user, kind in kinds.items()}
            seen = {user: f.result() for user, f in futures.items()}
    else:
        seen = {user: learner_round(run, user, kind) for user, kind in kinds.items()}
    times["learners_s"] = time.perf_counter() - t

    t = time.perf_counter()
    collected = run.formgrader(f"assignment/{LAB}/collect")
    times["collect_s"] = time.perf_counter() - t
    hostile = next((u for u, k in kinds.items() if k == HOSTILE), None)
    before = protected(run, hostile)

    t = time.perf_counter()
    if autograde == "formgrader":  # the formgrader's Autograde button, one submission at a time, in name order
        for user in sorted(kinds):
            run.formgrader(f"submission/{LAB}/{user}/autograde")
    else:  # one command for the class, in a terminal on the instructor's server
        done = hubctl.nbgrader(run.klass, "autograde", LAB)
        if done.returncode != 0:
            raise HubError(f"nbgrader autograde failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    times["autograde_s"] = time.perf_counter() - t
    after = protected(run, hostile)

    exported = hubctl.nbgrader(run.klass, "export")
    if exported.returncode != 0:
        raise HubError(f"nbgrader export failed:\n{exported.stdout}{exported.stderr}")
    with open(run.klass.course / "grades.csv", newline="") as fh:
        grades = {row["student_id"]: row for row in csv.DictReader(fh)}
    times["total_s"] = time.perf_counter() - t0
    return SimpleNamespace(
        run=run,
        kinds=kinds,
        seen=seen,
        collected=collected,
        before=before,
        after=after,
        grades=grades,
        times=times,
        hostile=hostile,
    )


def gradebook(run: HubRun) -> dict:
    """{student: (score, extra credit and manual scores of every grade)} from the course's gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    rows = {}
    with Gradebook(f"sqlite:///{run.klass.course / 'gradebook.db'}", run.klass.course_id) as gb:
        for student in gb.students:
            try:
                sub = gb.find_submission(LAB, student.id)
            except MissingEntry:
                continue
            extras = [(g.extra_credit, g.manual_score) for n in sub.notebooks for g in n.grades]
            rows[student.id] = (float(sub.score), extras)
    return rows
