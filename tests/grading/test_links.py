"""Submissions are plain files in their folder (gpucost_lab.grading.links): a symbolic link, a hard link, a FIFO or
another special file in a submission is refused wherever grading reads one.

The attacks are a learner's: a notebook that is a link to the lab's solution (graded, it would score 16/16 and its
feedback page would show the solution), and, through nbgrader's exchange, files of her inbound submission replaced by
links to the course's files after ``nbgrader submit`` (collected with the instructor's rights, they would be
autograded beside her notebook and released back to her with her feedback).
"""

import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from labtools import ROOT, answered_release, source_path, write_submission

from gpucost_lab import InputError
from gpucost_lab.cli.main import main
from gpucost_lab.grading import links
from gpucost_lab.grading.classes import find_submissions, grade_class
from gpucost_lab.grading.sandbox import unavailable_reason

LAB = "profile_training_loop"
SOLUTION = source_path(LAB)  # solutions/profile_training_loop/profile_training_loop.ipynb: answers, hidden tests
VENV_BIN = Path(sys.executable).parent
needs_sandbox = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox: {unavailable_reason()}")


def _listing(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.lstat().st_mtime_ns, p.lstat().st_size) for p in folder.rglob("*")}


# ------------------------------------------------------------------------------------------- links.py


@pytest.fixture
def submission(tmp_path):
    """A submission folder with one plain file and, beside it, each kind of name that points elsewhere."""
    outside = tmp_path / "course"
    outside.mkdir()
    (outside / "gradebook.db").write_text("every learner's id and score", encoding="utf-8")
    sub = tmp_path / "sub"
    (sub / "inner").mkdir(parents=True)
    (sub / "answers.txt").write_text("my own work", encoding="utf-8")
    (sub / "data.csv").symlink_to(outside / "gradebook.db")  # a symlink to a file outside
    (sub / "inner" / "escape").symlink_to("../../course/gradebook.db")  # a relative one, deeper, pointing outside
    os.link(outside / "gradebook.db", sub / "copy.db")  # the same file under a second name
    os.mkfifo(sub / "pipe")
    return sub


def test_every_link_and_special_file_is_found_and_plain_files_are_not(submission):
    found = {str(r.path.relative_to(submission)): r.why for r in links.offending(submission)}
    gradebook = str(submission.parent / "course" / "gradebook.db")
    assert found == {
        "copy.db": "a hard link (one file with 2 names; another may lie outside the submission)",
        "data.csv": f"a symbolic link to {gradebook!r} (outside the submission)",
        "inner/escape": "a symbolic link to '../../course/gradebook.db' (outside the submission)",
        "pipe": "a FIFO (named pipe)",
    }
    assert links.refusal(submission / "answers.txt") is None and links.refusal(submission / "inner") is None
    assert links.refusal(submission / "data.csv").path == submission / "data.csv"
    assert links.offending(submission / "inner") == [
        links.Refused(submission / "inner" / "escape", found["inner/escape"])
    ]


def test_a_link_within_the_submission_and_a_linked_folder_are_refused_too(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "a.txt").write_text("a", encoding="utf-8")
    (sub / "b.txt").symlink_to("a.txt")
    assert [(r.path.name, r.why) for r in links.offending(sub)] == [("b.txt", "a symbolic link to 'a.txt'")]
    (tmp_path / "alias").symlink_to(sub)
    assert [r.why for r in links.offending(tmp_path / "alias")] == [
        f"a symbolic link to {str(sub)!r} (outside the submission)"  # the folder is the link: not entered
    ]


