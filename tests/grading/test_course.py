"""The course's grading configuration and the ways grading can fail, on the fixture lab of
tests/grading/test_autograde.py (tests/fixtures/grading/solutions/mini_lab, 10 points): the repository's
nbgrader_config.py, the pass mark, bad input (``ValueError``, one line and exit status 2), nbgrader's own failures
(``GradingError``, no grade given: one line and exit status 2 on the command line too), the ``nbgrader export``
plugin, and the README's keys.
"""

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpucost_lab import grading
from gpucost_lab.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "grading" / "solutions"
ASSIGNMENT = "mini_lab"
SOURCE_NB = SOURCE_ROOT / ASSIGNMENT / "mini_lab.ipynb"
VENV_BIN = str(Path(sys.executable).parent)
FIXTURE_ARGS = ["--assignment", ASSIGNMENT, "--source-root", str(SOURCE_ROOT)]


def grade_fixture(path, **kw):
    return grading.grade(path, assignment=ASSIGNMENT, source_root=SOURCE_ROOT, **kw)


def cli(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr()


# --------------------------------------------------------------------------------------- the configuration


def test_repository_nbgrader_config():
    from traitlets.config.loader import PyFileConfigLoader

    c = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert c.CourseDirectory.root == str(ROOT)
    assert (c.CourseDirectory.source_directory, c.CourseDirectory.release_directory) == ("solutions", "labs")
    assert c.CourseDirectory.course_id == "gpucost-lab"
    assert c.Execute.timeout == 30 and c.Execute.interrupt_on_timeout is True
    # the learner's code runs sandboxed and the tests run in nbgrader's process: no plain Execute step
    steps = c.Autograde.autograde_preprocessors
    assert steps[0] == "gpucost_lab.grading.execute.SandboxedExecute" and c.SandboxedExecute.timeout == 30
    assert not any(str(s).endswith(".Execute") for s in steps)
    assert c.OverwriteCells.add_missing_cells is True
    assert c.ExportApp.plugin_class == "gpucost_lab.grading.nbgrader_export.PassMarkExportPlugin"
    assert c.CourseDirectory.db_url == f"sqlite:///{ROOT / 'gradebook.db'}"
    ignored = (ROOT / ".gitignore").read_text().split()
    assert {"/gradebook.db", "/submitted/", "/autograded/", "/feedback/", "/grades.csv"} <= set(ignored)


def test_pass_mark_is_80_percent_inclusive_in_exact_arithmetic():
    assert grading.PASS_MARK_PERCENT == 80
    assert grading.meets_pass_mark(8, 10) and not grading.meets_pass_mark(7.99, 10)
    # 2.4 / 3 is 0.7999999999999999 in floating point, so `score / max_score >= 0.8` would fail 2.4 of 3 points
    assert 2.4 / 3 < 0.8 and grading.meets_pass_mark(2.4, 3)
    assert 0.1 + 0.7 < 0.8 and grading.meets_pass_mark(0.1 + 0.7, 1)  # scores summed from cells: rounded first
    assert sum([0.1] * 80) != 8 and grading.meets_pass_mark(sum([0.1] * 80), 10)  # 7.99999999999998 is 8.00
    assert not grading.meets_pass_mark(0, 0)
    assert grading.points_to_pass(10) == 8 and grading.points_to_pass(12) == 9.6 and grading.points_to_pass(3) == 2.4


# --------------------------------------------------------------------------------------- bad input


def write(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "make_input,problem",
    [
        (lambda d: d / "absent.ipynb", "no such file"),
        (lambda d: write(d / "answers.txt", "def f(): pass"), "not a Jupyter notebook"),
        (lambda d: write(d / "broken.ipynb", '{"cells": [{"cell_type": "code",'), "not valid notebook JSON"),
        (lambda d: write(d / "list.ipynb", "[1, 2]"), "not a notebook"),
        (
            lambda d: write(
                d / "other.ipynb",
                nbformat.writes(
                    nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('my own notebook')")])
                ),
            ),
            "none of the cells of assignment",
        ),
    ],
)
def test_unusable_input_is_one_line_and_exit_2(tmp_path, capsys, make_input, problem):
    path = make_input(tmp_path)
    code, out = cli(capsys, "grade", str(path), *FIXTURE_ARGS, "--json")
    assert code == 2 and out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and problem in lines[0] and str(path) in lines[0] and "Traceback" not in out.err
    with pytest.raises(ValueError, match=re.escape(str(path))):
        grade_fixture(path)


def test_bad_student_id_and_timeout_are_refused(tmp_path, capsys):
    shutil.copy(SOURCE_NB, tmp_path / "mini_lab.ipynb")
    for argv, flag in ([["--student", "../etc"], "--student"], [["--timeout", "0"], "--timeout"]):
        code, out = cli(capsys, "grade", str(tmp_path / "mini_lab.ipynb"), *FIXTURE_ARGS, *argv)
        assert code == 2 and out.err.count("\n") == 1 and out.err.startswith(f"gpucost-lab grade: error: {flag} ")


def test_self_check_does_nothing_inside_a_grading_run(monkeypatch, tmp_path):
    # the lab's last cell calls self_check(); while nbgrader (or a self-check) runs the lab it must not start again
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert grading.self_check(tmp_path / "never_read.ipynb") is None


# --------------------------------------------------------------------------------------- nbgrader's own failures


@pytest.mark.grading
def test_a_submission_nbgrader_cannot_autograde_is_a_grading_error_not_a_grade(tmp_path, monkeypatch, capsys):
    from nbgrader.converters import Autograde

    from gpucost_lab.grading import autograde

    real = autograde.run_converter

    def disk_full_at_autograde(config, converter_class, **traits):
        if converter_class is Autograde:  # nbgrader's own failure, whatever the submission holds
            return "OSError: [Errno 28] No space left on device"
        return real(config, converter_class, **traits)

    monkeypatch.setattr(autograde, "run_converter", disk_full_at_autograde)
    submission = shutil.copy(SOURCE_NB, tmp_path / "mini_lab.ipynb")  # every answer right: no grade all the same
    with pytest.raises(grading.GradingError, match="nbgrader could not autograde it: OSError: .*No space left"):
        grade_fixture(submission)
    assert not issubclass(grading.GradingError, ValueError)  # a failure of the grading, not bad input
    code, out = cli(capsys, "grade", str(submission), *FIXTURE_ARGS, "--json")
    assert code == 2 and out.out == "" and "Traceback" not in out.err
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and "could not autograde" in lines[0] and str(submission) in lines[0]


@pytest.mark.grading
def test_a_source_nbgrader_cannot_generate_is_a_grading_error(tmp_path, capsys):
    source_root = tmp_path / "solutions"
    shutil.copytree(SOURCE_ROOT, source_root)
    nb = nbformat.read(source_root / ASSIGNMENT / "mini_lab.ipynb", as_version=4)
    test_cell = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "q1_test")
    twin = nbformat.v4.new_code_cell(test_cell.source, metadata=dict(test_cell.metadata))
    nb.cells.append(twin)  # two cells with one grade id: nbgrader refuses to generate the assignment
    nbformat.write(nb, source_root / ASSIGNMENT / "mini_lab.ipynb")
    submission = shutil.copy(SOURCE_NB, tmp_path / "submission.ipynb")
    with pytest.raises(grading.GradingError, match="nbgrader could not generate assignment 'mini_lab'"):
        grading.grade(submission, assignment=ASSIGNMENT, source_root=source_root)
    code, out = cli(capsys, "grade", str(submission), "--assignment", ASSIGNMENT, "--source-root", str(source_root))
    assert code == 2 and len(out.err.strip().splitlines()) == 1 and "could not generate" in out.err


