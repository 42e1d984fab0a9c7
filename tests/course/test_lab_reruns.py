"""Lab numbers a re-run cannot change (issue 26): a learner who copies an answer cell and leaves the copy keeps every
point an honest answer earns. (Running the whole notebook twice in one kernel is test_lab_run_all_twice.py.)

A copied answer cell keeps its nbgrader metadata (JupyterLab copies it); grading ignores the copy for scoring but
runs it, as the learner did, and the lab's simulated loop replays the same numbers on a second pass through it
(``SimulatedTrainingLoop``: each call's jitter is the k-th draw for its k-th call of the pass).
"""

from __future__ import annotations

import copy
import uuid

import pytest
from labtools import answered_release, meta, write_submission

from gpucost_lab import grading
from gpucost_lab.grading.sandbox import unavailable_reason

pytestmark = pytest.mark.grading

LABS = ("profile_training_loop", "optimization_plan")


def _every_answer_duplicated(nb):
    """Each answer cell followed by a copy of itself (same source and nbgrader metadata, a new cell id)."""
    out = []
    for cell in nb.cells:
        out.append(cell)
        if meta(cell).get("solution"):
            twin = copy.deepcopy(cell)
            twin["id"] = uuid.uuid4().hex[:8]
            out.append(twin)
    nb.cells = out
    return nb


@pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox: {unavailable_reason()}")
@pytest.mark.parametrize("lab", LABS)
def test_every_answer_cell_duplicated_right_after_itself_keeps_full_marks(tmp_path, lab):
    nb = _every_answer_duplicated(answered_release(lab))
    answers = sum(bool(meta(c).get("solution")) for c in nb.cells)
    report = grading.grade(write_submission(nb, tmp_path / "sub", lab), assignment=lab)
    assert report.score == report.max_score, report.failed
    copies = [n for n in report.notes if "appears more than once" in n]
    assert len(copies) == answers // 2  # each copy named in a note, and ignored for the score
