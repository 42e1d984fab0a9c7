"""Lab numbers a re-run cannot change (issue 26): a learner who runs the whole notebook twice in one kernel (Run All,
then Run All again) keeps every visible point, and each visible check prints its tick both times.

The lab's simulated loop replays the same numbers on a second pass (``SimulatedTrainingLoop``: each call's jitter is
the k-th draw for its k-th call of the pass); the measured lab's numbers are re-measured by a re-run, and its checks
read the learner's own, consistent values. (A copied answer cell, graded, is test_lab_reruns.py.)"""

from __future__ import annotations

import nbformat
import pytest
from labtools import answered_release, meta, write_submission

from gpucost_lab import grading

pytestmark = pytest.mark.notebook

LABS = ("profile_training_loop", "optimization_plan")


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
