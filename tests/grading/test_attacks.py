"""A hostile learner against the grader (issue 12): what each attack earns, on the fixture lab (10 points).

The fixture lab (tests/fixtures/grading/solutions/mini_lab) has five questions worth 3 + 2 + 2 + 2 + 1 points; each
answer is a function, and Q4's test has a hidden part. A learner's notebook here is the source notebook with its
answer cells replaced (test and setup cells are restored from the gradebook by nbgrader, whatever the learner
sends). Every expected score is the sum of the points of the questions the learner *really* answered right, read
from the fixture's metadata by hand: an attack must add nothing to it.
"""

import copy
import json
import shutil
import sqlite3
from pathlib import Path

import nbformat
import pytest

from gpucost_lab import grading
from gpucost_lab.cli.main import main

from .helpers import grade_shared, needs_sandbox

SOURCE_ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "grading" / "solutions"
SOURCE_NB = SOURCE_ROOT / "mini_lab" / "mini_lab.ipynb"
RIGHT = {
    "q1": "def step_time_s(total_s, steps):\n    return total_s / steps",
    "q2": "def samples_per_s(batch, step_time_s):\n    return batch / step_time_s",
    "q3": "def cost_per_sample_usd(price_per_hour_usd, samples_per_s):\n"
    "    return price_per_hour_usd / 3600 / samples_per_s",
    "q4": "def to_gb(n_bytes):\n    return n_bytes / 1e9",
    "q5": "def relative_cost(throughput_gain, steps_change):\n    return (1 + steps_change) / (1 + throughput_gain)",
}
POINTS = {"q1": 3, "q2": 2, "q3": 2, "q4": 2, "q5": 1}
BLANK = "raise NotImplementedError()"

pytestmark = [pytest.mark.grading, needs_sandbox]


def grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or ""


def notebook(folder: Path, answers: dict, *, before: str = "", name: str = "mini_lab.ipynb") -> Path:
    """The lab with ``answers`` (question -> source, BLANK when absent); ``before`` prepended to Q1's answer cell."""
    nb = nbformat.read(SOURCE_NB, as_version=4)
    for cell in nb.cells:
        gid = grade_id(cell)
        if gid.endswith("_answer"):
            q = gid.split("_")[0]
            cell.source = answers.get(q, BLANK)
            if q == "q1" and before:
                cell.source = before + "\n\n" + cell.source
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SOURCE_ROOT / "mini_lab" / "lab_helpers.py", folder)
    path = folder / name
    nbformat.write(nb, path)
    return path


def score(path: Path, **kw) -> float:
    kw.setdefault("timeout_s", 10)  # a kernel broken by an attack fails each cell at this limit: keep it short
    kw.setdefault("source_root", SOURCE_ROOT)
    return grade_shared(path, assignment="mini_lab", **kw).score


WRONG = {q: src.replace("return ", "return 1.5 * ") for q, src in RIGHT.items()}  # every answer off by half

