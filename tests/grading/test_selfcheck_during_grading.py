"""Tests of gpucost_lab.grading.selfcheck: inside a grading run (nbgrader's, or a self-check's own) the lab's last
cell's self-check does nothing. (The self-check itself: tests/grading/test_selfcheck.py.)
"""

from gpucost_lab import grading


def test_self_check_does_nothing_inside_a_grading_run(monkeypatch, tmp_path):
    # the lab's last cell calls self_check(); while nbgrader (or a self-check) runs the lab it must not start again
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert grading.self_check(tmp_path / "never_read.ipynb") is None
