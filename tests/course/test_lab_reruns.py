"""Lab numbers a re-run cannot change (issue 26): a learner who copies an answer cell and leaves the copy, or runs the
whole notebook twice in one kernel, keeps every point an honest answer earns.

A copied answer cell keeps its nbgrader metadata (JupyterLab copies it); grading ignores the copy for scoring but
runs it, as the learner did, and the lab's simulated loop replays the same numbers on a second pass through it
(``SimulatedTrainingLoop``: each call's jitter is the k-th draw for its k-th call of the pass). The measured lab's
numbers are re-measured by a re-run, and its checks read the learner's own, consistent values.
"""

from __future__ import annotations

import copy
import uuid

import nbformat
import pytest
from labtools import answered_release, meta, write_submission

from gpucost_lab import grading
from gpucost_lab.grading.sandbox import unavailable_reason

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


@pytest.mark.grading
@pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox: {unavailable_reason()}")
@pytest.mark.parametrize("lab", LABS)
def test_every_answer_cell_duplicated_right_after_itself_keeps_full_marks(tmp_path, lab):
    nb = _every_answer_duplicated(answered_release(lab))
    answers = sum(bool(meta(c).get("solution")) for c in nb.cells)
    report = grading.grade(write_submission(nb, tmp_path / "sub", lab), assignment=lab)
    assert report.score == report.max_score, report.failed
    copies = [n for n in report.notes if "appears more than once" in n]
    assert len(copies) == answers // 2  # each copy named in a note, and ignored for the score


def _graded_points(nb) -> tuple[float, float]:
    """(points of the visible test cells that passed, all their points), by nbgrader's own rule."""
    from nbgrader.utils import determine_grade

    got = total = 0.0
    for cell in nb.cells:
        m = meta(cell)
        if m.get("grade") and not m.get("solution") and cell.cell_type == "code":
            total += float(m["points"])
            got += float(determine_grade(cell)[0] or 0)
    return got, total


@pytest.mark.notebook
@pytest.mark.parametrize("lab", LABS)
def test_run_all_twice_in_one_kernel_keeps_the_visible_points(tmp_path, lab, monkeypatch):
    """Run All, then Run All again in the same kernel: every visible check passes both times."""
    from nbclient import NotebookClient

    monkeypatch.setenv(grading.SELF_CHECK_ENV, "1")  # the lab's own self-check cell does nothing here
    nb = answered_release(lab)
    path = write_submission(nb, tmp_path, lab)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=300, allow_errors=True, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    points, ticks = [], []
    with client.setup_kernel():
        for _ in range(2):
            for index, cell in enumerate(nb.cells):
                if cell.cell_type == "code":
                    cell.outputs = []
                    client.execute_cell(cell, index)
            points.append(_graded_points(nb))
            ticks.append(_ticks(nb))
    (first, total), (second, _) = points
    assert first == second == total, points
    # each visible check cell prints one line, its tick, and nothing else, on both runs
    assert ticks[0] == ticks[1] and all(ticks[0].values()), ticks


def _ticks(nb) -> dict[str, bool]:
    """For each visible check cell: whether all it printed is one stdout line that starts with the tick (the kernel
    may send a line in more than one stream message)."""
    ticks = {}
    for cell in nb.cells:
        if meta(cell).get("grade") and not meta(cell).get("solution") and cell.cell_type == "code":
            stdout = all(o.output_type == "stream" and o.name == "stdout" for o in cell.outputs)
            text = "".join(o.get("text", "") for o in cell.outputs)
            ticks[meta(cell)["grade_id"]] = stdout and text.startswith("✓ ") and text.count("\n") == 1
    return ticks
