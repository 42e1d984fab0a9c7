"""Tests of gpucost_lab.grading.notebooks in this process: a student id that is not a folder name, and a timeout out
of range, are refused in one line with exit status 2. The bounded input (issue 25: a notebook too large, nested too
deep or in nbformat 3, refused by name in a fresh process) is tests/grading/test_notebooks_bounds.py.
"""

from __future__ import annotations

import shutil

from .helpers import FIXTURE_ARGS, SOURCE_NB, cli


def test_bad_student_id_and_timeout_are_refused(tmp_path, capsys):
    shutil.copy(SOURCE_NB, tmp_path / "mini_lab.ipynb")
    for argv, flag in ([["--student", "../etc"], "--student"], [["--timeout", "0"], "--timeout"]):
        code, out = cli(capsys, "grade", str(tmp_path / "mini_lab.ipynb"), *FIXTURE_ARGS, *argv)
        assert code == 2 and out.err.count("\n") == 1 and out.err.startswith(f"gpucost-lab grade: error: {flag} ")
