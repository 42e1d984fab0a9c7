"""Tests of gpucost_lab.grading.classes before any grading: bad arguments are refused, and finding a class's
submissions gives each link (a student folder or notebook that links elsewhere, to the lab's solution say) and each
special file an error row of its own. Grading a class is tests/grading/test_classes.py."""

import os

import nbformat
import pytest
from labtools import source_path, write_submission

from gpucost_lab.grading.classes import find_submissions, grade_class

LAB = "profile_training_loop"
SOURCE = source_path(LAB)  # the lab's solution: every answer, the hidden tests


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


def test_find_submissions_gives_each_link_its_own_error_row(tmp_path):
    honest = write_submission(nbformat.read(SOURCE, as_version=4), tmp_path / "alice", LAB)
    (tmp_path / "bob").symlink_to(tmp_path / "alice")  # a student folder that is a link
    (tmp_path / "carol.ipynb").symlink_to(SOURCE)  # a student notebook that is a link
    write_submission(nbformat.read(SOURCE, as_version=4), tmp_path / "dave", LAB)
    os.mkfifo(tmp_path / "dave" / "pipe")  # a plain notebook, and a FIFO beside it
    rows = {student: (notebook, problem) for student, notebook, problem in find_submissions(tmp_path)}
    assert list(rows) == ["alice", "bob", "carol", "dave"]
    assert rows["alice"] == (honest, None)
    for student, path, why in (
        ("bob", tmp_path / "bob", f"a symbolic link to '{tmp_path / 'alice'}'"),
        ("carol", tmp_path / "carol.ipynb", f"a symbolic link to '{SOURCE}'"),
        ("dave", tmp_path / "dave" / "pipe", "a FIFO (named pipe)"),
    ):
        notebook, problem = rows[student]
        assert notebook is None
        assert problem.startswith(f"submissions_dir: {path} is {why}"), problem
