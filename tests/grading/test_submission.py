"""Tests of gpucost_lab.grading.submission: what ``read_submission`` refuses, against the problem each input has by
construction: unusable input (``ValueError``: one line naming the file and exit status 2), and a notebook that is a
link to the lab's solution (graded, it would score 16/16 and its feedback page would show the solution), a hard link
or a FIFO.
"""

import os
import re
from pathlib import Path

import nbformat
import pytest
from labtools import source_path

from gpucost_lab.cli.main import main

from .helpers import FIXTURE_ARGS, cli, grade_fixture, needs_sandbox

LAB = "profile_training_loop"
SOLUTION = source_path(LAB)  # solutions/profile_training_loop/profile_training_loop.ipynb: answers, hidden tests


def _listing(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.lstat().st_mtime_ns, p.lstat().st_size) for p in folder.rglob("*")}


def write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "make_input,problem",
    [
        (lambda d: d / "absent.ipynb", "no such file"),
        (lambda d: write(d / "answers.txt", "def f(): pass"), "not a Jupyter notebook"),
        (lambda d: write(d / "broken.ipynb", '{"cells": [{"cell_type": "code",'), "not valid notebook JSON"),
        (lambda d: write(d / "list.ipynb", "[1, 2]"), "not a notebook"),
        (
            lambda d: write(
                d / "other.ipynb",
                nbformat.writes(
                    nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('my own notebook')")])
                ),
            ),
            "none of the cells of assignment",
        ),
    ],
)
def test_unusable_input_is_one_line_and_exit_2(tmp_path, capsys, make_input, problem):
    path = make_input(tmp_path)
    code, out = cli(capsys, "grade", str(path), *FIXTURE_ARGS, "--json")
    assert code == 2 and out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and problem in lines[0] and str(path) in lines[0] and "Traceback" not in out.err
    with pytest.raises(ValueError, match=re.escape(str(path))):
        grade_fixture(path)


@needs_sandbox
@pytest.mark.parametrize("kind", ["symlink", "hard link", "fifo"])
def test_grade_refuses_a_notebook_that_is_a_link_in_one_line_and_writes_nothing(tmp_path, capsys, kind):
    folder = tmp_path / "mallory"
    folder.mkdir()
    notebook = folder / f"{LAB}.ipynb"
    if kind == "symlink":
        notebook.symlink_to(SOLUTION)
    elif kind == "hard link":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "solution.ipynb").write_bytes(SOLUTION.read_bytes())
        os.link(elsewhere / "solution.ipynb", notebook)
    else:
        os.mkfifo(notebook)
    before = (_listing(tmp_path), _listing(SOLUTION.parent))
    code = main(["grade", str(notebook), "--json"])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    lines = out.err.splitlines()
    assert len(lines) == 1, out.err
    assert lines[0].startswith(f"gpucost-lab grade: error: notebook '{notebook}' is a ")
    said = {"symlink": f"a symbolic link to '{SOLUTION}'", "hard link": "a hard link", "fifo": "a FIFO"}[kind]
    assert said in lines[0]
    assert (_listing(tmp_path), _listing(SOLUTION.parent)) == before  # no feedback page, here or beside the solution


def test_a_checks_one_line_miss_is_reported_by_its_sentence_alone():
    from gpucost_lab.grading.submission import cell_messages

    def graded(gid, ename, evalue):
        cell = nbformat.v4.new_code_cell("expect(x == 1, 'x is one')")
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": gid, "solution": False, "points": 1}
        cell.outputs = [nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"✗ {evalue}"])]
        return cell

    nb = nbformat.v4.new_notebook(cells=[graded("a", "Miss", "x is one"), graded("b", "KeyError", "'x'")])
    assert cell_messages(nb) == {"a": "x is one", "b": "KeyError: 'x'"}
