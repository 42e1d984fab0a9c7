"""Every chapter executes top to bottom: with the reference answers, as committed, and with wrong answers.

With the reference answers from ``chapter_answers.py`` in its answer cells, no cell may fail. As
committed (placeholders in the answer cells) and with wrong answers (each reference answer's value
perturbed), the only cells that may fail are the graded checkpoint cells, and each of them must
fail: a checkpoint that passes unanswered or wrong grades nothing.

Each chapter executes once per kind of run (tests/chapter_runs.py); tests/course/test_checkpoint_display.py and
tests/course/test_chapters_under_load.py read the same answered run.
"""

import nbformat
import pytest
from chapter_answers import ANSWERS
from chapter_runs import CHAPTERS
from labtools import is_check, meta


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_answer_cell_has_a_reference_answer_and_every_reference_answer_a_cell(path):
    nb = nbformat.read(path, as_version=4)
    solution_ids = {meta(c)["grade_id"] for c in nb.cells if meta(c).get("solution")}
    assert solution_ids == set(ANSWERS.get(path.name, {}))


@pytest.mark.parametrize("path", [p for p in CHAPTERS if ANSWERS.get(p.name)], ids=lambda p: p.name)
def test_an_answered_chapter_ends_in_at_least_three_graded_checkpoints(path):
    # chapter 00 has one, on the set-up: it shows how a checkpoint works before any chapter teaches a figure
    least = 1 if path.name.startswith("00_") else 3
    assert sum(is_check(c) for c in nbformat.read(path, as_version=4).cells) >= least


@pytest.mark.notebook
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_runs_clean_with_reference_answers(path, chapter_run):
    run = chapter_run(path, "answered")
    assert run.errors() == [], run.error_text()


@pytest.mark.notebook
@pytest.mark.parametrize("mode", ["as committed", "spoiled"], ids=["as committed", "wrong answers"])
@pytest.mark.parametrize("path", [p for p in CHAPTERS if ANSWERS.get(p.name)], ids=lambda p: p.name)
def test_checkpoints_fail_unanswered_or_wrong_and_nothing_else_does(path, mode, chapter_run):
    run = chapter_run(path, mode)
    assert set(run.errors()) == run.checks(), run.error_text()
    for i in run.checks():
        error = run.nb.cells[i].outputs[-1]
        # one line, a cross and the question, as IPython shows a checkpoints.Miss (an AssertionError): no traceback
        assert error["ename"] == "Miss" and len(error["traceback"]) == 1, error
        assert error["traceback"][0].startswith("✗ ") and "\n" not in error["traceback"][0], error["traceback"]
