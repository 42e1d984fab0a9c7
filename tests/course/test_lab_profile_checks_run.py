"""profile_training_loop's answered release run in this process as its learner's kernel would, each test graded by the
grader's ``Checks`` on the answers: honest work passes every check with a tick, and a slip (the run's cost in seconds
instead of hours) fails its own check alone, in one line, in the grader and in the learner's kernel."""

import contextlib
import io

import nbformat
import pytest
from labtools import PROFILE, answered_release, cells, is_check, meta

from gpucost_lab.course.checkpoints import Miss
from gpucost_lab.course.variants import LEARNER_ENV
from gpucost_lab.grading import answers
from gpucost_lab.grading.checks import Checks, is_trusted_setup

from .helpers import _check_cells_by_section

pytestmark = pytest.mark.slow


def _graded_here(tmp_path, lab, replace: dict[str, str] | None = None) -> tuple[dict, dict]:
    """``lab``'s answered release run in this process as its learner's kernel would (the setup, each answer cell,
    ``replace`` applied, and each visible check), and each test graded by the grader's ``Checks`` on the answers as
    the kernel sends them (plain data). Per test: the grader's outputs, and what its visible check printed or
    raised."""
    ns: dict = {"__name__": "__main__"}
    source = cells(nbformat.read(lab.source, as_version=4))
    checks = Checks(lambda name: answers.loads(answers.dumps(ns, name), name), None, tmp_path)
    graded, shown = {}, {}
    for cell in answered_release(lab.name).cells:
        gid = meta(cell).get("grade_id")
        if is_trusted_setup(cell):
            assert checks.run_setup(source[gid].source) is None
            exec(cell.source, ns)
        elif meta(cell).get("solution"):
            code = cell.source
            for old, new in (replace or {}).items():
                code = code.replace(old, new)
            exec(code, ns)
        elif is_check(cell):
            graded[gid] = checks.check(gid, source[gid].source)
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    exec(cell.source, ns)
            except AssertionError as err:
                shown[gid] = err
            else:
                shown[gid] = out.getvalue()
    return graded, shown


def test_honest_work_passes_every_check_with_a_tick_and_a_slip_fails_its_own_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv(LEARNER_ENV, raising=False)  # the self-study job, on both sides
    with contextlib.redirect_stdout(io.StringIO()):
        graded, shown = _graded_here(tmp_path, PROFILE)
    labels = {gid: f"{section} · " for section, gid, _ in _check_cells_by_section(PROFILE)}
    assert graded == {gid: [] for gid in labels}  # every test passes in the grader: all its points
    assert all(isinstance(text, str) and text.startswith("✓ " + labels[gid]) for gid, text in shown.items()), shown
    # the run's cost in seconds instead of hours: that test alone fails, in the grader and in the learner's kernel
    slip = {"timer.wall_s / 3600 * PRICE_PER_HOUR_USD\n": "timer.wall_s * PRICE_PER_HOUR_USD\n"}
    with contextlib.redirect_stdout(io.StringIO()):
        graded, shown = _graded_here(tmp_path, PROFILE, slip)
    assert [gid for gid, outputs in graded.items() if outputs] == ["lab_run_cost"]
    (error,) = graded["lab_run_cost"]
    why = "run_cost_usd is your wall time in hours (not seconds)"
    assert error["ename"] == "CheckFailed" and why in error["evalue"]
    assert isinstance(shown["lab_run_cost"], Miss) and why in str(shown["lab_run_cost"])  # one line, no tick
