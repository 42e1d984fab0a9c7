"""The capstone lab, optimization_plan: its release matches its source, hides what it must, and grades as
the points say.

Points (from the lab's own headings): 1 diagnose 3 (idle share 1, fix 2), 2 parity 3 (report 2, tolerance 1),
3 cost to target 4 (costs 2, ratio 2), 4 memory 2 (largest microbatch 1, accumulation 1), 5 decision 3 (decision 2,
production 1), 6 principle 1 = 16; 80% is 12.8, so 13 points pass and 12 fail. Sections 2 to 5 build on each other
(parity -> costs -> decision, throughput -> memory plan -> decision); sections 1 and 6 stand alone, so they are the
ones left out of the partial answer sets.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from labtools import (
    answered_release,
    cells,
    checks_after,
    course_copy,
    generated_release,
    learner_copy,
    meta,
    release_path,
    source_path,
    write_submission,
)

from gpucost_lab.grading import grade

LAB = "optimization_plan"
SOURCE = source_path(LAB)
RELEASE = release_path(LAB)
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


@pytest.mark.grading
def test_release_is_what_nbgrader_generates_from_the_source(tmp_path):
    fresh = generated_release(LAB, tmp_path)
    committed = nbformat.read(RELEASE, as_version=4)
    assert [(c.cell_type, c.source, meta(c)) for c in committed.cells] == [
        (c.cell_type, c.source, meta(c)) for c in fresh.cells
    ], "labs/ drifted from solutions/: run `make labs`"


def test_release_holds_no_solution_and_no_hidden_test():
    text = RELEASE.read_text()
    for marker in MARKERS:
        assert marker not in text
    source, release = nbformat.read(SOURCE, as_version=4), nbformat.read(RELEASE, as_version=4)
    assert set(cells(source)) == set(cells(release))
    for gid, cell in cells(release).items():
        if meta(cell).get("solution"):
            assert "raise NotImplementedError" in cell.source
            solution = cells(source)[gid].source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
            for line in filter(None, (ln.strip() for ln in solution.splitlines())):
                assert line not in cell.source, f"{gid}: solution line {line!r} leaked into labs/"
        elif meta(cell).get("grade"):
            hidden = cells(source)[gid].source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
            for line in filter(None, (ln.strip() for ln in hidden.splitlines())):
                if not line.startswith(("from ", "import ")):  # helper imports may repeat the visible part's
                    assert line not in cell.source, f"{gid}: hidden test line {line!r} leaked into labs/"


def test_every_test_cell_follows_its_answer_and_has_a_visible_and_a_hidden_part():
    previous = None
    for cell in nbformat.read(SOURCE, as_version=4).cells:
        grading = meta(cell)
        if grading.get("grade"):
            # nbgrader puts a deleted test cell back after the answer or test cell before it
            assert meta(previous).get("solution") or meta(previous).get("grade"), grading["grade_id"]
            visible, _, rest = cell.source.partition("### BEGIN HIDDEN TESTS")
            assert "assert" in visible and "assert" in rest, f"{grading['grade_id']}: a visible and a hidden check"
            assert grading["locked"] and not grading["solution"]
        previous = cell


def test_lab_has_enough_graded_cells_for_80_percent_to_mean_something():
    graded = [c for c in cells(nbformat.read(SOURCE, as_version=4)).values() if meta(c).get("grade")]
    assert len(graded) >= 8
    assert sum(meta(c)["points"] for c in graded) == 16


@pytest.mark.grading
def test_solution_scores_100_percent(tmp_path):
    submission = write_submission(learner_copy(SOURCE), tmp_path, LAB)  # markers gone, answers in place
    report = grade(submission, assignment=LAB, feedback_dir=tmp_path)
    assert (report.score, report.max_score, report.passed) == (16, 16, True), report.failed
    assert Path(report.feedback_html).exists()


def _partial(tmp_path, answered: set) -> Path:
    """The release with the reference answers of the ``answered`` solution cells filled in."""
    return write_submission(answered_release(LAB, answered), tmp_path, LAB)


ALL_ANSWERS = {
    "plan_diagnose",
    "plan_parity_runs",
    "plan_memory",
    "plan_memory_fix",
    "plan_throughput",
    "plan_release",
    "plan_principle",
}


def test_all_answers_are_listed():
    source = nbformat.read(SOURCE, as_version=4)
    assert {gid for gid, c in cells(source).items() if meta(c).get("solution")} == ALL_ANSWERS


@pytest.mark.parametrize(
    "left_out,points,passed",
    [
        (set(ALL_ANSWERS), 0, False),  # the release as handed out
        ({"plan_diagnose"}, 13, True),  # 16 - 3 = 13 of 16: 81.25%
        ({"plan_diagnose", "plan_principle"}, 12, False),  # 16 - 3 - 1 = 12 of 16: 75%
    ],
)
@pytest.mark.grading
def test_partial_answers_score_their_points(tmp_path, left_out, points, passed):
    report = grade(_partial(tmp_path, ALL_ANSWERS - left_out), assignment=LAB, feedback_dir=tmp_path)
    assert report.max_score == 16
    assert report.score == points and report.passed is passed
    assert {f["cell"] for f in report.failed} == set().union(*(checks_after(LAB, gid) for gid in left_out))


def test_points_per_section_match_the_docstring():
    source = cells(nbformat.read(SOURCE, as_version=4))
    points = {gid: sum(meta(source[t])["points"] for t in checks_after(LAB, gid)) for gid in ALL_ANSWERS}
    assert points == {
        "plan_diagnose": 3,
        "plan_parity_runs": 3,
        "plan_throughput": 4,
        "plan_memory": 1,
        "plan_memory_fix": 1,
        "plan_release": 3,
        "plan_principle": 1,
    }


@pytest.mark.grading
def test_instructor_workflow_from_the_readme(tmp_path):
    """generate_assignment, autograde, generate_feedback and export, as the README lists them, for this lab."""
    course = course_copy(tmp_path)
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")  # as after `. .venv/bin/activate`

    def nbgrader(*args):
        proc = subprocess.run(
            [str(bin_dir / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True, timeout=600
        )
        assert proc.returncode == 0, proc.stderr[-2000:]

    nbgrader("generate_assignment", LAB, "--force")
    for student, answered in [("alice", ALL_ANSWERS), ("bob", set())]:
        target = course / "submitted" / student / LAB
        target.mkdir(parents=True)
        shutil.copy(_partial(tmp_path, answered), target / f"{LAB}.ipynb")
    nbgrader("autograde", LAB)
    nbgrader("generate_feedback", LAB)
    nbgrader("export", "--to", "grades.csv")
    assert (course / "feedback" / "alice" / LAB / f"{LAB}.html").exists()
    with open(course / "grades.csv", newline="") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh) if r["assignment"] == LAB}
    assert {s: (float(r["score"]), float(r["max_score"]), r["passed"]) for s, r in rows.items()} == {
        "alice": (16, 16, "True"),
        "bob": (0, 16, "False"),
    }


@pytest.mark.grading
def test_cli_grades_this_lab_by_name(tmp_path):
    script = Path(sys.executable).with_name("gpucost-lab")
    failing = subprocess.run(
        [str(script), "grade", str(_partial(tmp_path, set())), "--assignment", LAB, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert failing.returncode == 1, failing.stderr
    report = json.loads(failing.stdout)
    assert (report["passed"], report["max_score"]) == (False, 16)
