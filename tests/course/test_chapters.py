"""Every chapter executes top to bottom: with the reference answers, as committed, and with wrong answers.

With the reference answers from ``chapter_answers.py`` in its answer cells, no cell may fail. As
committed (placeholders in the answer cells) and with wrong answers (each reference answer's value
perturbed), the only cells that may fail are the graded checkpoint cells, and each of them must
fail: a checkpoint that passes unanswered or wrong grades nothing.

Each chapter executes once per kind of run (tests/chapter_runs.py); tests/course/test_checkpoint_display.py and
tests/course/test_chapters_under_load.py read the same answered run. "As committed" is read off the spoiled run: each
answer cell's placeholder and its check, run again in that run's kernel. That is the chapter as committed because
no cell but a check reads what an answer cell binds, and a check only its own answer's names
(tests/course/test_chapter_cells.py checks both on the sources).
"""

import pytest
from chapter_answers import ANSWERS
from chapter_runs import CHAPTERS, RUN_LIMIT_S

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(RUN_LIMIT_S)]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_runs_clean_with_reference_answers(path, chapter_run):
    run = chapter_run(path, "answered")
    assert run.errors() == [], run.error_text()


def _assert_a_one_line_miss(error) -> None:
    # one line, a cross and the question, as IPython shows a checkpoints.Miss (an AssertionError): no traceback
    assert error["ename"] == "Miss" and len(error["traceback"]) == 1, error
    assert error["traceback"][0].startswith("✗ ") and "\n" not in error["traceback"][0], error["traceback"]


@pytest.mark.parametrize("mode", ["as committed", "spoiled"], ids=["as committed", "wrong answers"])
@pytest.mark.parametrize("path", [p for p in CHAPTERS if ANSWERS.get(p.name)], ids=lambda p: p.name)
def test_checkpoints_fail_unanswered_or_wrong_and_nothing_else_does(path, mode, chapter_run):
    run = chapter_run(path, "spoiled")
    assert set(run.errors()) == run.checks(), run.error_text()
    if mode == "spoiled":
        for i in run.checks():
            _assert_a_one_line_miss(run.nb.cells[i].outputs[-1])
        return
    assert set(run.as_committed) == set(ANSWERS[path.name])  # every answer cell, as committed, then its check
    for grade_id, errors in run.as_committed.items():
        assert len(errors) == 1, (grade_id, errors)  # the placeholder runs; its check fails
        _assert_a_one_line_miss(errors[0])
