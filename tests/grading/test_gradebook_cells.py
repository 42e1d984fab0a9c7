"""Tests of gpucost_lab.grading.gradebook_cells: the gradebook's locked cells are what runs (issue 25), on a lab made
here whose points are set by hand. A learner who edits the notebook's JSON (the setup cell's metadata stripped, a
solution flag on a test cell, a grade id the gradebook does not know, a cell pasted from another lab) earns exactly
what their answers earn, and the notebook is always graded. (An nbformat 3 submission refused by name:
tests/grading/test_gradebook_cells_nbformat3.py.)

The lab: the setup defines the price, Q1's test checks the learner's cost against that price, Q2's a plain sum.
Points: Q1 3, Q2 1, so a right answer to both is 4 of 4 and a wrong Q1 alone is 1 of 4.
"""

from __future__ import annotations

import copy

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from .helpers import grade_shared, needs_sandbox

pytestmark = pytest.mark.grading

LAB = "price_lab"


def _meta(grade_id, **flags):
    return {"nbgrader": {"grade_id": grade_id, "schema_version": 3, "task": False, **flags}}


def _source():
    return new_notebook(
        cells=[
            new_code_cell(
                "PRICE_PER_HOUR_USD = 2.0", metadata=_meta("setup", grade=False, solution=False, locked=True)
            ),
            new_code_cell(
                "def cost_usd(hours):\n    ### BEGIN SOLUTION\n    return hours * PRICE_PER_HOUR_USD\n"
                "    ### END SOLUTION",
                metadata=_meta("q1_answer", grade=False, solution=True, locked=False),
            ),
            new_code_cell(
                "assert cost_usd(3) == 3 * PRICE_PER_HOUR_USD",
                metadata=_meta("q1_test", grade=True, solution=False, locked=True, points=3),
            ),
            new_code_cell(
                "def total(a, b):\n    ### BEGIN SOLUTION\n    return a + b\n    ### END SOLUTION",
                metadata=_meta("q2_answer", grade=False, solution=True, locked=False),
            ),
            new_code_cell(
                "assert total(2, 3) == 5", metadata=_meta("q2_test", grade=True, solution=False, locked=True, points=1)
            ),
        ]
    )


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("solutions")
    (root / LAB).mkdir()
    nbformat.write(_source(), root / LAB / f"{LAB}.ipynb")
    return root


def _submission(tmp_path, edit):
    nb = _source()
    for cell in nb.cells:
        cell.source = "\n".join(line for line in cell.source.splitlines() if "### " not in line)
    edit(nb)
    path = tmp_path / "sub" / f"{LAB}.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    return path


def _grade(root, path):
    return grade_shared(path, assignment=LAB, source_root=root)


@needs_sandbox
def test_an_honest_submission_scores_full_marks(tmp_path, root):
    report = _grade(root, _submission(tmp_path, lambda nb: None))
    assert (report.score, report.max_score) == (4, 4)


def _strip_setup_and_price_it_at_zero(nb):
    del nb.cells[0].metadata["nbgrader"]
    nb.cells[0].source = "PRICE_PER_HOUR_USD = 0.0"
    nb.cells[1].source = "def cost_usd(hours):\n    return 0.0"  # right only at the forged price


@needs_sandbox
def test_a_stripped_setup_cell_does_not_set_the_price_the_checks_use(tmp_path, root):
    report = _grade(root, _submission(tmp_path, _strip_setup_and_price_it_at_zero))
    assert (report.score, report.max_score) == (1, 4), report.failed


def _solution_flag_on_a_test(nb):
    nb.cells[2].metadata["nbgrader"]["solution"] = True
    nb.cells[2].source = "pass"


def _unknown_grade_id(nb):
    cell = copy.deepcopy(nb.cells[2])
    cell.metadata["nbgrader"]["grade_id"] = "extra_credit_test"
    cell.metadata["nbgrader"]["points"] = 40
    cell.source = "pass"
    nb.cells.append(cell)


def _pasted_from_another_lab(nb):
    nb.cells.insert(
        2, new_code_cell("x = 1", metadata=_meta("profile_q1_answer", grade=False, solution=True, locked=False))
    )


@needs_sandbox
@pytest.mark.parametrize(
    "edit, note",
    [
        (_solution_flag_on_a_test, "q1_test: its solution set back"),
        (_unknown_grade_id, "'extra_credit_test' is not a cell of this lab"),
        (_pasted_from_another_lab, "'profile_q1_answer' is not a cell of this lab"),
    ],
    ids=["solution-flag-on-a-test", "unknown-grade-id", "pasted-cell"],
)
def test_forged_metadata_is_ignored_with_a_note_and_the_answers_earn_their_points(tmp_path, root, edit, note):
    report = _grade(root, _submission(tmp_path, edit))
    assert (report.score, report.max_score) == (4, 4), report.failed
    assert any(note in n for n in report.notes), report.notes