# --------------------------------------------------------------------------------------- export plugin


@pytest.mark.grading
@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's own session use, when adding submissions
def test_export_plugin_adds_passed_column(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ.get("PATH", ""))  # nbgrader runs `alembic`
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    # tests worth 3 + 2 + 2 + 2 = 9 points and a written answer worth 1, graded by hand: 10 points, 8 to pass
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "gpucost-lab") as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(ASSIGNMENT, ASSIGNMENT)
        for name, points in [("q1_test", 3), ("q2_test", 2), ("q3_test", 2), ("q4_test", 2)]:
            gb.add_grade_cell(name, ASSIGNMENT, ASSIGNMENT, max_score=points, cell_type="code")
        gb.add_grade_cell("q5_written", ASSIGNMENT, ASSIGNMENT, max_score=1, cell_type="markdown")
        scores = {
            "alice": {"q1_test": 3, "q2_test": 2, "q3_test": 2, "q4_test": 0, "q5_written": 1},  # 8: True
            "bob": {"q1_test": 3, "q2_test": 2, "q3_test": 2, "q4_test": 0, "q5_written": 0},  # 7: False
            "carol": {"q1_test": 3, "q2_test": 2, "q3_test": 2, "q4_test": 2, "q5_written": None},
        }  # pending
        for student, grades in scores.items():
            gb.add_student(student)
            gb.add_submission(ASSIGNMENT, student)
            for cell, score in grades.items():
                grade = gb.find_grade(cell, ASSIGNMENT, ASSIGNMENT, student)
                if cell.endswith("_written"):
                    grade.manual_score, grade.needs_manual_grade = score, score is None
                else:
                    grade.auto_score, grade.needs_manual_grade = score, False
            gb.db.commit()
        gb.add_student("dave")  # submitted nothing: 0 points, False
    env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(
        [str(Path(VENV_BIN) / "nbgrader"), "export", "--to", "grades.csv"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "PassMarkExportPlugin" in proc.stderr  # chosen by the repository's nbgrader_config.py
    with open(tmp_path / "grades.csv", newline="") as fh:
        rows = {r["student_id"]: r for r in csv.DictReader(fh)}
    assert list(rows["alice"])[-1] == "passed"
    assert {s: (float(r["score"]), float(r["max_score"]), r["passed"]) for s, r in rows.items()} == {
        "alice": (8, 10, "True"),
        "bob": (7, 10, "False"),
        "carol": (9, 10, "pending"),
        "dave": (0, 10, "False"),
    }


def test_readme_documents_the_grading_keys():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## For instructors", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([a-z_]+)`", section)) | {
        k for group in re.findall(r"`\{([a-z_, ]+)\}`", section) for k in group.replace(" ", "").split(",")
    }
    grade_keys = set(grading.GradeReport(1, 2, 50, False).to_dict()) | {"cell", "points", "max_points", "message"}
    check = grading.SelfCheckReport("x.ipynb", 1, 2, 0, 2, 50, 1.6, False)
    assert grade_keys - documented == set()
    assert set(check.to_dict()) - documented == set()
    assert "make labs" in section and "hidden tests may still fail" in section
