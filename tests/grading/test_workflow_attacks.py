"""A hostile learner against the plain nbgrader workflow, class grading, and a kernel the learner breaks.

tests/grading/test_attacks.py grades one notebook at a time with ``grading.grade``. Here the same attacks meet the
workflow an instructor runs by hand (README "For instructors"): a course folder with its own nbgrader_config.py,
a copy of the repository's, `nbgrader generate_assignment`, the learners' notebooks in
submitted/<student>/mini_lab/, one `nbgrader autograde` for the whole class and one gradebook, which every
learner's code would like to reach. Then ``grade_class`` on a folder of honest and hostile submissions.

The fixture lab (tests/fixtures/grading/solutions/mini_lab) has five questions worth 3 + 2 + 2 + 2 + 1 = 10 points
(``POINTS``). Every expected score below is the sum of the points of the questions a learner *really* answered,
worked out by hand from those points: an attack must add nothing to it, and must take nothing from anyone else.
"""

import copy
import csv
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from gpucost_lab import grading
from gpucost_lab.grading.classes import grade_class
from grading.helpers import grade_shared, needs_sandbox
from grading.test_attacks import ATTACKS, POINTS, RIGHT, SOURCE_ROOT, grade_id, notebook

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "mini_lab"
VENV_BIN = Path(sys.executable).parent
TIMEOUT_S = 10  # per cell; a correct answer of the mini lab takes milliseconds
FULL = 3 + 2 + 2 + 2 + 1
TESTS = {f"{q}_test": points for q, points in POINTS.items()}  # the graded cells and their points
JUNK = 3000  # trivial code cells a learner adds: three times the grader's cap on cells run (run.MAX_CELLS)

pytestmark = [pytest.mark.grading, needs_sandbox]

# What the gradebook writer runs on every gradebook it opens: everybody's points to 0, then 100 points of extra
# credit and of manual score on every row (test_the_gradebook_writer_s_sql_works_on_a_gradebook_it_can_reach: it
# does that to a gradebook it can open).
GRADEBOOK_SQL = (
    "update grade set auto_score = 0, manual_score = 0; update grade set extra_credit = 100, manual_score = 100;"
)


def gradebook_writer(course: Path) -> str:
    """An answer cell that opens every gradebook.db it can think of and rewrites it, then empties every file it can
    reach in the course and around its own folder (the lab's source and release included)."""
    return (
        f"import glob, os, sqlite3\n"
        f"COURSE = {str(course)!r}\n"
        f"PLACES = ['../../../gradebook.db', '../../gradebook.db', '../gradebook.db', 'gradebook.db',\n"
        f"          os.path.join(COURSE, 'gradebook.db'), os.path.expanduser('~/gradebook.db')]\n"
        f"PLACES += glob.glob(COURSE + '/**/*.db', recursive=True) + glob.glob('../**/*.db', recursive=True)\n"
        f"PLACES += glob.glob('/tmp/**/gradebook.db', recursive=True)\n"
        f"for db in PLACES:\n"
        f"    try:\n"
        f"        con = sqlite3.connect(db)\n"
        f"        con.executescript({GRADEBOOK_SQL!r})\n"
        f"        con.commit()\n"
        f"    except sqlite3.Error:\n"
        f"        pass\n"
        f"for p in glob.glob(COURSE + '/**/*', recursive=True) + glob.glob('../**/*', recursive=True):\n"
        f"    try:\n"
        f"        open(p, 'w').write('')\n"
        f"    except OSError:\n"
        f"        pass\n"
    )


