"""Tests of gpucost_lab.grading.autograde: nbgrader autograding at the 80% pass mark, and `make labs`, on a tiny lab
of our own (tests/fixtures/grading/solutions/mini_lab), against scores summed by hand. The learner's self-check:
tests/grading/test_selfcheck.py; the course's configuration: tests/grading/test_course.py.

The fixture lab has five test cells worth 3 + 2 + 2 + 2 + 1 = 10 points (read from nothing but the fixture's
metadata, written by hand); Q4's test has a hidden part (to_gb(3e9) == 3.0 and to_gb(5e8) == 0.5) that the released
lab does not show. Every expected score below is the sum of the points of the tests that should pass.
"""

import json
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from gpucost_lab import grading
from gpucost_lab.grading.course import course_config

from .helpers import (
    ASSIGNMENT,
    FIXTURE_ARGS,
    SOURCE_NB,
    SOURCE_ROOT,
    cli,
    grade_fixture,
    grade_id,
    learner_copy,
    shared_course,
)

pytestmark = pytest.mark.grading

POINTS = {"q1_test": 3, "q2_test": 2, "q3_test": 2, "q4_test": 2, "q5_test": 1}  # 10 in all


# --------------------------------------------------------------------------------------- make labs: the release


def test_make_labs_writes_the_release_and_nothing_else(labs_course, released):
    files = {str(p.relative_to(labs_course)) for p in labs_course.rglob("*") if p.is_file()}
    assert files == {
        "nbgrader_config.py",
        "solutions/mini_lab/mini_lab.ipynb",
        "solutions/mini_lab/lab_helpers.py",
        "labs/README.md",
        "labs/mini_lab/mini_lab.ipynb",
        "labs/mini_lab/lab_helpers.py",
    }
    assert not (labs_course / "labs" / "renamed_lab").exists()  # no gradebook.db, no stale lab
    cells = {grade_id(c): c.source for c in released.cells if grade_id(c)}
    assert "raise NotImplementedError" in cells["q1_answer"] and "total_s / steps" not in cells["q1_answer"]
    assert "to_gb(2e9)" in cells["q4_test"] and "3e9" not in cells["q4_test"] and "HIDDEN" not in cells["q4_test"]
    assert all(not c.get("outputs") and not c.get("execution_count") for c in released.cells if c.cell_type == "code")
    assert {
        g: released.cells[i].metadata.nbgrader.get("points")
        for i, g in ((i, grade_id(c)) for i, c in enumerate(released.cells))
        if g in POINTS
    } == POINTS


# --------------------------------------------------------------------------------------- grade: scores


def test_full_solution_scores_100_percent_and_exits_0(tmp_path, capsys):
    submission = tmp_path / "mini_lab.ipynb"
    shutil.copy(SOURCE_NB, submission)  # the instructor's own notebook: every answer, every (hidden) test
    code, out = cli(capsys, "grade", str(submission), "--student", "ada", *FIXTURE_ARGS, "--json")
    assert code == 0, out.err
    assert out.out.count("\n") == 1
    report = json.loads(out.out)
    assert set(report) == {
        "score",
        "max_score",
        "percent",
        "passed",
        "failed",
        "pending_manual",
        "feedback_html",
        "notes",
    }
    assert report["notes"] == []
    assert (report["score"], report["max_score"], report["percent"], report["passed"]) == (10, 10, 100, True)
    assert report["failed"] == [] and report["pending_manual"] == []
    assert report["feedback_html"] == str(tmp_path / "mini_lab_feedback.html")
    assert "Score: 10.0 / 10.0" in Path(report["feedback_html"]).read_text()


def test_released_lab_unanswered_fails_and_exits_1(tmp_path, capsys, released):
    submission = learner_copy(released, tmp_path)
    code, out = cli(capsys, "grade", str(submission), *FIXTURE_ARGS, "--json")
    assert code == 1, out.err
    report = json.loads(out.out)
    assert (report["score"], report["max_score"], report["percent"], report["passed"]) == (0, 10, 0, False)
    assert [(f["cell"], f["points"], f["max_points"]) for f in report["failed"]] == [
        (cell, 0, points) for cell, points in POINTS.items()
    ]
    assert all("NotImplementedError" in f["message"] for f in report["failed"]), report["failed"]


def test_exactly_80_percent_passes_though_a_hidden_test_fails(tmp_path, released, lab_folder):
    # Q4 hard-codes the visible test's answer: the visible test passes, the hidden ones (3e9, 5e8) do not.
    folder = shutil.copytree(lab_folder, tmp_path / "mini_lab")
    submission = learner_copy(
        released, folder, ["q1", "q2", "q3", "q5"], custom={"q4": "def to_gb(n_bytes):\n    return 2.0"}
    )
    check = grading.self_check(submission)  # the learner's view: visible tests only
    assert (check.points_passed, check.max_points, check.reaches_pass_mark) == (10, 10, True)
    assert "hidden tests" in check.note and "may still fail" in check.text()
    report = grade_fixture(submission)  # 3 + 2 + 2 + 1 = 8 of 10: the hidden test costs Q4's 2 points
    assert (report.score, report.max_score, report.percent, report.passed) == (8, 10, 80, True)
    assert [(f["cell"], f["message"]) for f in report.failed] == [("q4_test", "a hidden check failed")]


