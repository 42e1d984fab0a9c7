"""``gpucost-lab self-check`` from the course root, run for real: the lab's bare name is the copy `make labs` wrote
under ``labs/``, executed in a Jupyter kernel, and the output says which file it checked. (Which notebook is chosen,
without running it: tests/grading/test_selfcheck_paths.py.)
"""

import json

import pytest

from .helpers import ASSIGNMENT, cli

pytestmark = pytest.mark.grading


def test_self_check_from_the_course_root_runs_the_lab_under_labs(labs_course, monkeypatch, capsys):
    monkeypatch.chdir(labs_course)
    code, out = cli(capsys, "self-check", f"{ASSIGNMENT}.ipynb", "--json")
    report = json.loads(out.out)
    assert report["notebook"] == f"labs/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    # the release as handed out: its visible tests are the fixture lab's 10 points (tests/grading/test_selfcheck.py)
    assert (report["visible_points"], report["max_points"]) == (10, 10) and code == 1
