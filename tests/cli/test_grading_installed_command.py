"""``gpucost-lab grade-class`` as installed, in a fresh process (which imports torch): bad input is one line and exit
status 2, as in test_grading.py in this process."""

import subprocess

import pytest

from .helpers import SCRIPT

pytestmark = pytest.mark.slow


def test_the_installed_command_gives_one_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [str(SCRIPT), "grade-class", str(tmp_path / "missing"), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "SUBMITTED_DIR" in proc.stderr and "does not exist" in proc.stderr