def test_70_percent_fails(tmp_path, released, capsys):
    submission = learner_copy(released, tmp_path, ["q1", "q2", "q3"])  # 3 + 2 + 2 = 7 of 10
    code, out = cli(capsys, "grade", str(submission), *FIXTURE_ARGS)
    assert code == 1
    assert out.out.startswith("7 / 10 points (70.00%): NOT PASSED (pass mark 80% = 8 points)")
    assert "q4_test" in out.out and "q5_test" in out.out and "q1_test" not in out.out


# --------------------------------------------------------------------------------------- grade: robustness


def test_infinite_loop_fails_its_cell_only_and_edited_tests_are_restored(tmp_path, released):
    submission = learner_copy(
        released,
        tmp_path,
        ["q1", "q3", "q5"],
        custom={"q2": "while True:\n    pass", "q4": "def to_gb(n_bytes):\n    return None"},
        edit_tests={"q4_test": "pass  # the learner's own 'test'"},
    )
    nb = nbformat.read(submission, as_version=4)
    for cell in nb.cells:  # also unlock the test cell and claim 100 points for it
        if grade_id(cell) == "q4_test":
            cell.metadata.nbgrader.update(points=100, locked=False)
            cell.metadata.update(editable=True, deletable=True)
    nbformat.write(nb, submission)

    start = time.monotonic()
    report = grade_fixture(submission, timeout_s=4, course_dir=tmp_path / "course")
    # bounded: one 4 s timeout, plus kernel start and nbgrader (~10-15 s on a busy 2-core machine). A guard against
    # a hang only, so generous; that nbgrader gets the 4 s limit is checked on its config, not on the clock
    assert time.monotonic() - start < 4 + 300
    assert course_config(tmp_path, 4).SandboxedExecute.timeout == 4
    # Q2 times out; Q3 and Q5, after it, still pass: 3 + 2 + 1 = 6. Q4's test is the instructor's again: fails.
    assert (report.score, report.max_score, report.passed) == (6, 10, False)
    failed = {f["cell"]: f for f in report.failed}
    assert set(failed) == {"q2_test", "q4_test"}
    assert "CellTimeoutError" in failed["q2_test"]["message"] and "q2_answer" in failed["q2_test"]["message"]
    # the failed visible check is quoted (q4's answer returns None, so its first visible check fails)
    assert failed["q4_test"]["max_points"] == 2
    assert failed["q4_test"]["message"] == "the check `assert close_enough(to_gb(2e9), 2.0)` failed"

    from nbgrader.api import Gradebook  # the gradebook is intact: the instructor's points and tests

    with Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}", grading.COURSE_ID) as gb:
        assert gb.find_assignment(ASSIGNMENT).max_score == 10
        assert {c.name: c.max_score for c in gb.find_notebook(ASSIGNMENT, ASSIGNMENT).grade_cells} == POINTS
        assert "to_gb(3e9)" in gb.find_source_cell("q4_test", ASSIGNMENT, ASSIGNMENT).source
        assert gb.find_submission(ASSIGNMENT, "student").score == 6
    autograded = nbformat.read(tmp_path / "course" / "autograded" / "student" / ASSIGNMENT / "mini_lab.ipynb", 4)
    q4 = next(c for c in autograded.cells if grade_id(c) == "q4_test")
    # the instructor's test ran, not the learner's; what is kept of it (and so the feedback) shows no hidden check
    assert "to_gb(2e9)" in q4.source and "learner's own" not in q4.source
    assert "to_gb(3e9)" not in q4.source and "hidden checks ran here" in q4.source


def test_exception_deleted_test_and_redefined_helper(tmp_path, released):
    submission = learner_copy(
        released,
        tmp_path,
        ["q2", "q4"],
        custom={
            # redefines the helper the tests use, to accept anything, and answers Q1 wrongly
            "q1": "def close_enough(actual, expected, rel=1e-9):\n    return True\n\n"
            "def step_time_s(total_s, steps):\n    return 0.0",
            "q3": "raise RuntimeError('boom')",
            "q5": "def relative_cost(throughput_gain, steps_change):\n    return 0.0",
        },
        delete=("q5_test",),
    )
    report = grade_fixture(submission)
    # Each test cell imports close_enough again, so the fake one never judges an answer: Q1 fails; Q2 and Q4,
    # whose tests use the helper after the redefinition, pass (2 + 2 = 4). Q3 raises. Q5's deleted test is put
    # back and run: it fails (a score of 0, not "needs manual grading").
    assert (report.score, report.max_score, report.passed) == (4, 10, False)
    failed = {f["cell"]: f["message"] for f in report.failed}
    assert set(failed) == {"q1_test", "q3_test", "q5_test"}
    assert failed["q1_test"] == "the check `assert close_enough(step_time_s(2.0, 4), 0.5)` failed"
    assert failed["q5_test"] == "the check `assert close_enough(relative_cost(0.20, 0.25), 1.25 / 1.20)` failed"
    assert "RuntimeError: boom" in failed["q3_test"]
    assert report.pending_manual == ()


