"""Grading a class: submissions built from the real lab, with verdicts known by hand.

Points (the lab's own headings, as in tests/test_lab.py): 3 + 2 + 3 + 1 + 2 + 2 + 2 + 1 = 16; 80% is 12.8.
Every reference answer: 16 / 16, passed. The release as handed out: 0 / 16, not passed. Malformed JSON: an
error row, not a crash, and the other students are still graded.
"""

from pathlib import Path

import nbformat
import pytest

from gpucost_lab.class_grading import COLUMNS, find_submissions, grade_class

ROOT = Path(__file__).resolve().parents[1]
LAB = "profile_training_loop"
SOURCE = ROOT / "solutions" / LAB / f"{LAB}.ipynb"
RELEASE = ROOT / "labs" / LAB / f"{LAB}.ipynb"


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _answered_release():
    """The release with every solution cell's reference answer (marker lines removed) filled in."""
    source = {_meta(c)["grade_id"]: c for c in nbformat.read(SOURCE, as_version=4).cells if _meta(c).get("grade_id")}
    release = nbformat.read(RELEASE, as_version=4)
    for cell in release.cells:
        if _meta(cell).get("solution"):
            cell.source = "\n".join(
                ln for ln in source[_meta(cell)["grade_id"]].source.splitlines() if "### " not in ln
            )
    return release


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    class_dir = tmp_path_factory.mktemp("class")
    (class_dir / "alice").mkdir()
    nbformat.write(_answered_release(), class_dir / "alice" / f"{LAB}.ipynb")  # <dir>/<student>/<notebook>
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


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="workers"):
        grade_class(tmp_path, workers=0)
    with pytest.raises(ValueError, match="does not exist"):
        find_submissions(tmp_path / "missing")
    (tmp_path / "a_file").write_text("")
    with pytest.raises(ValueError, match="not a directory"):
        find_submissions(tmp_path / "a_file")
    (tmp_path / "empty_class").mkdir()
    with pytest.raises(ValueError, match="holds no submission"):
        grade_class(tmp_path / "empty_class")
    with pytest.raises(ValueError, match="timeout_s"):
        grade_class(tmp_path, timeout_s=0)
