"""The real labs, graded: each release is what nbgrader generates from its source, the solution scores 100% and
partial answers their points, ``gpucost-lab grade`` exits 1 for a failing submission, and the instructor's workflow
from the README runs. Each test runs once per lab (``LABS`` in labtools.py).

Points of profile_training_loop (from the lab's own headings): 1 instrument 3, 2 balance 2, 3 dominant 3,
4 correlate 1, 5 decide 2, 6 act 2, 7 price 2, 8 re-profile 1 = 16; 80% is 12.8, so 13 points pass and 12 fail."""

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from labtools import (
    PLAN,
    PROFILE,
    checks_after,
    generated_release,
    instructor_workflow,
    learner_copy,
    meta,
    write_submission,
)

from gpucost_lab.grading import grade

from .helpers import each_lab

pytestmark = pytest.mark.grading


@each_lab
def test_release_is_what_nbgrader_generates_from_the_source(tmp_path, lab):
    fresh = generated_release(lab.name, tmp_path)
    committed = nbformat.read(lab.release, as_version=4)
    assert [(c.cell_type, c.source, meta(c)) for c in committed.cells] == [
        (c.cell_type, c.source, meta(c)) for c in fresh.cells
    ], "labs/ drifted from solutions/: run `make labs`"


@each_lab
def test_solution_scores_100_percent(tmp_path, lab):
    submission = write_submission(learner_copy(lab.source), tmp_path, lab.name)  # markers gone, answers in place
    report = grade(submission, feedback_dir=tmp_path, **lab.grade_options())
    assert (report.score, report.max_score, report.passed) == (16, 16, True), report.failed
    assert Path(report.feedback_html).exists()


PARTIAL_ANSWERS = [  # (lab, answers left out, points, passed)
    (PROFILE, set(PROFILE.answers), 0, False),  # the release as handed out
    (PROFILE, {"lab_dominant"}, 13, True),  # 16 - 3 = 13 of 16: 81.25%
    (PROFILE, {"lab_dominant", "lab_correlate"}, 12, False),  # 16 - 3 - 1 = 12 of 16: 75%
    (PLAN, set(PLAN.answers), 0, False),  # the release as handed out
    (PLAN, {"plan_diagnose"}, 13, True),  # 16 - 3 = 13 of 16: 81.25%
    (PLAN, {"plan_diagnose", "plan_principle"}, 12, False),  # 16 - 3 - 1 = 12 of 16: 75%
]


@pytest.mark.parametrize(
    "lab,left_out,points,passed", PARTIAL_ANSWERS, ids=[f"{case[0].name}-{case[2]}" for case in PARTIAL_ANSWERS]
)
def test_partial_answers_score_their_points(tmp_path, lab, left_out, points, passed):
    report = grade(lab.partial(tmp_path, lab.answers - left_out), feedback_dir=tmp_path, **lab.grade_options())
    assert report.max_score == 16
    assert report.score == points and report.passed is passed
    assert {f["cell"] for f in report.failed} == set().union(*(checks_after(lab.name, gid) for gid in left_out))


@each_lab
def test_cli_grade_exits_1_for_a_failing_submission(tmp_path, lab):
    script = Path(sys.executable).with_name("gpucost-lab")
    failing = subprocess.run(
        [str(script), "grade", str(lab.partial(tmp_path, set())), *lab.cli_options(), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert failing.returncode == 1, failing.stderr
    report = json.loads(failing.stdout)
    assert (report["passed"], report["max_score"]) == (False, 16)


@each_lab
def test_instructor_workflow_from_the_readme(tmp_path, lab):
    """generate_assignment, autograde, generate_feedback and export, as the README lists them, on a copy of
    the course."""
    course, rows = instructor_workflow(lab.name, {"alice": set(lab.answers), "bob": set()}, tmp_path)
    assert (course / "feedback" / "alice" / lab.name / f"{lab.name}.html").exists()
    assert {r["assignment"] for r in rows} == {lab.name}  # the gradebook holds only the lab graded
    assert {r["student_id"]: (float(r["score"]), float(r["max_score"]), r["passed"]) for r in rows} == {
        "alice": (16, 16, "True"),
        "bob": (0, 16, "False"),
    }
