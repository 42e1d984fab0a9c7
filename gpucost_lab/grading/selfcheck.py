"""``self_check``: the learner's progress on the visible tests of their own saved copy of a lab."""

from __future__ import annotations

import os
from pathlib import Path

from gpucost_lab.course.variants import LEARNER_ENV, _learner, current_learner
from gpucost_lab.grading.course import _path_with_this_python, _quiet_stderr
from gpucost_lab.grading.execute import HIDDEN_MARK
from gpucost_lab.grading.notebooks import (
    DEFAULT_TIMEOUT_S,
    _check_timeout,
    _nbgrader_meta,
    _quiet_nbformat,
    _read_notebook,
)
from gpucost_lab.grading.passmark import SCORE_DECIMALS, _percent, _points, meets_pass_mark, points_to_pass
from gpucost_lab.grading.reports import SelfCheckReport
from gpucost_lab.grading.submission import _cell_messages

#: Set in the environment of the kernel a self-check starts, so the lab's own self-check cell does nothing there.
SELF_CHECK_ENV = "GPUCOST_LAB_SELF_CHECK"


def self_check(
    path: str | os.PathLike, timeout_s: int = DEFAULT_TIMEOUT_S, learner: str | None = ...
) -> SelfCheckReport | None:
    """Run the saved notebook at ``path`` (the learner's copy: visible tests only) and report the points its
    test cells pass, against the pass mark. Call it from the lab's last cell after saving.

    ``learner`` is whose numbers the lab runs with (:mod:`gpucost_lab.course.variants`): by default the id in the
    environment, as in the learner's JupyterLab; None for the self-study lab. Grading with the same id
    (``gpucost-lab grade --student ID``) expects the same numbers.

    Returns ``None`` without running anything inside a self-check or an nbgrader run (so the lab's own
    self-check cell does not start itself again). Hidden tests are not run: they may still fail when graded.
    """
    if os.environ.get(SELF_CHECK_ENV) or os.environ.get("NBGRADER_EXECUTION"):
        return None
    from nbclient import NotebookClient
    from nbgrader.utils import determine_grade

    notebook = Path(path)
    timeout_s = _check_timeout(timeout_s)
    learner = current_learner() if learner is ... else _learner(learner)
    nb = _read_notebook(notebook)
    graded = [c for c in nb.cells if _nbgrader_meta(c).get("grade")]
    if not graded:
        raise ValueError(f"{notebook}: has no graded test cells to check (is it a lab notebook?)")
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(
        nb,
        timeout=timeout_s,
        interrupt_on_timeout=True,
        allow_errors=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.resolve().parent)}},
        error_on_timeout={
            "ename": "CellTimeoutError",
            "evalue": "",
            "traceback": ["CellTimeoutError: No reply from kernel before timeout"],
        },
    )
    env = dict(os.environ, **{SELF_CHECK_ENV: "1", LEARNER_ENV: learner or ""})
    env["PATH"] = _path_with_this_python()
    with _quiet_nbformat(), _quiet_stderr():
        client.execute(env=env)

    messages = _cell_messages(nb, timeout_s)
    passed = visible = manual = hidden = 0.0
    failed = []
    for cell in graded:
        meta = _nbgrader_meta(cell)
        points = float(meta.get("points", 0) or 0)
        if meta.get("solution") or cell.get("cell_type") != "code":
            manual += points  # answers graded by hand: not checkable here
            continue
        visible += points
        if any(line.strip() == HIDDEN_MARK for line in cell.source.splitlines()):
            hidden += points
        got, _ = determine_grade(cell)  # nbgrader's own rule: an error or stderr output fails the cell
        got = float(got or 0)
        passed += got
        if _points(got) < _points(points):
            failed.append(
                {
                    "cell": meta["grade_id"],
                    "points": got,
                    "max_points": points,
                    "message": messages.get(meta["grade_id"], "failed"),
                }
            )
    total = visible + manual
    report = SelfCheckReport(
        notebook=str(notebook),
        points_passed=round(passed, SCORE_DECIMALS),
        visible_points=round(visible, SCORE_DECIMALS),
        manual_points=round(manual, SCORE_DECIMALS),
        max_points=round(total, SCORE_DECIMALS),
        percent=_percent(passed, total),
        points_to_pass=points_to_pass(total),
        reaches_pass_mark=meets_pass_mark(passed, total),
        failed=tuple(failed),
        points_with_hidden_checks=round(hidden, SCORE_DECIMALS),
        learner=learner,
    )
    return report
