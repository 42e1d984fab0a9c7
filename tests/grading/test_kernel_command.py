"""Tests of gpucost_lab.grading.kernel_command, graded: the kernel imports the very package the grader runs, even from
a course folder that holds its own copy. (The kernel's uid against the host's own account database:
tests/grading/test_kernel_command_uid.py.)
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from grading.test_attacks import RIGHT, notebook

from .helpers import ROOT, grade_cli, needs_sandbox

pytestmark = pytest.mark.grading


@needs_sandbox
def test_a_course_folder_with_its_own_package_is_graded_with_that_package(tmp_path):
    """The reproduction: a grader started in a folder that holds its own gpucost_lab (python -m puts it first on the
    path) while the environment's editable install points elsewhere. The kernel imports what the grader imports."""
    course = tmp_path / "course"
    shutil.copytree(ROOT / "gpucost_lab", course / "gpucost_lab", ignore=shutil.ignore_patterns("__pycache__"))
    path = notebook(tmp_path / "sub", RIGHT)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    done = grade_cli(path, "--json", cwd=course, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["score"] == 10
