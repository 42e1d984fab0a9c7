"""``gpucost-lab export-grades`` (gpucost_lab.cli.export) from a grades.csv of two learners, no gradebook needed: the
Moodle and Canvas files written out by hand from their documented columns (as in tests/grading/test_export.py),
what the command prints, and ``--canvas-id`` read as ASSIGNMENT=ID.
"""

import pytest

from gpucost_lab.cli.main import main

from .helpers import assert_one_line_naming, run_json

LAB = "profile_training_loop"
GRADES = (  # the columns `nbgrader export` writes with the course's plugin; ana 16/16 passed, bo 0/16 not
    "assignment,student_id,last_name,first_name,email,score,max_score,passed\n"
    f"{LAB},ana,Lima,Ana,ana@example.org,16,16,True\n"
    f"{LAB},bo,,,,0,16,False\n"
)


@pytest.fixture
def grades(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text(GRADES)
    return path


def test_the_moodle_file_is_printed_one_row_a_learner(grades, capsys):
    assert main(["export-grades", str(grades), "--format", "moodle"]) == 0
    assert capsys.readouterr().out == (
        f"First name,Last name,Username,Email address,{LAB},{LAB} passed\n"
        "Ana,Lima,ana,ana@example.org,16,Pass\n"
        ",,bo,,0,Fail\n"
    )


def test_the_canvas_file_is_written_and_fills_the_canvas_id(grades, tmp_path, capsys):
    out = tmp_path / "canvas.csv"
    answer = run_json(
        capsys, "export-grades", str(grades), "--format", "canvas", "-o", str(out), "--canvas-id", f"{LAB}= 4242 "
    )
    # the Points Possible row and two learners under the header
    assert answer == {"format": "canvas", "source": str(grades), "output": str(out), "rows": 3}
    assert out.read_bytes().decode() == (
        f"Student,ID,SIS User ID,SIS Login ID,Section,{LAB} (4242),{LAB} passed\r\n"
        "Points Possible,,,,,16,\r\n"
        '"Lima, Ana",,,ana,,16,complete\r\n'
        "bo,,,bo,,0,incomplete\r\n"
    )
    assert main(["export-grades", str(grades), "--format", "csv", "-o", str(tmp_path / "plain.csv")]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'plain.csv'}: csv import file, 2 rows under the header\n"


def test_a_canvas_id_of_twenty_digits_is_the_longest(grades, capsys):
    answer = run_json(capsys, "export-grades", str(grades), "--format", "canvas", "--canvas-id", f"{LAB}={'9' * 20}")
    assert answer["rows"] == 3
    for pair in (f"{LAB}={'9' * 21}", "=7", f"{LAB}7", f"{LAB}="):
        line = assert_one_line_naming(
            capsys, ["export-grades", str(grades), "--format", "canvas", "--canvas-id", pair], "--canvas-id"
        )
        assert line == (
            f"gpucost-lab export-grades: error: --canvas-id must be ASSIGNMENT=ID with an ID of 1-20 digits 0-9, "
            f"got {pair!r}"
        )
