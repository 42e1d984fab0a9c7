"""Fixtures shared by the tests of gpucost_lab.grading: the fixture lab as `make labs` releases it, and a submission
folder holding each kind of link."""

from __future__ import annotations

import os
import shutil
import subprocess

import nbformat
import pytest

from .helpers import ASSIGNMENT, ROOT, SOURCE_ROOT


@pytest.fixture(scope="session")
def labs_course(tmp_path_factory):
    """A course like the repository (its nbgrader_config.py, the fixture lab as solutions/), built by `make labs`."""
    course = tmp_path_factory.mktemp("course")
    shutil.copytree(SOURCE_ROOT, course / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / "labs" / "renamed_lab").mkdir(parents=True)  # a lab whose source is gone
    (course / "labs" / "README.md").write_text("kept\n")
    # the repository's Makefile, run in the course; -o: the shared .venv is installed already
    proc = subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(course),
            "-f",
            str(ROOT / "Makefile"),
            "labs",
            f"VENV={ROOT / '.venv'}",
            "-o",
            str(ROOT / ".venv" / ".installed"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return course


@pytest.fixture(scope="session")
def lab_folder(labs_course):
    """The released lab as learners get it: the notebook and the helper module beside it."""
    return labs_course / "labs" / ASSIGNMENT


@pytest.fixture(scope="session")
def released(lab_folder):
    return nbformat.read(lab_folder / "mini_lab.ipynb", as_version=4)


@pytest.fixture
def submission_with_links(tmp_path):
    """A submission folder with one plain file and, beside it, each kind of name that points elsewhere."""
    outside = tmp_path / "course"
    outside.mkdir()
    (outside / "gradebook.db").write_text("every learner's id and score", encoding="utf-8")
    sub = tmp_path / "sub"
    (sub / "inner").mkdir(parents=True)
    (sub / "answers.txt").write_text("my own work", encoding="utf-8")
    (sub / "data.csv").symlink_to(outside / "gradebook.db")  # a symlink to a file outside
    (sub / "inner" / "escape").symlink_to("../../course/gradebook.db")  # a relative one, deeper, pointing outside
    os.link(outside / "gradebook.db", sub / "copy.db")  # the same file under a second name
    os.mkfifo(sub / "pipe")
    return sub
