"""The labs with per-learner numbers, graded: the method scores full marks for any learner, numbers copied from
another learner fail the numeric questions (in grade and in self-check alike), a slip in section 5 costs one
question, and self-check says how many points also depend on hidden checks."""

import re
from pathlib import Path

import nbformat
import pytest
from labtools import learner_copy, meta, release_path, source_path

from gpucost_lab.course.variants import lab_variant
from gpucost_lab.grading import grade, self_check
from gpucost_lab.grading.sandbox import unavailable_reason
from gpucost_lab.loop.phases import PhaseTimer
from gpucost_lab.loop.simulated import LOOP_LEVERS, run_instrumented

pytestmark = pytest.mark.grading

LAB1 = source_path("profile_training_loop")
LAB2 = source_path("optimization_plan")
# lab 1's questions whose answer is a number of the learner's own job, with their points (from the lab's headings)
NUMERIC = {"lab_run_cost": 1, "lab_overhead_share": 2, "lab_bound": 1, "lab_saving": 2, "lab_saved_usd": 1}

sandboxed = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox: {unavailable_reason()}")


def _copied_values(learner: str) -> dict:
    """Lab 1's answers for ``learner``'s job, computed here from the job's own instrumented runs."""
    job = lab_variant("profile_training_loop", learner)
    loop = job.loop()
    timer = run_instrumented(loop, PhaseTimer(clock=loop.clock))
    seconds = {p: s for p, s in timer.seconds.items()}
    wall = timer.wall_s
    largest = max((p for p in seconds if p != "forward_backward"), key=seconds.get)
    lever = next(name for name, (phase, _) in LOOP_LEVERS.items() if phase == largest)
    improved = job.loop().with_lever(lever)
    after = run_instrumented(improved, PhaseTimer(clock=improved.clock)).wall_s
    return {
        "run_cost_usd": wall / 3600 * job.price_per_hour_usd,
        "overhead_share": (seconds["eval"] + seconds["checkpoint"]) / wall,
        "bound_share": seconds[largest] / wall,
        "saving_share": 1 - after / wall,
        "saved_usd_per_run": (wall - after) / 3600 * job.price_per_hour_usd,
    }


def _lab1_with(tmp_path: Path, name: str, extra: str = "", replace: dict | None = None) -> Path:
    """The solution with ``extra`` appended to every answer cell (so the copied numbers are what each test reads)."""
    nb = nbformat.read(LAB1, as_version=4)
    for cell in nb.cells:
        if meta(cell).get("solution"):
            for old, new in (replace or {}).items():
                cell.source = cell.source.replace(old, new)
            cell.source += "\n" + extra
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


@sandboxed
def test_numbers_copied_from_another_learner_fail_the_numeric_questions_in_grade_and_self_check(tmp_path):
    copied = _lab1_with(tmp_path, "copied", "\n".join(f"{k} = {v!r}" for k, v in _copied_values("bob").items()))
    as_bob = grade(copied, student="bob", feedback_dir=tmp_path)
    assert (as_bob.score, as_bob.passed) == (16, True)  # bob's own numbers: every check agrees
    as_alice = grade(copied, student="alice", feedback_dir=tmp_path)
    failed = {f["cell"] for f in as_alice.failed}
    assert set(NUMERIC) <= failed and not as_alice.passed
    assert as_alice.score <= 16 - sum(NUMERIC.values())
    # self-check runs the same numbers as the grade for the same id: bob's copy is consistent only for bob
    assert self_check(copied, learner="bob").points_passed == 16
    mine = self_check(copied, learner="alice")
    assert {"lab_run_cost", "lab_overhead_share", "lab_saving", "lab_saved_usd"} <= {f["cell"] for f in mine.failed}
    assert mine.learner == "alice"


@sandboxed
def test_the_method_scores_full_marks_for_any_learner_and_one_slip_costs_one_question(tmp_path):
    solution = grade(LAB1, student="carol", feedback_dir=tmp_path)
    assert (solution.score, solution.passed) == (16, True)
    # chapter 05's 90% bound instead of the whole phase: lab_bound (1 point) and nothing else
    slip = _lab1_with(
        tmp_path, "slip", replace={'LOOP_LEVERS[lever][0], "share"])': 'LOOP_LEVERS[lever][0], "share"]) * 0.9'}
    )
    assert "* 0.9" in slip.read_text()
    report = grade(slip, student="carol", feedback_dir=tmp_path)
    assert (report.score, [f["cell"] for f in report.failed]) == (15, ["lab_bound"])
    assert "not 90%" in report.failed[0]["message"]


def _lab2_with(tmp_path: Path, name: str, extra: dict | None = None) -> Path:
    """Lab 2's solution as a learner submits it (markers gone), ``extra[grade_id]`` appended to that answer cell."""
    nb = learner_copy(LAB2)
    for cell in nb.cells:
        if meta(cell).get("grade_id") in (extra or {}):
            cell.source += "\n" + extra[meta(cell)["grade_id"]]
    path = tmp_path / name / "optimization_plan.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    return path


@sandboxed
def test_lab2_memory_plan_scores_for_any_learner_and_the_self_study_numbers_fail_it(tmp_path):
    # the memory plan's method on alice's own scaled device: full marks
    solution = grade(_lab2_with(tmp_path, "method"), student="alice", feedback_dir=tmp_path)
    assert (solution.score, solution.passed) == (16, True), solution.failed
    # the self-study job's answers, by hand: floor((100,000 x 0.9 - 63,072) / 640) = 42 samples; 64 runs as 2
    # microbatches of 32, each optimizer step 1 + 0.15 as long. Alice's device binds harder (20 to 31 samples).
    copied = _lab2_with(
        tmp_path,
        "copied",
        {"plan_memory": "max_microbatch = 42", "plan_memory_fix": "accumulation_steps, step_time_factor = 2, 1.15"},
    )
    report = grade(copied, student="alice", feedback_dir=tmp_path)
    # both memory questions, and the decision, whose nightly hours use the copied step-time factor
    assert {f["cell"] for f in report.failed} == {"plan_max_microbatch", "plan_accumulation", "plan_decision"}
    assert (report.score, report.passed) == (16 - 1 - 1 - 2, False)


def test_self_check_says_how_many_points_also_depend_on_hidden_checks(tmp_path):
    # lab 1's test cells with a hidden part: instrument_totals 2, run_cost 1, overhead_share 2, largest_overhead 1,
    # idle_phase 1, lever 1, bound 1, saving 2, saved_usd 1, fits_window 1, revalidate 1 = 14 of 16
    # (lab_instrument_phases and lab_balance_table are checked in full by their visible tests)
    report = self_check(release_path("profile_training_loop"), learner=None)
    assert report.points_with_hidden_checks == 14 and report.learner is None
    assert re.search(r"14 points of 16 also depend on hidden checks", report.text())
