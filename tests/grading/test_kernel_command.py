"""Tests of gpucost_lab.grading.kernel_command: the command that starts a graded kernel, against the host's own
account database and a copy of the package: the kernel's uid (where the grader is root) belongs to no account and
keeps no capability, and the kernel imports the very package the grader runs, even from a course folder that holds
its own copy.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil

import pytest

from gpucost_lab.grading import kernel_command
from grading.test_attacks import RIGHT, notebook

from .helpers import ROOT, grade_cli, needs_sandbox


def test_the_kernels_uid_has_no_account_and_no_capabilities():
    with pytest.raises(KeyError):
        pwd.getpwuid(kernel_command.SANDBOX_UID)
    if kernel_command.privileged():
        drop = kernel_command.drop_privileges()
        assert f"--reuid={kernel_command.SANDBOX_UID}" in drop and "--bounding-set=-all" in drop
        assert (
            "--unshare-user" not in kernel_command.namespaces() and "--unshare-all" not in kernel_command.namespaces()
        )


@needs_sandbox
@pytest.mark.grading
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
