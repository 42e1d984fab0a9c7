"""The real labs, as files: each release hides its solutions and hidden tests, has graded cells enough for 80% to
mean something and every answer listed, and each check says its verdict in one line; the grader finds the course's
sources from the course folder and recognises the assignment of a submission.

The tests every lab shares run once per lab (``LABS`` in labtools.py). Grading the labs is in
test_lab_profile_grading.py, profile_training_loop's checks run on honest and slipped work in
test_lab_profile_checks_run.py; the capstone's own tests are in test_lab_optimization_plan.py.
"""

import ast

import nbformat
from labtools import PROFILE, ROOT, cells, course_copy, meta

from gpucost_lab.grading.checks import HIDDEN_MARK

from .helpers import _check_cells_by_section, each_lab

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


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