def test_manually_graded_cell_is_pending_not_failed(tmp_path):
    # a copy of the fixture lab with a written answer (2 points) graded by hand: 12 points in all
    source_root = tmp_path / "solutions"
    shutil.copytree(SOURCE_ROOT, source_root)
    nb = nbformat.read(source_root / ASSIGNMENT / "mini_lab.ipynb", as_version=4)
    written = nbformat.v4.new_markdown_cell(
        "### BEGIN SOLUTION\nBecause the GPU waits on the data loader.\n### END SOLUTION"
    )
    written.metadata["nbgrader"] = {
        "grade": True,
        "solution": True,
        "locked": False,
        "points": 2,
        "grade_id": "q6_written",
        "schema_version": 3,
        "task": False,
    }
    nb.cells.insert(len(nb.cells) - 2, written)
    nbformat.write(nb, source_root / ASSIGNMENT / "mini_lab.ipynb")
    report = grading.grade(
        source_root / ASSIGNMENT / "mini_lab.ipynb",
        assignment=ASSIGNMENT,
        source_root=source_root,
        feedback_dir=tmp_path / "feedback",
    )
    # 10 of 12 graded so far: 83.33% already reaches the 9.6-point mark; the written answer waits for a grader
    assert (report.score, report.max_score, report.percent, report.passed) == (10, 12, 83.33, True)
    assert report.pending_manual == ({"cell": "q6_written", "max_points": 2.0},)
    assert report.failed == ()
    assert report.feedback_html == str(tmp_path / "feedback" / "student_mini_lab_feedback.html")
    assert "awaiting manual grading (2 points" in report.text()


# --------------------------------------------------------------------------------------- nbgrader's own failures


def test_a_submission_nbgrader_cannot_autograde_is_a_grading_error_not_a_grade(tmp_path, monkeypatch, capsys):
    from nbgrader.converters import Autograde

    from gpucost_lab.grading import autograde

    real = autograde.run_converter

    def disk_full_at_autograde(config, converter_class, **traits):
        if converter_class is Autograde:  # nbgrader's own failure, whatever the submission holds
            return "OSError: [Errno 28] No space left on device"
        return real(config, converter_class, **traits)

    monkeypatch.setattr(autograde, "run_converter", disk_full_at_autograde)
    submission = shutil.copy(SOURCE_NB, tmp_path / "mini_lab.ipynb")  # every answer right: no grade all the same
    with pytest.raises(grading.GradingError, match="nbgrader could not autograde it: OSError: .*No space left"):
        grade_fixture(submission)
    assert not issubclass(grading.GradingError, ValueError)  # a failure of the grading, not bad input
    code, out = cli(capsys, "grade", str(submission), *FIXTURE_ARGS, "--json")
    assert code == 2 and out.out == "" and "Traceback" not in out.err
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and "could not autograde" in lines[0] and str(submission) in lines[0]


def test_grading_in_a_given_course_leaves_it_as_generated_and_refuses_what_does_not_match_it(tmp_path, released):
    course = shared_course(SOURCE_ROOT, ASSIGNMENT, timeout_s=7)
    files = lambda: sorted(p.relative_to(course.path) for p in course.path.rglob("*") if p.is_file())  # noqa: E731
    before = files()
    submission = learner_copy(released, tmp_path, answers=["q1", "q2"])  # 3 + 2 of 10
    report = grading.grade(submission, assignment=ASSIGNMENT, source_root=SOURCE_ROOT, timeout_s=7, course=course)
    assert (report.score, report.passed) == (5, False)
    assert files() == before  # the submission's files are gone, the gradebook kept
    with pytest.raises(ValueError, match=r"^timeout_s 8 differs from the course's 7; allowed: 7"):
        grading.grade(submission, assignment=ASSIGNMENT, source_root=SOURCE_ROOT, timeout_s=8, course=course)
    with pytest.raises(ValueError, match=r"^course_dir must be None when a course is given"):
        grading.grade(
            submission, assignment=ASSIGNMENT, source_root=SOURCE_ROOT, timeout_s=7, course=course, course_dir=tmp_path
        )
