"""``gpucost-lab grade-class`` (gpucost_lab.cli.grading): one line and exit 2 for bad input; a small class of the
real lab, graded.

Points (the lab's own headings, as in tests/course/test_lab_profile.py): 1 instrument 3, 2 balance 2, 3 dominant 3
(two tests, 2 + 1), 4 correlate 1, 5 decide 2, 6 act 2, 7 price 2, 8 re-profile 1 = 16; 80% is 12.8. So, by hand:
every answer 16/16 passed; section 3's answer left as released 16 - 3 = 13, passed (81.25%); the release as
handed out 0/16, not passed; malformed JSON is not graded (an error row), and the command then exits 1.
No test here depends on how fast the machine is.
"""

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpucost_lab.cli.main import main
from gpucost_lab.grading.sandbox import unavailable_reason

from .helpers import SCRIPT

ROOT = Path(__file__).resolve().parents[2]
LAB = "profile_training_loop"
RELEASE = ROOT / "labs" / LAB / f"{LAB}.ipynb"
MALFORMED = '{"cells": [ {"cell_type": "code", "source": "x = '


def answered(student: str, kind: str = "full"):
    """The release with the reference answers for ``student``: ``full``, or ``no_dominant`` (section 3's answer
    left as released), built as the class-grading benchmark builds its class."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import class_autograding

    return class_autograding._submission(kind, student)


# ------------------------------------------------------------------------------------------- bad input


def _bad_inputs(tmp_path: Path) -> list:
    (tmp_path / "empty").mkdir()
    (tmp_path / "a_file.ipynb").write_text(MALFORMED)
    (tmp_path / "class" / "alice").mkdir(parents=True)
    nbformat.write(nbformat.read(RELEASE, as_version=4), tmp_path / "class" / "alice" / f"{LAB}.ipynb")
    cls = str(tmp_path / "class")
    return [
        ([str(tmp_path / "missing")], "SUBMITTED_DIR", "does not exist"),
        ([str(tmp_path / "a_file.ipynb")], "SUBMITTED_DIR", "is not a directory"),
        ([str(tmp_path / "empty")], "SUBMITTED_DIR", "holds no submission"),
        ([cls, "--workers", "0"], "--workers", "must be a whole number >= 1, got 0"),
        ([cls, "--workers", "-3"], "--workers", "got -3"),
        ([cls, "--workers", "two"], "--workers", "invalid int value: 'two'"),
        ([cls, "--timeout", "0"], "--timeout", "from 1 to 3600, got 0"),
        ([cls, "--feedback", str(tmp_path / "a_file.ipynb")], "--feedback", "is not a folder"),
        ([cls, "--assignment", "no_such_lab"], "--assignment", "allowed: optimization_plan, profile_training_loop"),
        ([cls, "--source-root", str(tmp_path / "missing")], "--source-root", "is not a directory"),
    ]


def test_bad_input_is_one_line_naming_the_field_and_exit_2(tmp_path, capsys):
    for argv, field, said in _bad_inputs(tmp_path):
        try:
            code = main(["grade-class", *argv, "--json"])
        except SystemExit as exit_:  # argparse's own errors (a flag that is not a number)
            code = exit_.code
        captured = capsys.readouterr()
        assert code == 2, argv
        assert captured.out == ""
        lines = captured.err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("gpucost-lab grade-class: error: "), captured.err
        assert field in lines[0] and said in lines[0], lines[0]
        assert "Traceback" not in captured.err


@pytest.mark.slow  # a fresh process that imports torch, or a long computation: `make test` runs it
def test_the_installed_command_gives_one_line_and_exit_2(tmp_path):
    proc = subprocess.run(
        [str(SCRIPT), "grade-class", str(tmp_path / "missing"), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "SUBMITTED_DIR" in proc.stderr and "does not exist" in proc.stderr


# ------------------------------------------------------------------------------------------- a small class

pytestmark_sandbox = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox: {unavailable_reason()}")

EXPECTED = {  # student: (score, max score, percent, passed); None: not graded
    "alice": (16, 16, 100.0, True),
    "bob": (0, 16, 0.0, False),
    "carol": None,
    "dave": (13, 16, 81.25, True),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    class_dir = tmp_path_factory.mktemp("class")
    (class_dir / "alice").mkdir()
    nbformat.write(answered("alice"), class_dir / "alice" / f"{LAB}.ipynb")  # <dir>/<student>/<notebook>
    nbformat.write(nbformat.read(RELEASE, as_version=4), class_dir / "bob.ipynb")  # <dir>/<student>.ipynb
    (class_dir / "carol.ipynb").write_text(MALFORMED, encoding="utf-8")
    nbformat.write(answered("dave", "no_dominant"), class_dir / "dave.ipynb")
    feedback = tmp_path_factory.mktemp("feedback") / "pages"  # made by the command
    proc = subprocess.run(
        [str(SCRIPT), "grade-class", str(class_dir), "--workers", "2", "--json", "--feedback", str(feedback)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return proc, feedback


@pytest.mark.grading
@pytestmark_sandbox
def test_each_learner_gets_the_verdict_derived_by_hand(graded):
    proc, _ = graded
    assert proc.returncode == 1, proc.stderr[-3000:]  # carol's notebook could not be graded
    out = json.loads(proc.stdout)
    rows = {r["student"]: r for r in out["students"]}
    assert list(rows) == sorted(EXPECTED)
    for student, expected in EXPECTED.items():
        row = rows[student]
        assert set(row) == {"student", "score", "max_score", "percent", "passed", "error"}
        if expected is None:
            assert row["score"] is None and row["passed"] is False and "not valid notebook JSON" in row["error"]
        else:
            assert (row["score"], row["max_score"], row["percent"], row["passed"]) == expected, row
            assert row["error"] is None


@pytest.mark.grading
@pytestmark_sandbox
def test_the_summary_counts_the_rows(graded):
    out = json.loads(graded[0].stdout)
    summary = out["summary"]
    assert {k: summary[k] for k in ("submissions", "graded", "passed", "not_passed", "errors")} == {
        "submissions": 4,
        "graded": 3,
        "passed": 2,
        "not_passed": 1,
        "errors": 1,
    }
    assert summary["pass_mark_percent"] == 80 and summary["workers"] == 2
    assert summary["mean_percent"] == round((100 + 0 + 81.25) / 3, 2)


@pytest.mark.grading
@pytestmark_sandbox
def test_feedback_pages_are_written_when_asked(graded):
    _, feedback = graded
    assert sorted(p.name for p in feedback.iterdir()) == [
        f"{s}_{n}_feedback.html" for s, n in (("alice", LAB), ("bob", "bob"), ("dave", "dave"))
    ]
    assert "Score: 16.0 / 16.0" in (feedback / f"alice_{LAB}_feedback.html").read_text()


@pytest.mark.grading
@pytestmark_sandbox
def test_no_progress_bar_when_stderr_is_not_a_terminal(graded):
    assert graded[0].stderr == ""


@pytest.mark.grading
@pytestmark_sandbox
def test_the_table_names_every_learner_and_the_totals(tmp_path, capsys):
    (tmp_path / "erin").mkdir()
    (tmp_path / "erin" / "lab.ipynb").write_text(MALFORMED, encoding="utf-8")
    (tmp_path / "frank").mkdir()  # a folder with no notebook
    assert main(["grade-class", str(tmp_path), "--workers", "1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["student", "score", "percent", "verdict"]
    assert lines[1].startswith("erin ") and "NOT GRADED: ValueError:" in lines[1]
    assert lines[2].startswith("frank ") and "expected one notebook, found 0" in lines[2]
    assert lines[3].startswith("2 submissions: 0 passed, 0 not passed, 2 not graded (pass mark 80%)")
