"""Tests of gpucost_lab.grading.nbgrader_export: ``nbgrader export`` with the repository's nbgrader_config.py adds the
``passed`` column, on a gradebook built with nbgrader's API whose verdicts are worked out by hand at 80% of 10 points.
"""

import csv
import os
import shutil
import subprocess

import pytest

from .helpers import ASSIGNMENT, ROOT, VENV_BIN

pytestmark = pytest.mark.grading


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's own session use, when adding submissions
def test_export_plugin_adds_passed_column(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", str(VENV_BIN) + os.pathsep + os.environ.get("PATH", ""))  # nbgrader runs `alembic`
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
    env = dict(os.environ, PATH=str(VENV_BIN) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run(
        [str(VENV_BIN / "nbgrader"), "export", "--to", "grades.csv"],
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
