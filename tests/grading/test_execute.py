"""Tests of gpucost_lab.grading.execute: nbgrader's steps the course puts in place of its own, against notebooks and
settings made here. A copied cell gives up its grade id; the sandboxed step hands one submission to the run (here a
stand-in that records what it is given) with the limits, learner and setup cells its settings say.
"""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from traitlets.config import Config

from gpucost_lab.grading import execute
from gpucost_lab.grading.sandbox import Limits


def _graded(source, grade_id, **flags):
    return new_code_cell(source, metadata={"nbgrader": {"grade_id": grade_id, "schema_version": 3, **flags}})


def test_a_copied_cell_loses_its_grade_id_and_the_first_keeps_it():
    answer = _graded("def f():\n    return 1", "q1_answer", solution=True, grade=False)
    copied = nbformat.from_dict(answer)  # JupyterLab's copy keeps the metadata, with a new cell id
    copied["id"] = "copy-of-q1-answer"
    emptied = new_code_cell("x = 1", metadata={"nbgrader": {}})  # what nbgrader's own DeduplicateIds leaves
    nb = new_notebook(cells=[answer, copied, emptied, _graded("assert f() == 1", "q1_test", grade=True, points=1)])
    nb.cells.append(new_code_cell("print('mine')"))
    execute.DropDuplicateIds().preprocess(nb, {})
    assert ["nbgrader" in c.metadata for c in nb.cells] == [True, False, False, True, False]
    kept = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata]
    assert kept == ["q1_answer", "q1_test"]
    assert [c.source for c in nb.cells][:2] == ["def f():\n    return 1"] * 2  # the copy's code is kept, ungraded


@pytest.fixture
def handed(monkeypatch):
    """What :class:`~.execute.SandboxedExecute` hands to the run of a submission: (arguments, keywords) per call."""
    calls = []
    monkeypatch.setattr(execute, "run_submission", lambda *args, **kw: calls.append((args, kw)))
    return calls


def _resources(path, **nbgrader):
    return {"metadata": {"path": str(path)}, "nbgrader": {"notebook": "lab", **nbgrader}}


def test_the_step_hands_the_submission_over_with_its_limits(tmp_path, handed):
    nb = new_notebook()
    step = execute.SandboxedExecute(timeout=7, total_timeout=120, memory_mb=2048)
    assert step.preprocess(nb, _resources(tmp_path, student="ada")) == (nb, _resources(tmp_path, student="ada"))
    ((args, kw),) = handed
    assert args[0] is nb and args[1] == tmp_path and args[2] is None  # no assignment: no source folder
    # the notebook's total time is also its CPU seconds; the rest of the limits are the defaults
    assert args[3] == Limits(memory_mb=2048, cpu_s=120)
    assert args[4:7] == (7, 120, False)
    assert kw == {"learner": "ada", "setup": None}


@pytest.mark.parametrize(
    "settings, learner",
    [
        ({}, "ada"),  # each student's numbers derive from their id
        ({"per_learner_variants": False}, ""),  # the self-study lab for all
        ({"learner": "bo"}, "bo"),  # set explicitly: whoever the student is
        ({"learner": "", "per_learner_variants": True}, ""),
    ],
)
def test_whose_numbers_the_lab_runs_with(tmp_path, handed, settings, learner):
    execute.SandboxedExecute(**settings).preprocess(new_notebook(), _resources(tmp_path, student="ada"))
    assert handed[0][1]["learner"] == learner


def test_the_setup_cells_come_from_the_instructor_s_source(tmp_path, handed):
    source = tmp_path / "course" / "source" / "lab1"
    source.mkdir(parents=True)
    lab = new_notebook(
        cells=[
            _graded("PRICE_PER_HOUR_USD = 2.0", "setup", locked=True, grade=False, solution=False),
            _graded("def cost(h):\n    return 0", "q1_answer", locked=False, grade=False, solution=True),
            _graded("assert cost(1) == PRICE_PER_HOUR_USD", "q1_test", locked=True, grade=True, solution=False),
            _graded("RATE = 3", "setup2", locked=True, grade=False, solution=False),
        ]
    )
    nbformat.write(lab, source / "lab.ipynb")
    c = Config()
    c.CourseDirectory.root = str(tmp_path / "course")
    c.CourseDirectory.source_directory = "source"
    execute.SandboxedExecute(config=c).preprocess(new_notebook(), _resources(tmp_path, assignment="lab1"))
    ((args, kw),) = handed
    assert args[2].resolve() == source.resolve()  # the checks import the lab's helper files from here
    assert kw["setup"] == ["PRICE_PER_HOUR_USD = 2.0", "RATE = 3"]  # the locked code that is neither test nor answer
