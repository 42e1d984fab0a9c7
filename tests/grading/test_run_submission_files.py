"""Tests of gpucost_lab.grading.run's copy of a submission: the sandbox gets only its plain files, and the log names
each other one (a hard link, a symbolic link, a FIFO). The runs themselves: tests/grading/test_run.py.
"""

from __future__ import annotations

import logging

from gpucost_lab.grading.run import copy_submission


def test_the_sandbox_gets_only_the_plain_files_and_the_log_names_the_others(submission_with_links, tmp_path, caplog):
    dest = tmp_path / "sandbox"
    with caplog.at_level(logging.WARNING):
        copy_submission(submission_with_links, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == ["answers.txt"]
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 4
    for name, kind in (("copy.db", "hard link"), ("data.csv", "symbolic link"), ("escape", "symbolic link")):
        assert any(name in line and kind in line for line in logged), logged
    assert any("pipe" in line and "FIFO" in line for line in logged), logged
