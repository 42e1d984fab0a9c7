"""Tests of gpucost_lab.grading.export (and `gpucost-lab export-grades`): a gradebook in Canvas's and Moodle's import
formats, and as a plain CSV, against the formats' documented headers and grades worked out by hand.

The gradebook is built here with nbgrader's API: the lab, 16 points (an autograded cell of 14 and a manually graded
one of 2), and five learners, their scores by hand:

- ana (Ana Lima): 14 + 2 = 16, passed (80% of 16 = 12.8);  max: 11 + 2 = 13, passed;  zoe: 12 + 0 = 12, not passed;
- ivy: 14 and the manual cell not graded yet: 14 so far, pending;  bo: no submission, 0, not passed.

The formats' headers are the documented ones: Canvas's gradebook CSV starts with Student, ID, SIS User ID, SIS Login ID,
Section, and has a Points Possible row under the header (what Canvas's own export writes and its import reads);
Moodle's CSV import maps its identity columns (Moodle's export names First name, Last name, Email address; the import
maps Username to `username`) and takes one column per grade item.
"""

import csv
import io
import os
import sys
from pathlib import Path

import pytest

from gpucost_lab.cli import main as cli
from gpucost_lab.grading.export import export_grades, read_grades

pytestmark = pytest.mark.grading

LAB = "profile_training_loop"
CANVAS = (
    "Student,ID,SIS User ID,SIS Login ID,Section,profile_training_loop,profile_training_loop passed\r\n"
    "Points Possible,,,,,16,\r\n"
    '"Lima, Ana",,,ana,,16,complete\r\n'
    "bo,,,bo,,0,incomplete\r\n"
    "ivy,,,ivy,,14,\r\n"
    "max,,,max,,13,complete\r\n"
    "zoe,,,zoe,,12,incomplete\r\n"
)
MOODLE = (
    "First name,Last name,Username,Email address,profile_training_loop,profile_training_loop passed\r\n"
    "Ana,Lima,ana,ana@example.org,16,Pass\r\n"
    ",,bo,,0,Fail\r\n"
    ",,ivy,,14,\r\n"
    ",,max,,13,Pass\r\n"
    ",,zoe,,12,Fail\r\n"
)
PLAIN = (
    "student_id,last_name,first_name,email,assignment,score,max_score,passed\r\n"
    "ana,Lima,Ana,ana@example.org,profile_training_loop,16,16,True\r\n"
    "bo,,,,profile_training_loop,0,16,False\r\n"
    "ivy,,,,profile_training_loop,14,16,pending\r\n"
    "max,,,,profile_training_loop,13,16,True\r\n"
    "zoe,,,,profile_training_loop,12,16,False\r\n"
)


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    from nbgrader.api import Gradebook

    path = tmp_path_factory.mktemp("course") / "gradebook.db"
    # nbgrader runs `alembic` by name when it creates a gradebook
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
        _fill(path, Gradebook)
    return path


def _fill(path, Gradebook) -> None:
    with Gradebook(f"sqlite:///{path}", "gpucost-lab") as gb:
        gb.add_assignment(LAB)
        gb.add_notebook(LAB, LAB)
        gb.add_grade_cell("auto", LAB, LAB, max_score=14, cell_type="code")
        gb.add_grade_cell("manual", LAB, LAB, max_score=2, cell_type="markdown")
        gb.add_student("ana", first_name="Ana", last_name="Lima", email="ana@example.org")
        for student in ("bo", "ivy", "max", "zoe"):
            gb.add_student(student)
        for student, auto, manual in (("ana", 14, 2), ("max", 11, 2), ("zoe", 12, 0), ("ivy", 14, None)):
            gb.add_submission(LAB, student)
            auto_grade = gb.find_grade("auto", LAB, LAB, student)
            auto_grade.auto_score, auto_grade.needs_manual_grade = auto, False
            manual_grade = gb.find_grade("manual", LAB, LAB, student)
            manual_grade.manual_score, manual_grade.needs_manual_grade = manual, manual is None
        gb.db.commit()


@pytest.fixture
def main():
    """``gpucost-lab``, export-grades among its commands."""
    assert "export-grades" in cli.COMMANDS
    return cli.main


@pytest.mark.parametrize("fmt, expected", [("canvas", CANVAS), ("moodle", MOODLE), ("csv", PLAIN)])
def test_each_format_from_the_gradebook(gradebook, fmt, expected):
    assert export_grades(gradebook, fmt) == expected


def test_canvas_header_is_the_documented_one_and_fills_an_existing_assignment(gradebook):
    rows = list(csv.reader(io.StringIO(export_grades(gradebook, "canvas", canvas_ids={LAB: "4242"}))))
    assert rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert rows[0][5:] == [f"{LAB} (4242)", f"{LAB} passed"]
    assert rows[1][0] == "Points Possible"


def test_the_gradebook_and_its_nbgrader_export_csv_give_the_same_grades(gradebook, tmp_path):
    from nbgrader.api import Gradebook

    from gpucost_lab.grading.nbgrader_export import PassMarkExportPlugin

    grades_csv = tmp_path / "grades.csv"
    with Gradebook(f"sqlite:///{gradebook}", "gpucost-lab") as gb:
        PassMarkExportPlugin(to=str(grades_csv)).export(gb)
    assert read_grades(grades_csv) == read_grades(gradebook)
    assert export_grades(grades_csv, "moodle") == MOODLE


def test_the_command_writes_the_file(main, gradebook, tmp_path, capsys):
    out = tmp_path / "canvas.csv"
    assert main(["export-grades", str(gradebook), "--format", "canvas", "-o", str(out)]) == 0
    assert out.read_bytes().decode() == CANVAS
    assert "6 rows" in capsys.readouterr().out  # the Points Possible row and five learners


def test_the_command_prints_the_csv(main, gradebook, capsys):
    assert main(["export-grades", str(gradebook), "--format", "csv"]) == 0
    assert capsys.readouterr().out == PLAIN.replace("\r\n", "\n")


@pytest.mark.parametrize(
    "args, flag, value",
    [
        (["--format", "blackboard"], "--format", "'blackboard'"),
        (
            ["--format", "canvas", "--canvas-id", "profile_training_loop=abc"],
            "--canvas-id",
            "'profile_training_loop=abc'",
        ),
        (["--format", "moodle", "--canvas-id", "profile_training_loop=7"], "--canvas-id", "'moodle'"),
        (["--format", "canvas", "--canvas-id", "other_lab=7"], "--canvas-id", "'other_lab'"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag_and_value(main, gradebook, capsys, args, flag, value):
    assert main(["export-grades", str(gradebook), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and value in err, err


def test_a_missing_gradebook_or_a_csv_without_passed_is_one_line(main, tmp_path, capsys):
    assert main(["export-grades", str(tmp_path / "nope.db"), "--format", "canvas"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "GRADEBOOK" in err and "nope.db" in err, err
    plain = tmp_path / "grades.csv"  # nbgrader's own export: no passed column
    plain.write_text(
        "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,"
        "late_submission_penalty,score,max_score\nprofile_training_loop,,,ana,,,,16,0,16,16\n"
    )
    assert main(["export-grades", str(plain), "--format", "moodle"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'passed'" in err, err
    assert not list(tmp_path.glob("*.csv"))[1:]  # nothing written
