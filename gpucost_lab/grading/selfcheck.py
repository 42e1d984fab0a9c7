"""``self_check``: the learner's progress on the visible tests of their own saved copy of a lab.

The notebook may be named by its path, or by its bare name from the lab's folder or from the course's root folder,
where JupyterLab opens: there ``profile_training_loop.ipynb`` names
``labs/profile_training_loop/profile_training_loop.ipynb`` (:func:`find_lab_notebook`).
"""

from __future__ import annotations

import os
from pathlib import Path
from types import EllipsisType

from gpucost_lab._validate import InputError
from gpucost_lab.course.variants import LEARNER_ENV, check_learner, current_learner
from gpucost_lab.grading.checks import HIDDEN_MARK
from gpucost_lab.grading.course import path_with_this_python, quiet_stderr
from gpucost_lab.grading.notebooks import (
    DEFAULT_TIMEOUT_S,
    check_timeout,
    nbgrader_meta,
    quiet_nbformat,
    read_notebook,
)
from gpucost_lab.grading.passmark import SCORE_DECIMALS, exact_points, meets_pass_mark, percent_of, points_to_pass
from gpucost_lab.grading.reports import SelfCheckReport
from gpucost_lab.grading.submission import cell_messages

#: Set in the environment of the kernel a self-check starts, so the lab's own self-check cell does nothing there.
SELF_CHECK_ENV = "GPUCOST_LAB_SELF_CHECK"


def self_check(
    path: str | os.PathLike, timeout_s: int = DEFAULT_TIMEOUT_S, learner: str | None | EllipsisType = ...
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
    notebook = find_lab_notebook(path)
    timeout_s = check_timeout(timeout_s)
    learner = current_learner() if learner is ... else check_learner(learner)
    nb = read_notebook(notebook)
    graded = [c for c in nb.cells if nbgrader_meta(c).get("grade")]
    if not graded:
        raise ValueError(f"{notebook}: has no graded test cells to check (is it a lab notebook?)")
    _execute(nb, notebook, timeout_s, learner)
    passed, visible, manual, hidden, failed = _tally(graded, cell_messages(nb, timeout_s))
    total = visible + manual
    return SelfCheckReport(
        notebook=str(notebook),
        points_passed=round(passed, SCORE_DECIMALS),
        visible_points=round(visible, SCORE_DECIMALS),
        manual_points=round(manual, SCORE_DECIMALS),
        max_points=round(total, SCORE_DECIMALS),
        percent=percent_of(passed, total),
        points_to_pass=points_to_pass(total),
        reaches_pass_mark=meets_pass_mark(passed, total),
        failed=tuple(failed),
        points_with_hidden_checks=round(hidden, SCORE_DECIMALS),
        learner=learner,
    )


def _lab_places(name: Path) -> list[Path]:
    """Where a lab notebook's bare name may be, relative to the current folder, besides itself: the course root's
    release (``labs/LAB/LAB.ipynb``) and a fetched assignment (``LAB/LAB.ipynb``, nbgrader's layout on a hub)."""
    if name.is_absolute() or len(name.parts) != 1 or name.suffix != ".ipynb":
        return []
    return [Path("labs", name.stem, name.name), Path(name.stem, name.name)]


def find_lab_notebook(path: str | os.PathLike) -> Path:
    """The notebook ``path`` names: ``path`` itself when it exists; else, for a bare lab name such as
    ``profile_training_loop.ipynb``, the first of ``labs/profile_training_loop/`` and ``profile_training_loop/``
    under the current folder that holds it, so that the name works from the course root as well as from the lab's
    own folder. Found nowhere: InputError (``notebook``) naming the path and every place it was looked for."""
    notebook = Path(path)
    if notebook.exists():
        return notebook
    places = _lab_places(notebook)
    for place in places:
        if place.is_file():
            return place
    here = Path.cwd()
    if places:
        where = f"in {here}, nor in its {' or '.join(f'{place.parent}{os.sep}' for place in places)}"
    else:
        where = f"at {here / notebook}"
    raise InputError(
        "notebook",
        f"notebook {str(path)!r}: no such file {where}; allowed: the path of your saved lab notebook, or its name "
        "from the lab's folder or the course's folder",
    )


def _execute(nb, notebook: Path, timeout_s: int, learner: str | None) -> None:
    """Run ``nb`` (read from ``notebook``) afresh in a kernel of its own, in its folder, with ``learner``'s numbers;
    its outputs are then those of this run."""
    from nbclient import NotebookClient

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
    env["PATH"] = path_with_this_python()
    with quiet_nbformat(), quiet_stderr():
        client.execute(env=env)


def _tally(graded: list, messages: dict[str, str]) -> tuple[float, float, float, float, list[dict]]:
    """The points the executed ``graded`` cells pass, and their visible, manual and hidden-checked points; and each
    test cell that lost points, with why (``messages``)."""
    from nbgrader.utils import determine_grade

    passed = visible = manual = hidden = 0.0
    failed = []
    for cell in graded:
        meta = nbgrader_meta(cell)
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
        if exact_points(got) < exact_points(points):
            failed.append(
                {
                    "cell": meta["grade_id"],
                    "points": got,
                    "max_points": points,
                    "message": messages.get(meta["grade_id"], "failed"),
                }
            )
    return passed, visible, manual, hidden, failed
