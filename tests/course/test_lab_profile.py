"""The real lab: its release matches its source, hides what it must, and grades as the points say.

Points (from the lab's own headings): 1 instrument 3, 2 balance 2, 3 dominant 3, 4 correlate 1, 5 decide 2,
6 act 2, 7 price 2, 8 re-profile 1 = 16; 80% is 12.8, so 13 points pass and 12 fail.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from labtools import (
    ROOT,
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

LAB = "profile_training_loop"
SOURCE = source_path(LAB)
RELEASE = release_path(LAB)


@pytest.mark.grading
def test_release_is_what_nbgrader_generates_from_the_source(tmp_path):
    fresh = generated_release(LAB, tmp_path)
    committed = nbformat.read(RELEASE, as_version=4)
    assert [(c.cell_type, c.source, meta(c)) for c in committed.cells] == [
        (c.cell_type, c.source, meta(c)) for c in fresh.cells
    ], "labs/ drifted from solutions/: run `make labs`"


def test_release_holds_no_solution_and_no_hidden_test():
    text = RELEASE.read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text
    source, release = nbformat.read(SOURCE, as_version=4), nbformat.read(RELEASE, as_version=4)
    for gid, cell in cells(release).items():
        if meta(cell).get("solution"):
            assert "raise NotImplementedError" in cell.source
            solution = cells(source)[gid].source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
            for line in filter(None, (ln.strip() for ln in solution.splitlines())):
                assert line not in cell.source, f"{gid}: solution line {line!r} leaked into labs/"


def test_lab_has_enough_graded_cells_for_80_percent_to_mean_something():
    graded = [c for c in cells(nbformat.read(SOURCE, as_version=4)).values() if meta(c).get("grade")]
    assert len(graded) >= 8
    assert sum(meta(c)["points"] for c in graded) == 16


@pytest.mark.grading
def test_solution_scores_100_percent(tmp_path):
    submission = write_submission(learner_copy(SOURCE), tmp_path, LAB)  # markers gone, answers in place
    report = grade(submission, feedback_dir=tmp_path)
    assert (report.score, report.max_score, report.passed) == (16, 16, True)
    assert Path(report.feedback_html).exists()


def _partial(tmp_path, answered: set) -> Path:
    """The release with the reference answers of the ``answered`` solution cells filled in."""
    return write_submission(answered_release(LAB, answered), tmp_path, LAB)


ALL_ANSWERS = {
    "lab_instrument",
    "lab_balance",
    "lab_dominant",
    "lab_correlate",
    "lab_decide",
    "lab_act",
    "lab_price",
    "lab_revalidate",
}


@pytest.mark.parametrize(
    "left_out,points,passed",
    [
        (set(ALL_ANSWERS), 0, False),  # the release as handed out
        ({"lab_dominant"}, 13, True),  # 16 - 3 = 13 of 16: 81.25%
        ({"lab_dominant", "lab_correlate"}, 12, False),  # 16 - 3 - 1 = 12 of 16: 75%
    ],
)
@pytest.mark.grading
def test_partial_answers_score_their_points(tmp_path, left_out, points, passed):
    report = grade(_partial(tmp_path, ALL_ANSWERS - left_out), feedback_dir=tmp_path)
    assert report.max_score == 16
    assert report.score == points and report.passed is passed
    assert {f["cell"] for f in report.failed} == set().union(*(checks_after(LAB, gid) for gid in left_out))


@pytest.mark.grading
def test_cli_grade_exit_codes(tmp_path):
    script = Path(sys.executable).with_name("gpucost-lab")
    failing = subprocess.run(
        [str(script), "grade", str(_partial(tmp_path, set())), "--json"], capture_output=True, text=True, timeout=600
    )
    assert failing.returncode == 1
    assert json.loads(failing.stdout)["passed"] is False


@pytest.mark.grading
def test_instructor_workflow_from_the_readme(tmp_path):
    """generate_assignment, autograde, generate_feedback and export, as the README lists them, on a copy of
    the course."""
    import csv
    import os

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
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert {s: (float(r["score"]), float(r["max_score"]), r["passed"]) for s, r in rows.items()} == {
        "alice": (16, 16, "True"),
        "bob": (0, 16, "False"),
    }


def test_source_root_is_found_from_the_course_folder_when_installed_elsewhere(tmp_path, monkeypatch):
    from gpucost_lab import grading

    course = course_copy(tmp_path)
    (course / "labs").mkdir()
    from gpucost_lab.grading import notebooks

    installed = tmp_path / "site-packages" / "gpucost_lab" / "grading" / "notebooks.py"
    monkeypatch.setattr(notebooks, "__file__", str(installed))
    monkeypatch.delenv("GPUCOST_LAB_SOURCE_ROOT", raising=False)
    monkeypatch.chdir(course / "labs")
    assert grading.default_source_root() == course / "solutions"
    monkeypatch.setenv("GPUCOST_LAB_SOURCE_ROOT", str(ROOT / "solutions"))
    assert grading.default_source_root() == ROOT / "solutions"


def test_the_assignment_is_recognised_from_the_submission():
    from gpucost_lab.grading import detect_assignment

    assert detect_assignment(ROOT / "solutions", nbformat.read(RELEASE, as_version=4)) == LAB
    assert detect_assignment(ROOT / "solutions", nbformat.v4.new_notebook()) is None
