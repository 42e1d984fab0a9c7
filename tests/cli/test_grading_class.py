"""``gpucost-lab grade-class`` (gpucost_lab.cli.grading): a small class of the real lab, graded in the sandbox.

Points (the lab's own headings, as in tests/course/test_lab_profile_grading.py): 1 instrument 3, 2 balance 2, 3 dominant
3 (two tests, 2 + 1), 4 correlate 1, 5 decide 2, 6 act 2, 7 price 2, 8 re-profile 1 = 16; 80% is 12.8. So, by hand:
every answer 16/16 passed; section 3's answer left as released 16 - 3 = 13, passed (81.25%); the release as handed out
0/16, not passed; malformed JSON is not graded (an error row), and the command then exits 1. No test here depends on how
fast the machine is.
"""

import json
import subprocess
import sys

import nbformat
import pytest

from gpucost_lab.cli.main import main
from gpucost_lab.grading.sandbox import unavailable_reason

from .helpers import LAB, MALFORMED, RELEASE, ROOT, SCRIPT

pytestmark = pytest.mark.grading


def answered(student: str, kind: str = "full"):
    """The release with the reference answers for ``student``: ``full``, or ``no_dominant`` (section 3's answer
    left as released), built as the class-grading benchmark builds its class."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import class_autograding

    return class_autograding._submission(kind, student)


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


@pytestmark_sandbox
def test_feedback_pages_are_written_when_asked(graded):
    _, feedback = graded
    assert sorted(p.name for p in feedback.iterdir()) == [
        f"{s}_{n}_feedback.html" for s, n in (("alice", LAB), ("bob", "bob"), ("dave", "dave"))
    ]
    assert "Score: 16.0 / 16.0" in (feedback / f"alice_{LAB}_feedback.html").read_text()


@pytestmark_sandbox
def test_no_progress_bar_when_stderr_is_not_a_terminal(graded):
    assert graded[0].stderr == ""


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