def test_only_plain_files_are_copied_and_read(submission, tmp_path):
    dest = tmp_path / "copy"
    refused = links.copy_plain(submission, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == ["answers.txt"]
    assert (dest / "answers.txt").read_text(encoding="utf-8") == "my own work"
    assert sorted(r.path.name for r in refused) == ["copy.db", "data.csv", "escape", "pipe"]
    assert links.read_plain(submission / "answers.txt", "notebook") == b"my own work"
    for name in ("data.csv", "copy.db", "pipe"):  # the FIFO is refused, not waited on
        with pytest.raises(InputError, match=f"^notebook '{submission / name}' is a ") as err:
            links.read_plain(submission / name, "notebook")
        assert err.value.field == "notebook"


def test_the_sandbox_gets_only_the_plain_files_and_the_log_names_the_others(submission, tmp_path, caplog):
    from gpucost_lab.grading.run import copy_submission  # what nbgrader's autograde copies into the sandbox

    dest = tmp_path / "sandbox"
    with caplog.at_level(logging.WARNING):
        copy_submission(submission, dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == ["answers.txt"]
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 4
    for name, kind in (("copy.db", "hard link"), ("data.csv", "symbolic link"), ("escape", "symbolic link")):
        assert any(name in line and kind in line for line in logged), logged
    assert any("pipe" in line and "FIFO" in line for line in logged), logged


# ------------------------------------------------------------------------------------------- gpucost-lab grade


@needs_sandbox
@pytest.mark.parametrize("kind", ["symlink", "hard link", "fifo"])
def test_grade_refuses_a_notebook_that_is_a_link_in_one_line_and_writes_nothing(tmp_path, capsys, kind):
    folder = tmp_path / "mallory"
    folder.mkdir()
    notebook = folder / f"{LAB}.ipynb"
    if kind == "symlink":
        notebook.symlink_to(SOLUTION)
    elif kind == "hard link":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "solution.ipynb").write_bytes(SOLUTION.read_bytes())
        os.link(elsewhere / "solution.ipynb", notebook)
    else:
        os.mkfifo(notebook)
    before = (_listing(tmp_path), _listing(SOLUTION.parent))
    code = main(["grade", str(notebook), "--json"])
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    lines = out.err.splitlines()
    assert len(lines) == 1, out.err
    assert lines[0].startswith(f"gpucost-lab grade: error: notebook '{notebook}' is a ")
    said = {"symlink": f"a symbolic link to '{SOLUTION}'", "hard link": "a hard link", "fifo": "a FIFO"}[kind]
    assert said in lines[0]
    assert (_listing(tmp_path), _listing(SOLUTION.parent)) == before  # no feedback page, here or beside the solution


# ------------------------------------------------------------------------------------------- grade-class


def test_find_submissions_gives_each_link_its_own_error_row(tmp_path):
    honest = write_submission(nbformat.read(SOLUTION, as_version=4), tmp_path / "alice", LAB)
    (tmp_path / "bob").symlink_to(tmp_path / "alice")  # a student folder that is a link
    (tmp_path / "carol.ipynb").symlink_to(SOLUTION)  # a student notebook that is a link
    write_submission(nbformat.read(SOLUTION, as_version=4), tmp_path / "dave", LAB)
    os.mkfifo(tmp_path / "dave" / "pipe")  # a plain notebook, and a FIFO beside it
    rows = {student: (notebook, problem) for student, notebook, problem in find_submissions(tmp_path)}
    assert list(rows) == ["alice", "bob", "carol", "dave"]
    assert rows["alice"] == (honest, None)
    for student, path, why in (
        ("bob", tmp_path / "bob", f"a symbolic link to '{tmp_path / 'alice'}'"),
        ("carol", tmp_path / "carol.ipynb", f"a symbolic link to '{SOLUTION}'"),
        ("dave", tmp_path / "dave" / "pipe", "a FIFO (named pipe)"),
    ):
        notebook, problem = rows[student]
        assert notebook is None
        assert problem.startswith(f"submissions_dir: {path} is {why}"), problem


@pytest.mark.grading
@needs_sandbox
def test_grade_class_grades_the_honest_learner_and_not_the_link_to_the_solution(tmp_path):
    class_dir = tmp_path / "class"
    write_submission(answered_release(LAB), class_dir / "alice", LAB)
    (class_dir / "mallory").mkdir()
    (class_dir / "mallory" / f"{LAB}.ipynb").symlink_to(SOLUTION)
    feedback = tmp_path / "feedback"
    rows = grade_class(class_dir, workers=1, feedback_dir=feedback).set_index("student")
    assert list(rows.index) == ["alice", "mallory"]
    alice, mallory = rows.loc["alice"], rows.loc["mallory"]
    assert (alice["score"], alice["max_score"], alice["percent"], bool(alice["passed"])) == (16, 16, 100, True)
    assert alice["error"] is None
    assert math.isnan(mallory["score"]) and not mallory["passed"]  # not graded: no score
    link = class_dir / "mallory" / f"{LAB}.ipynb"
    assert mallory["error"].startswith(f"submissions_dir: {link} is a symbolic link to '{SOLUTION}'")
    assert sorted(p.name for p in feedback.iterdir()) == [f"alice_{LAB}_feedback.html"]


# ------------------------------------------------------------------------------------------- nbgrader collect

STAND_IN = "stand-in gradebook: every learner's id and score"


def _nbgrader(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(VENV_BIN / "nbgrader"), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.mark.grading
def test_collect_leaves_out_a_submission_whose_files_became_links_to_the_course(tmp_path):
    """release, submit (alice, mallory, trudy), then mallory's and trudy's inbound files replaced by a symbolic and a
    hard link to a course file, then collect with the course's nbgrader_config.py (the plugin it sets) and, as the
    control, with nbgrader's own collect, which copies the course file."""
    exchange, course = tmp_path / "exchange", tmp_path / "course"
    exchange.mkdir()
    exchange.chmod(0o1777)  # everyone writes into it, as nbgrader's exchange requires
    (course / "labs" / "ps1").mkdir(parents=True)
    (course / "nbgrader_config.py").write_bytes((ROOT / "nbgrader_config.py").read_bytes())  # its root: course/
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), course / "labs/ps1/ps1.ipynb")
    (course / "private").mkdir()
    secret = course / "private" / "gradebook.db"
    secret.write_text(STAND_IN, encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),  # no nbgrader settings but the course's
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),
    }
    root = f"--Exchange.root={exchange}"
    _nbgrader(course, env, "release_assignment", "ps1", root)
    for learner in ("alice", "mallory", "trudy"):
        home = tmp_path / learner
        (home / "ps1").mkdir(parents=True)
        (home / "ps1" / "ps1.ipynb").write_bytes((course / "labs/ps1/ps1.ipynb").read_bytes())
        (home / "ps1" / "notes.txt").write_text(f"{learner}'s notes", encoding="utf-8")
        _nbgrader(
            home,
            env,
            *("submit", "ps1", "--course=gpucost-lab", root, f"--CourseDirectory.student_id={learner}"),
            f"--Exchange.cache={home / 'cache'}",
        )
    inbound = {p.name.split("+")[0]: p for p in (exchange / "gpucost-lab" / "inbound").iterdir()}
    assert sorted(inbound) == ["alice", "mallory", "trudy"]
    (inbound["mallory"] / "notes.txt").unlink()
    (inbound["mallory"] / "notes.txt").symlink_to(secret)
    (inbound["trudy"] / "notes.txt").unlink()
    os.link(secret, inbound["trudy"] / "notes.txt")

    # the control: nbgrader's own collect copies the course's file through both links
    _nbgrader(
        course,
        env,
        *("collect", "ps1", root, "--CourseDirectory.submitted_directory=control"),
        "--ExchangeFactory.collect=nbgrader.exchange.default.collect.ExchangeCollect",
    )
    for learner in ("mallory", "trudy"):
        assert (course / "control" / learner / "ps1" / "notes.txt").read_text(encoding="utf-8") == STAND_IN

    proc = _nbgrader(course, env, "collect", "ps1", root)
    submitted = course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["alice"]
    assert (submitted / "alice" / "ps1" / "notes.txt").read_text(encoding="utf-8") == "alice's notes"
    assert sorted(p.name for p in (submitted / "alice" / "ps1").iterdir()) == sorted(
        p.name for p in inbound["alice"].iterdir()
    )
    assert not any(STAND_IN in p.read_text(encoding="utf-8") for p in submitted.rglob("*") if p.is_file())
    errors = [line for line in proc.stderr.splitlines() if "Not collecting" in line]
    assert len(errors) == 2, proc.stderr
    mallory, trudy = sorted(errors, key=lambda line: "trudy" in line)
    assert "the submission of mallory" in mallory and f"notes.txt is a symbolic link to '{secret}'" in mallory
    assert "the submission of trudy" in trudy and "notes.txt is a hard link" in trudy


@needs_sandbox
@pytest.mark.grading
def test_plain_autograde_drops_a_link_already_in_submitted_before_nbgrader_copies_it(tmp_path):
    """A link that reached submitted/ another way than collect (copied by hand, uploaded): the pre-convert hook
    removes it, naming it, before nbgrader copies the folder into autograded/ and the sandbox."""
    from labtools import course_copy

    course = course_copy(tmp_path)
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    nbgrader = str(VENV_BIN / "nbgrader")
    subprocess.run([nbgrader, "generate_assignment", LAB, "--force"], cwd=course, env=env, check=True, timeout=300)
    folder = course / "submitted" / "ada" / LAB
    write_submission(answered_release(LAB), folder, LAB)
    (folder / "notes.txt").symlink_to(course / "gradebook.db")
    done = subprocess.run(
        [nbgrader, "autograde", LAB], cwd=course, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "notes.txt is a symbolic link" in done.stderr
    graded = course / "autograded" / "ada" / LAB
    assert (graded / f"{LAB}.ipynb").is_file() and not (graded / "notes.txt").exists()
