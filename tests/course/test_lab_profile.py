"""The real labs: each release matches its source, hides what it must, and grades as the points say.

The tests every lab shares run once per lab (``LABS`` in labtools.py); below them, this lab's own. The capstone's
own tests are in test_lab_optimization_plan.py.

Points of profile_training_loop (from the lab's own headings): 1 instrument 3, 2 balance 2, 3 dominant 3,
4 correlate 1, 5 decide 2, 6 act 2, 7 price 2, 8 re-profile 1 = 16; 80% is 12.8, so 13 points pass and 12 fail.
"""

import ast
import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from labtools import (
    LABS,
    PLAN,
    PROFILE,
    ROOT,
    answered_release,
    cells,
    checks_after,
    course_copy,
    generated_release,
    instructor_workflow,
    is_check,
    learner_copy,
    meta,
    write_submission,
)

from gpucost_lab.course.checkpoints import Miss
from gpucost_lab.course.variants import LEARNER_ENV
from gpucost_lab.grading import answers, grade
from gpucost_lab.grading.checks import HIDDEN_MARK, Checks, is_trusted_setup

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
each_lab = pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])


@each_lab
@pytest.mark.grading
def test_release_is_what_nbgrader_generates_from_the_source(tmp_path, lab):
    fresh = generated_release(lab.name, tmp_path)
    committed = nbformat.read(lab.release, as_version=4)
    assert [(c.cell_type, c.source, meta(c)) for c in committed.cells] == [
        (c.cell_type, c.source, meta(c)) for c in fresh.cells
    ], "labs/ drifted from solutions/: run `make labs`"


@each_lab
def test_release_holds_no_solution_and_no_hidden_test(lab):
    text = lab.release.read_text()
    for marker in MARKERS:
        assert marker not in text
    source, release = nbformat.read(lab.source, as_version=4), nbformat.read(lab.release, as_version=4)
    assert set(cells(source)) == set(cells(release))
    for gid, cell in cells(release).items():
        if meta(cell).get("solution"):
            assert "raise NotImplementedError" in cell.source
            solution = cells(source)[gid].source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
            for line in filter(None, (ln.strip() for ln in solution.splitlines())):
                assert line not in cell.source, f"{gid}: solution line {line!r} leaked into labs/"
        elif meta(cell).get("grade"):  # a test cell may have no hidden part (some of profile_training_loop's)
            hidden = cells(source)[gid].source.partition("### BEGIN HIDDEN TESTS")[2].split("### END HIDDEN TESTS")[0]
            for line in filter(None, (ln.strip() for ln in hidden.splitlines())):
                if not line.startswith(("from ", "import ")):  # helper imports may repeat the visible part's
                    assert line not in cell.source, f"{gid}: hidden test line {line!r} leaked into labs/"


@each_lab
def test_lab_has_enough_graded_cells_for_80_percent_to_mean_something(lab):
    graded = [c for c in cells(nbformat.read(lab.source, as_version=4)).values() if meta(c).get("grade")]
    assert len(graded) >= 8
    assert sum(meta(c)["points"] for c in graded) == 16


@each_lab
def test_all_answers_are_listed(lab):
    source = nbformat.read(lab.source, as_version=4)
    assert {gid for gid, c in cells(source).items() if meta(c).get("solution")} == lab.answers


VERDICTS = "from gpucost_lab.course.checkpoints import expect, passed"


def _check_cells_by_section(lab):
    """(section number, grade_id, source) of each test cell of ``lab``'s source, under its ``## N ·`` heading."""
    section, found = None, []
    for cell in nbformat.read(lab.source, as_version=4).cells:
        heading = re.match(r"## (\d+) ·", cell.source) if cell.cell_type == "markdown" else None
        section = int(heading.group(1)) if heading else section
        if is_check(cell):
            found.append((section, meta(cell)["grade_id"], cell.source))
    return found


@each_lab
def test_every_check_says_its_verdict_in_one_line_and_ticks_before_its_hidden_part(lab):
    # each check is expect(condition, message) (a Miss: one line, still an AssertionError for nbgrader), never a bare
    # assert; the visible part ends in passed("N · ..."), N its section's number, and the hidden part prints nothing
    for section, gid, source in _check_cells_by_section(lab):
        visible = source.split(HIDDEN_MARK)[0]
        body = ast.parse(visible).body
        assert VERDICTS in visible.splitlines(), gid
        assert not [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Assert)], f"{gid}: a bare assert"
        last = body[-1]
        assert isinstance(last, ast.Expr) and isinstance(last.value, ast.Call), gid
        assert ast.unparse(last.value.func) == "passed" and source.count("passed(") == 1, gid
        label = last.value.args[0].value
        assert label.startswith(f"{section} · ") and len(label) > len(f"{section} · "), (gid, label)


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