def files(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def learner_copy(release: Path, dest: Path, answers: dict, *, before: str = "") -> nbformat.NotebookNode:
    """The released lab (fetched by a learner) with ``answers`` (question -> source) in its answer cells, the rest
    left as released; ``before`` prepended to Q1's answer cell. Written, with the release's helper file, to
    ``dest``/mini_lab.ipynb; the notebook is returned."""
    nb = nbformat.read(release / "mini_lab.ipynb", as_version=4)
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid.endswith("_answer"):
            q = gid.split("_")[0]
            if q in answers:
                cell.source = answers[q]
            if q == "q1" and before:
                cell.source = before + "\n\n" + cell.source
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(release / "lab_helpers.py", dest)
    nbformat.write(nb, dest / "mini_lab.ipynb")
    return nb


def junk_cells(n: int) -> list:
    return [nbformat.v4.new_code_cell(f"junk_{i} = {i}") for i in range(n)]


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=str(VENV_BIN) + os.pathsep + os.environ.get("PATH", ""))  # it runs `alembic`
    return subprocess.run([str(VENV_BIN / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True)


# --------------------------------------------------------------------------------------- the plain nbgrader workflow

# The class graded together, in one gradebook. nbgrader autogrades submissions in the order of their folders'
# names, so the a_ learner is graded before every hostile one (whose code could then change a score already in the
# gradebook) and the z_ learner after all of them (in a course they might have damaged).
HONEST = ("a_honest", "z_honest")
PADDED = "d_padded"  # right answers, JUNK cells between Q5's answer and its test, and JUNK more at the end
PADDED_EARLY = "d_padded_early"  # right answers, JUNK cells before Q5's answer, which is then past the cap
COPIED = "c_copied_answer_cell"  # right answers, Q2's answer cell twice: graded after the others, on its own
EXPECTED = {
    "a_honest": FULL,
    "b_gradebook_writer": 0,  # a blank lab
    "b_input_transformer": 0,  # a blank lab
    "b_stealthy_transformer": 0,  # a blank lab
    PADDED: FULL,  # every answer runs before the cap; Q5's test, past it, is still graded
    PADDED_EARLY: FULL - POINTS["q5"],  # Q5's answer is past the cap and never runs: 3 + 2 + 2 + 2 = 9
    "z_honest": FULL,
}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A course like the repository's, its lab the fixture lab: the class above submitted and autograded with
    `nbgrader autograde mini_lab`, then the copied-cell learner with `--student`."""
    course = tmp_path_factory.mktemp("course")
    shutil.copytree(SOURCE_ROOT, course / "solutions")
    config = (ROOT / "nbgrader_config.py").read_text()
    (course / "nbgrader_config.py").write_text(
        config + f"\n# this test's course: a short limit per cell\nc.SandboxedExecute.timeout = {TIMEOUT_S}\n"
        f"c.Execute.timeout = {TIMEOUT_S}\n"
    )
    generated = nbgrader(course, "generate_assignment", ASSIGNMENT)
    assert generated.returncode == 0, generated.stdout + generated.stderr
    release = course / "labs" / ASSIGNMENT

    def submit(student, answers, **kw):
        return learner_copy(release, course / "submitted" / student / ASSIGNMENT, answers, **kw)

    def resubmit(student, nb):
        nbformat.write(nb, course / "submitted" / student / ASSIGNMENT / "mini_lab.ipynb")

    for student in HONEST:
        submit(student, RIGHT)
    submit("b_gradebook_writer", {}, before=gradebook_writer(course))
    submit("b_input_transformer", {}, before=ATTACKS["input transformer"])
    submit("b_stealthy_transformer", {}, before=ATTACKS["stealthy transformer"])
    for student, where in ((PADDED, "q5_test"), (PADDED_EARLY, "q5_answer")):
        nb = submit(student, RIGHT)
        index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == where)
        nb.cells[index:index] = junk_cells(JUNK)
        if student == PADDED:
            nb.cells += junk_cells(JUNK)
        resubmit(student, nb)

    before = {"solutions": files(course / "solutions"), "labs": files(course / "labs")}
    autograded = nbgrader(course, "autograde", ASSIGNMENT)

    nb = submit(COPIED, RIGHT)
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "q2_answer")
    twin = copy.deepcopy(nb.cells[index])  # JupyterLab's copy keeps the nbgrader metadata, with a new cell id
    twin["id"] = "copy-of-q2-answer"
    nb.cells.insert(index + 1, twin)
    resubmit(COPIED, nb)
    copied = nbgrader(course, "autograde", ASSIGNMENT, "--student", COPIED)
    return SimpleNamespace(course=course, autograded=autograded, before=before, copied=copied)


def gradebook_rows(course: Path) -> dict:
    """{student: (score, {graded cell: score})} for each submission in the course's gradebook (nbgrader's API)."""
    from nbgrader.api import Gradebook, MissingEntry

    rows = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "gpucost-lab") as gb:
        for student in gb.students:
            try:
                sub = gb.find_submission(ASSIGNMENT, student.id)
            except MissingEntry:
                continue
            rows[student.id] = (float(sub.score), {g.name: float(g.score) for n in sub.notebooks for g in n.grades})
    return rows


def autograded_nb(course: Path, student: str):
    return nbformat.read(course / "autograded" / student / ASSIGNMENT / "mini_lab.ipynb", as_version=4)


def not_run(nb) -> list:
    return [
        c
        for c in nb.cells
        if c.cell_type == "code" and any("[not run when graded]" in out.get("text", "") for out in c.get("outputs", []))
    ]


def test_the_class_is_autograded_in_one_run(plain):
    assert plain.autograded.returncode == 0, plain.autograded.stderr[-5000:]
    assert sorted(p.name for p in (plain.course / "autograded").iterdir() if p.name != COPIED) == sorted(EXPECTED)


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_learner_scores_what_their_answers_earn(plain, student):
    assert gradebook_rows(plain.course)[student][0] == EXPECTED[student]


def test_honest_learners_keep_every_point_of_every_cell_around_a_gradebook_writer(plain):
    rows = gradebook_rows(plain.course)
    for student in HONEST:
        assert rows[student] == (FULL, TESTS)
    assert rows["b_gradebook_writer"] == (0, dict.fromkeys(TESTS, 0))


def test_no_extra_credit_or_manual_score_anywhere_in_the_gradebook(plain):
    with sqlite3.connect(plain.course / "gradebook.db") as db:
        # autograding writes auto scores only: the writer's 100s are nowhere
        assert db.execute("select max(extra_credit), max(manual_score) from grade").fetchone() in (
            (None, None),
            (0, None),
        )


def test_the_lab_s_source_and_release_are_unchanged(plain):
    assert files(plain.course / "solutions") == plain.before["solutions"]
    assert files(plain.course / "labs") == plain.before["labs"]


def test_the_gradebook_writer_s_sql_works_on_a_gradebook_it_can_reach(plain, tmp_path):
    # the attack is no dud: run on a copy of the class's gradebook (the learner's code never reaches the real one),
    # its statements give an honest learner 100 manual points plus 100 of extra credit on each of the 5 tests
    from nbgrader.api import Gradebook

    shutil.copy(plain.course / "gradebook.db", tmp_path / "gradebook.db")
    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        db.executescript(GRADEBOOK_SQL)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", "gpucost-lab") as gb:
        assert float(gb.find_submission(ASSIGNMENT, "a_honest").score) == 5 * (100 + 100)


def test_the_export_has_the_pass_mark_of_each_learner(plain):
    exported = nbgrader(plain.course, "export", "--to", "grades.csv")
    assert exported.returncode == 0, exported.stderr[-3000:]
    with open(plain.course / "grades.csv", newline="") as fh:
        rows = {r["student_id"]: (float(r["score"]), r["passed"]) for r in csv.DictReader(fh)}
    # 80% of 10 is 8: the full marks pass, 9 passes, 0 does not
    assert {s: rows[s] for s in EXPECTED} == {
        "a_honest": (10, "True"),
        "b_gradebook_writer": (0, "False"),
        "b_input_transformer": (0, "False"),
        "b_stealthy_transformer": (0, "False"),
        PADDED: (10, "True"),
        PADDED_EARLY: (9, "True"),
        "z_honest": (10, "True"),
    }


def test_cells_past_the_cap_are_not_run_but_every_test_is_graded(plain):
    padded, early = autograded_nb(plain.course, PADDED), autograded_nb(plain.course, PADDED_EARLY)
    source_cells = len(nbformat.read(SOURCE_ROOT / ASSIGNMENT / "mini_lab.ipynb", as_version=4).cells)
    assert (len(padded.cells), len(early.cells)) == (source_cells + 2 * JUNK, source_cells + JUNK)
    # the padded notebook: every answer ran, only junk was skipped; the early one: Q5's answer was skipped too
    assert not_run(padded) and {grade_id(c) for c in not_run(padded)} == {""}
    assert {grade_id(c) for c in not_run(early)} == {"", "q5_answer"}


# nbgrader 0.9's own DeduplicateIds leaves the copy as nbgrader: {}, on which OverwriteCells (add_missing_cells)
# raises KeyError 'grade_id': the course's DropDuplicateIds removes the copy's metadata instead
def test_a_copied_answer_cell_still_scores_full_marks(plain):
    assert plain.copied.returncode == 0, plain.copied.stderr[-3000:]
    assert gradebook_rows(plain.course)[COPIED] == (FULL, TESTS)
    assert [grade_id(c) for c in autograded_nb(plain.course, COPIED).cells].count("q2_answer") == 1


# --------------------------------------------------------------------------------------- grade_class

# score and pass (8 of 10): full marks, and two blank labs
CLASS = {"honest": (FULL, True), "gradebook_writer": (0, False), "stealthy_transformer": (0, False)}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    paths = {
        "honest": notebook(folder / "honest", RIGHT),
        "gradebook_writer": notebook(folder / "gradebook_writer", {}, before=gradebook_writer(folder)),
        "stealthy_transformer": notebook(folder / "stealthy_transformer", {}, before=ATTACKS["stealthy transformer"]),
    }
    before = files(folder)
    frame = grade_class(folder, workers=2, assignment=ASSIGNMENT, source_root=SOURCE_ROOT, timeout_s=TIMEOUT_S)
    return SimpleNamespace(folder=folder, paths=paths, before=before, frame=frame)


def test_grade_class_scores_honest_and_hostile_learners_by_their_answers(graded_class):
    rows = graded_class.frame.set_index("student")
    assert {s: (r["score"], bool(r["passed"])) for s, r in rows.iterrows()} == CLASS
    assert list(rows["max_score"]) == [FULL] * len(CLASS) and list(rows["error"]) == [None] * len(CLASS)


def test_grade_class_leaves_the_submissions_as_they_were(graded_class):
    assert files(graded_class.folder) == graded_class.before


@pytest.mark.parametrize("student", sorted(CLASS))
def test_grade_gives_each_learner_of_the_class_the_same_score(graded_class, student):
    report = grade_shared(
        graded_class.paths[student], assignment=ASSIGNMENT, source_root=SOURCE_ROOT, timeout_s=TIMEOUT_S
    )
    assert (report.score, report.passed) == CLASS[student]


# --------------------------------------------------------------------------------------- a kernel the learner breaks

# Replacing a builtin the kernel itself uses leaves it unable to reply to anything: the cell's execute request, the
# interrupt at the time limit, and every request after. The grader must notice once, not wait on every later cell.
KERNEL_BREAKER = "import builtins\nbuiltins.isinstance = lambda *a, **k: False"
# A loop that ignores the interrupt sent at the time limit: the kernel is alive but never free again.
UNINTERRUPTIBLE = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"


def test_a_learner_who_breaks_their_own_kernel_scores_0_and_is_told_it_stopped(tmp_path):
    path = notebook(tmp_path / "sub", {}, before=KERNEL_BREAKER)  # a blank lab: 0 whatever the kernel does
    report = grading.grade(
        path, assignment=ASSIGNMENT, source_root=SOURCE_ROOT, timeout_s=TIMEOUT_S, course_dir=tmp_path / "course"
    )
    assert (report.score, report.passed) == (0, False)
    failed = {f["cell"]: f["message"] for f in report.failed}
    assert set(failed) == set(TESTS)
    assert all("the kernel had stopped answering" in message for message in failed.values()), failed
    assert "CellTimeoutError" in failed["q1_test"] and "q1_answer" in failed["q1_test"]
    # the kernel was given up on after Q1's answer: no later cell of the learner's was sent to it
    assert [grade_id(c) for c in not_run(autograded_nb(tmp_path / "course", "student"))] == [
        "q2_answer",
        "q3_answer",
        "q4_answer",
        "q5_answer",
        "",
    ]  # "": the lab's closing self-check cell


def test_a_loop_that_ignores_the_interrupt_costs_only_the_rest_of_the_notebook(tmp_path):
    # Q1 to Q4 answered right before it: 3 + 2 + 2 + 2 = 9; Q5's function is never defined
    answers = {**RIGHT, "q5": UNINTERRUPTIBLE + "\n\n" + RIGHT["q5"]}
    report = grade_shared(
        notebook(tmp_path / "sub", answers), assignment=ASSIGNMENT, source_root=SOURCE_ROOT, timeout_s=TIMEOUT_S
    )
    assert (report.score, report.passed) == (FULL - POINTS["q5"], True)
    assert [f["cell"] for f in report.failed] == ["q5_test"]
    assert "the kernel had stopped answering" in report.failed[0]["message"]
