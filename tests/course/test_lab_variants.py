"""The labs with per-learner numbers, as written: every hidden check is announced in the released lab, and no test
hard-codes the self-study job's numbers (they come from the setup cell's names, which the grader computes for the
learner's id). Graded, they are test_lab_variants_grading.py; the solution run for many learners is
test_lab_variants_solution.py."""

import nbformat
import pytest
from labtools import is_check, meta, release_path, source_path

from gpucost_lab.grading.checks import HIDDEN_BEGIN, HIDDEN_MARK

LABS = ["profile_training_loop", "optimization_plan"]


def _tests(path):
    return [c for c in nbformat.read(path, as_version=4).cells if is_check(c)]


@pytest.mark.parametrize("lab", LABS)
def test_every_hidden_block_is_announced_by_the_mark_in_source_and_release(lab):
    source = {meta(c)["grade_id"]: c.source for c in _tests(source_path(lab))}
    release = {meta(c)["grade_id"]: c.source for c in _tests(release_path(lab))}
    for gid, src in source.items():
        lines = [line.strip() for line in src.splitlines()]
        hidden = HIDDEN_BEGIN in lines
        assert hidden == (HIDDEN_MARK in lines), gid
        if hidden:
            assert lines[lines.index(HIDDEN_BEGIN) - 1] == HIDDEN_MARK, gid
        assert (HIDDEN_MARK in release[gid]) == hidden and HIDDEN_BEGIN not in release[gid], gid


@pytest.mark.parametrize("lab", LABS)
def test_no_test_hard_codes_the_self_study_job(lab):
    # the numbers come from the setup cell's names, which the grader computes for the learner's id
    for cell in _tests(source_path(lab)):
        for literal in (
            "2.10",
            "2_000_000_000",
            "0.10",
            '"eval_checkpoint_heavy"',
            '"dataloader_stall"',
            "8.0",
            "1e-4",
            "0.0001",
            "device_gb=24",
            "(24 *",
        ):
            assert literal not in cell.source, (meta(cell)["grade_id"], literal)