@pytest.mark.slow
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


@each_lab
@pytest.mark.grading
def test_solution_scores_100_percent(tmp_path, lab):
    submission = write_submission(learner_copy(lab.source), tmp_path, lab.name)  # markers gone, answers in place
    report = grade(submission, feedback_dir=tmp_path, **lab.grade_options())
    assert (report.score, report.max_score, report.passed) == (16, 16, True), report.failed
    assert Path(report.feedback_html).exists()


PARTIAL_ANSWERS = [  # (lab, answers left out, points, passed)
    (PROFILE, set(PROFILE.answers), 0, False),  # the release as handed out
    (PROFILE, {"lab_dominant"}, 13, True),  # 16 - 3 = 13 of 16: 81.25%
    (PROFILE, {"lab_dominant", "lab_correlate"}, 12, False),  # 16 - 3 - 1 = 12 of 16: 75%
    (PLAN, set(PLAN.answers), 0, False),  # the release as handed out
    (PLAN, {"plan_diagnose"}, 13, True),  # 16 - 3 = 13 of 16: 81.25%
    (PLAN, {"plan_diagnose", "plan_principle"}, 12, False),  # 16 - 3 - 1 = 12 of 16: 75%
]


@pytest.mark.parametrize(
    "lab,left_out,points,passed", PARTIAL_ANSWERS, ids=[f"{case[0].name}-{case[2]}" for case in PARTIAL_ANSWERS]
)
@pytest.mark.grading
def test_partial_answers_score_their_points(tmp_path, lab, left_out, points, passed):
    report = grade(lab.partial(tmp_path, lab.answers - left_out), feedback_dir=tmp_path, **lab.grade_options())
    assert report.max_score == 16
    assert report.score == points and report.passed is passed
    assert {f["cell"] for f in report.failed} == set().union(*(checks_after(lab.name, gid) for gid in left_out))


@each_lab
@pytest.mark.grading
def test_cli_grade_exits_1_for_a_failing_submission(tmp_path, lab):
    script = Path(sys.executable).with_name("gpucost-lab")
    failing = subprocess.run(
        [str(script), "grade", str(lab.partial(tmp_path, set())), *lab.cli_options(), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert failing.returncode == 1, failing.stderr
    report = json.loads(failing.stdout)
    assert (report["passed"], report["max_score"]) == (False, 16)


@each_lab
@pytest.mark.grading
def test_instructor_workflow_from_the_readme(tmp_path, lab):
    """generate_assignment, autograde, generate_feedback and export, as the README lists them, on a copy of
    the course."""
    course, rows = instructor_workflow(lab.name, {"alice": set(lab.answers), "bob": set()}, tmp_path)
    assert (course / "feedback" / "alice" / lab.name / f"{lab.name}.html").exists()
    assert {r["assignment"] for r in rows} == {lab.name}  # the gradebook holds only the lab graded
    assert {r["student_id"]: (float(r["score"]), float(r["max_score"]), r["passed"]) for r in rows} == {
        "alice": (16, 16, "True"),
        "bob": (0, 16, "False"),
    }


def test_source_root_is_found_from_the_course_folder_when_installed_elsewhere(tmp_path, monkeypatch):
    from gpucost_lab import grading

    course = course_copy(tmp_path)
    (course / "labs").mkdir()
    from gpucost_lab.grading import notebooks

    installed = tmp_path / "site-packages" / "gpucost_lab" / "grading" / "notebooks.py"
    monkeypatch.setattr(notebooks, "__file__", str(installed))
    monkeypatch.delenv("GPUCOST_LAB_SOURCE_ROOT", raising=False)
    monkeypatch.chdir(course / "labs")
    assert grading.default_source_root() == course / "solutions"
    monkeypatch.setenv("GPUCOST_LAB_SOURCE_ROOT", str(ROOT / "solutions"))
    assert grading.default_source_root() == ROOT / "solutions"


def test_the_assignment_is_recognised_from_the_submission():
    from gpucost_lab.grading import detect_assignment

    assert detect_assignment(ROOT / "solutions", nbformat.read(PROFILE.release, as_version=4)) == PROFILE.name
    assert detect_assignment(ROOT / "solutions", nbformat.v4.new_notebook()) is None