# Each attack, as a learner would put it in an answer cell; none may change a score.
ATTACKS = {
    # every later cell, the tests included, becomes `pass` in the kernel
    "input transformer": 'get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\\n"])',
    # the same, only while graded: invisible to self-check and to anyone rerunning the notebook
    "stealthy transformer": 'import os\nif os.environ.get("NBGRADER_EXECUTION"):\n'
    '    get_ipython().input_transformers_cleanup.append(lambda lines: ["pass\\n"])',
    "patched builtins": "import builtins, math\nbuiltins.abs = lambda x: 0\nmath.isclose = lambda *a, **k: True",
    "patched helper module": "import lab_helpers\nlab_helpers.close_enough = lambda *a, **k: True",
    "sys.modules injection": "import sys, types\nfake = types.ModuleType('lab_helpers')\n"
    "fake.close_enough = lambda *a, **k: True\nsys.modules['lab_helpers'] = fake",
    # rewrite every copy of the tests' helper module the kernel can reach, the grader's included if it could
    "rewritten helper file": "import glob\nfor p in glob.glob('/tmp/**/lab_helpers.py', recursive=True) + "
    "glob.glob('../**/lab_helpers.py', recursive=True):\n"
    "    try:\n        open(p, 'w').write('def close_enough(*a, **k):\\n    return True\\n')\n"
    "    except OSError:\n        pass",
    "always-equal results": "class Always(float):\n    def __eq__(self, other): return True\n"
    "    def __le__(self, other): return True\n    def __ge__(self, other): return True\n"
    "    def __lt__(self, other): return True\n    def __gt__(self, other): return True\n"
    "    def __sub__(self, other): return Always(0)\n    def __abs__(self): return Always(0)\n"
    "import math\nmath.isclose = lambda *a, **k: True",
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attack_on_a_blank_lab_scores_0(tmp_path, attack):
    assert score(notebook(tmp_path, {}, before=ATTACKS[attack])) == 0


@pytest.mark.parametrize(
    "attack", ["patched builtins", "patched helper module", "sys.modules injection", "rewritten helper file"]
)
def test_an_attack_with_wrong_answers_scores_what_the_wrong_answers_earn(tmp_path, attack):
    # Q1 right, the rest wrong: 3 points without the attack, 3 with it
    answers = {**WRONG, "q1": RIGHT["q1"]}
    assert score(notebook(tmp_path / "plain", answers)) == 3
    assert score(notebook(tmp_path / "attack", answers, before=ATTACKS[attack])) == 3


def test_answers_that_return_always_equal_objects_score_0_with_the_type_named(tmp_path):
    answers = {
        q: "class Always(float):\n    def __eq__(self, other): return True\n\n"
        + src.replace("return ", "return Always(0) if True else ")
        for q, src in RIGHT.items()
    }
    report = grade_shared(notebook(tmp_path, answers), assignment="mini_lab", source_root=SOURCE_ROOT)
    assert report.score == 0
    assert all("Always" in f["message"] and "answers must be int, float" in f["message"] for f in report.failed)


def test_the_learner_s_code_sees_no_course_no_gradebook_and_no_network(tmp_path):
    # Q1's answer is right only where it cannot see the course folder, the gradebook or the source lab; Q2's only
    # where it cannot open a network connection; Q3's only where it is not root. Each tries to do harm as well.
    course = tmp_path / "course"
    probe = (
        f"import os, sqlite3\n"
        f"PLACES = ({str(course)!r}, {str(SOURCE_ROOT)!r}, {str(course / 'gradebook.db')!r}, "
        f"'../../../gradebook.db', '../../../../solutions')\n"
        f"SEEN = [p for p in PLACES if os.path.exists(p)]\n"
        f"for db in [p for p in SEEN if p.endswith('.db')]:\n"
        f"    c = sqlite3.connect(db); c.execute('update grade set extra_credit = 100'); c.commit()\n"
        f"def step_time_s(total_s, steps):\n    return total_s / steps if not SEEN else -1\n"
    )
    network = (
        "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); ONLINE = True\n"
        "except OSError:\n    ONLINE = False\n"
        "def samples_per_s(batch, step_time_s):\n    return batch / step_time_s if not ONLINE else -1\n"
    )
    not_root = (
        "import os\nROOT = os.getuid() == 0\n"
        "def cost_per_sample_usd(price_per_hour_usd, samples_per_s):\n"
        "    return price_per_hour_usd / 3600 / samples_per_s if not ROOT else -1\n"
    )
    path = notebook(tmp_path / "sub", {**RIGHT, "q1": probe, "q2": network, "q3": not_root})
    report = grading.grade(path, assignment="mini_lab", source_root=SOURCE_ROOT, course_dir=course)
    assert (report.score, report.passed) == (10, True)
    with sqlite3.connect(course / "gradebook.db") as db:
        assert db.execute("select max(extra_credit) from grade").fetchone()[0] in (None, 0)


def test_an_honest_score_and_the_source_are_unchanged_after_a_hostile_notebook(tmp_path):
    # one course, two learners graded in it: the hostile one tries to rewrite every notebook and gradebook it finds
    solutions = tmp_path / "solutions"
    shutil.copytree(SOURCE_ROOT, solutions)
    before = {p: p.read_bytes() for p in solutions.rglob("*") if p.is_file()}
    hostile = (
        f"import glob\nfor p in glob.glob({str(tmp_path)!r} + '/**/*', recursive=True) + glob.glob('../**/*', "
        f"recursive=True):\n"
        "    try:\n        open(p, 'w').write('')\n    except OSError:\n        pass\n"
    )
    assert score(notebook(tmp_path / "honest", RIGHT), source_root=solutions) == 10
    assert score(notebook(tmp_path / "hostile", {}, before=hostile), source_root=solutions) == 0
    assert {p: p.read_bytes() for p in solutions.rglob("*") if p.is_file()} == before
    assert score(notebook(tmp_path / "honest2", RIGHT), source_root=solutions) == 10


def test_a_copied_answer_cell_still_scores_full_marks(tmp_path):
    # JupyterLab's copy keeps the cell's nbgrader metadata: two cells now carry grade id q2_answer
    path = notebook(tmp_path, RIGHT)
    nb = nbformat.read(path, as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "q2_answer")
    twin = copy.deepcopy(nb.cells[index])
    twin["id"] = "copy-of-q2-answer"
    nb.cells.insert(index + 1, twin)
    nbformat.write(nb, path)
    report = grade_shared(path, assignment="mini_lab", source_root=SOURCE_ROOT)
    assert (report.score, report.passed) == (10, True)
    assert report.notes == ("cell q2_answer appears more than once: the first is graded, the copy is ignored",)


def test_huge_output_is_cut_and_the_feedback_stays_small(tmp_path):
    flood = "print('x' * 10_000_000)"
    path = notebook(tmp_path, RIGHT, before=flood)
    report = grade_shared(path, assignment="mini_lab", source_root=SOURCE_ROOT)
    assert report.score == 10
    assert Path(report.feedback_html).stat().st_size < 2_000_000  # the 10 MB line is not in it


def test_an_unwritable_feedback_folder_is_a_note_and_the_exit_code_follows_the_verdict(tmp_path, capsys):
    path = notebook(tmp_path / "sub", RIGHT)
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the feedback folder should be")
    code = main(
        [
            "grade",
            str(path),
            "--assignment",
            "mini_lab",
            "--source-root",
            str(SOURCE_ROOT),
            "--feedback-dir",
            str(blocked),
            "--json",
        ]
    )
    out = capsys.readouterr()
    assert code == 0 and "Traceback" not in out.err
    report = json.loads(out.out)
    assert (report["score"], report["passed"], report["feedback_html"]) == (10, True, None)
    assert any("feedback" in note and str(blocked) in note for note in report["notes"])


def test_grading_leaves_no_temporary_folder(tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = notebook(tmp_path / "sub", RIGHT, before="import tempfile\nKEEP = tempfile.mkdtemp()")
    # a course of its own, in a temporary folder: the one that must be gone
    assert grading.grade(path, assignment="mini_lab", source_root=SOURCE_ROOT, timeout_s=10).score == 10
    assert list(scratch.iterdir()) == []
