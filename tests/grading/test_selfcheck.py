"""Tests of gpucost_lab.grading.selfcheck: the learner's self-check of the fixture lab as `make labs` releases it
(tests/fixtures/grading/solutions/mini_lab: 3 + 2 + 2 + 2 + 1 = 10 points), run in a Jupyter kernel, against the visible
points summed by hand. (That it does nothing inside a grading run: tests/grading/test_selfcheck_during_grading.py.)
"""

import json
import shutil

import pytest

from .helpers import cli, learner_copy

pytestmark = pytest.mark.grading


def test_self_check_counts_visible_points_only(tmp_path, released, lab_folder, capsys):
    folder = shutil.copytree(lab_folder, tmp_path / "mini_lab")
    submission = learner_copy(released, folder, ["q1", "q3"])  # 3 + 2 = 5 visible points
    code, out = cli(capsys, "self-check", str(submission), "--json")
    assert code == 1
    report = json.loads(out.out)
    assert (report["points_passed"], report["visible_points"], report["manual_points"], report["max_points"]) == (
        5,
        10,
        0,
        10,
    )
    assert (report["percent"], report["pass_mark_percent"], report["points_to_pass"]) == (50, 80, 8)
    assert report["reaches_pass_mark"] is False
    assert [f["cell"] for f in report["failed"]] == ["q2_test", "q4_test", "q5_test"]
    assert "hidden tests" in report["note"] and "may still fail" in report["note"]
