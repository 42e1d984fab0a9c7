"""Tests of gpucost_lab.grading.classes: grading a class, submissions built from the real lab, with verdicts known by
hand.

Points (the lab's own headings, as in tests/course/test_lab_profile_grading.py): 3 + 2 + 3 + 1 + 2 + 2 + 2 + 1 = 16; 80%
is 12.8. Every reference answer: 16 / 16, passed. The release as handed out: 0 / 16, not passed. Malformed JSON: an
error row, not a crash, and the other students are still graded. A student folder or notebook that is a link (to the
lab's solution, say): an error row of its own, not a grade. (Finding the submissions and refusing bad arguments, without
grading: tests/grading/test_classes_submissions.py.)
"""

import math

import nbformat
import pytest
from labtools import ROOT, answered_release, release_path, source_path, write_submission
from labtools import meta as _meta

from gpucost_lab.grading.classes import COLUMNS, grade_class

from .helpers import needs_sandbox

pytestmark = pytest.mark.grading

LAB = "profile_training_loop"
SOURCE = source_path(LAB)  # the lab's solution: every answer, the hidden tests
RELEASE = release_path(LAB)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    class_dir = tmp_path_factory.mktemp("class")
    (class_dir / "alice").mkdir()
    nbformat.write(answered_release(LAB), class_dir / "alice" / f"{LAB}.ipynb")  # <dir>/<student>/<notebook>
    nbformat.write(nbformat.read(RELEASE, as_version=4), class_dir / "bob.ipynb")  # <dir>/<student>.ipynb
    (class_dir / "carol.ipynb").write_text('{"cells": [ this is not json', encoding="utf-8")
    (class_dir / "dave").mkdir()  # a folder with no notebook
    return grade_class(class_dir, workers=2, source_root=ROOT / "solutions")


def test_columns_and_one_row_per_student(graded):
    assert list(graded.columns) == COLUMNS
    assert list(graded["student"]) == ["alice", "bob", "carol", "dave"]


def test_full_answers_pass_with_every_point(graded):
    alice = graded.set_index("student").loc["alice"]
    assert (alice["score"], alice["max_score"], alice["percent"], bool(alice["passed"])) == (16, 16, 100, True)
    assert alice["error"] is None


def test_the_unanswered_release_fails_with_no_points(graded):
    bob = graded.set_index("student").loc["bob"]
    assert (bob["score"], bob["max_score"], bob["percent"], bool(bob["passed"])) == (0, 16, 0, False)
    assert bob["error"] is None


def test_broken_submissions_are_error_rows(graded):
    rows = graded.set_index("student")
    assert "not valid notebook JSON" in rows.loc["carol", "error"]
    assert "expected one notebook, found 0" in rows.loc["dave", "error"]
    assert not rows.loc["carol", "passed"] and not rows.loc["dave", "passed"]


def test_a_source_nbgrader_cannot_generate_is_each_rows_grading_error_generated_once(tmp_path, monkeypatch):
    # in one process: the worker's state set as _init_worker sets it, without starting a pool
    from gpucost_lab.grading import classes

    source_root = tmp_path / "solutions"
    (source_root / LAB).mkdir(parents=True)
    nb = nbformat.read(SOURCE, as_version=4)
    test_cell = next(c for c in nb.cells if _meta(c).get("grade") and not _meta(c).get("solution"))
    nb.cells.append(nbformat.v4.new_code_cell(test_cell.source, metadata=dict(test_cell.metadata)))  # a twin id
    nbformat.write(nb, source_root / LAB / f"{LAB}.ipynb")
    monkeypatch.setattr(classes, "_WORKER", {"scratch": tmp_path / "scratch", "timeout_s": 5, "courses": {}, "made": 0})
    calls = []
    real = classes.generate_course
    monkeypatch.setattr(classes, "generate_course", lambda *a: calls.append(a) or real(*a))
    rows = [
        classes._grade_one(student, str(RELEASE), LAB, str(source_root.resolve()), None) for student in ("ana", "bo")
    ]
    for row in rows:
        assert row["error"].startswith("GradingError: nbgrader could not generate assignment"), row["error"]
        assert (row["score"], row["passed"]) == (None, False)
    assert len(calls) == 1  # the second submission read why from the first attempt's marker
    (marker,) = (tmp_path / "scratch" / "generated").glob("*/failed")
    assert marker.read_text(encoding="utf-8") in rows[1]["error"]


@needs_sandbox
def test_grade_class_grades_the_honest_learner_and_not_the_link_to_the_solution(tmp_path):
    class_dir = tmp_path / "class"
    write_submission(answered_release(LAB), class_dir / "alice", LAB)
    (class_dir / "mallory").mkdir()
    (class_dir / "mallory" / f"{LAB}.ipynb").symlink_to(SOURCE)
    feedback = tmp_path / "feedback"
    rows = grade_class(class_dir, workers=1, feedback_dir=feedback).set_index("student")
    assert list(rows.index) == ["alice", "mallory"]
    alice, mallory = rows.loc["alice"], rows.loc["mallory"]
    assert (alice["score"], alice["max_score"], alice["percent"], bool(alice["passed"])) == (16, 16, 100, True)
    assert alice["error"] is None
    assert math.isnan(mallory["score"]) and not mallory["passed"]  # not graded: no score
    link = class_dir / "mallory" / f"{LAB}.ipynb"
    assert mallory["error"].startswith(f"submissions_dir: {link} is a symbolic link to '{SOURCE}'")
    assert sorted(p.name for p in feedback.iterdir()) == [f"alice_{LAB}_feedback.html"]
