"""Every numeric checkpoint accepts the value as its chapter displays it, and rejects plausible mistakes.

``chapter_answers.DISPLAYED`` has one row per numeric checkpoint, keyed by chapter: where the chapter displays the
value (a regular expression over the text outputs of the cells above the question; its groups are the displayed
figures), what a learner writes from that display, the digits the check compares to, and plausible mistakes.
Each chapter's answered run (tests/chapter_runs.py: once, with its reference answers, in a scratch working
directory) ends, in the same kernel, with each row's probes: the row's answer is put into the answer cell and the
check cell is run again: the answer as displayed and the answer rounded to the digits the question asks for must
pass, every mistake must fail with AssertionError. A measured row is probed again with a store of earlier intervals
seeded with one wide enough to hold the answer and every mistake, as a busy run may print: the answer still passes
and no mistake does. The check compares against the value the same kernel computed, so machine-speed figures (01.1)
are fine.

Adding a chapter is adding its rows under its file name in tests/chapter_answers.py.
"""

from __future__ import annotations

import re

import nbformat
import pytest
from chapter_answers import DISPLAYED
from chapter_runs import CHAPTERS, cell_index, question_of, rounded
from labtools import is_check

from gpucost_lab.course.questions import QUESTIONS, Exact, Measured

CALL = re.compile(r'^checkpoint\("(\d\d\.\d+)", (\w+)\)$', re.MULTILINE)


def _asked(question) -> str:
    """How the question paragraph says the digits: "2 significant digits", "1 decimal place", "nearest whole"."""
    if question.significant is not None:
        return f"{question.significant} significant digit"
    return "nearest whole number" if question.decimals == 0 else f"{question.decimals} decimal place"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_each_check_cell_is_one_call_and_the_question_states_its_digits(path):
    nb = nbformat.read(path, as_version=4)
    numeric = set()
    for i, cell in enumerate(nb.cells):
        if not is_check(cell):
            continue
        calls = CALL.findall(cell.source)
        assert len(calls) == 1 and cell.source.count("\n") == 2, f"cell {i}: one import and one call, no formula"
        (qid, name), answer_cell = calls[0], nb.cells[i - 1]
        assert answer_cell.source.startswith(f"{name} = None"), f"{qid} checks {name}, not its answer cell's name"
        assert f"**{qid}**" in nb.cells[i - 2].source, f"{qid}: the question should come right before"
        if isinstance(QUESTIONS.get(qid), (Exact, Measured)):
            numeric.add(answer_cell.metadata["nbgrader"]["grade_id"])
    assert {row.answer_cell for row in DISPLAYED.get(path.name, [])} == numeric
    for row in DISPLAYED.get(path.name, []):
        question, text = question_of(row.answer_cell), nb.cells[cell_index(nb, row.answer_cell) - 1].source
        if question.significant is not None or question.decimals is not None:
            assert _asked(question) in text, f"{row.answer_cell}: the question should ask for the {_asked(question)}"
        if isinstance(question, Measured):
            assert "95% interval" in text, f"{row.answer_cell}: a measured question says its interval is accepted"


@pytest.mark.notebook
@pytest.mark.parametrize("path", [p for p in CHAPTERS if p.name in DISPLAYED], ids=lambda p: p.name)
def test_the_displayed_value_passes_and_plausible_mistakes_fail(path, chapter_run):
    run = chapter_run(path, "answered")
    assert run.errors() == [], "the answered chapter must run clean first:\n" + run.error_text()
    assert run.probe_problems == [], "\n".join(run.probe_problems)
    # every row was probed: its answer as displayed, rounded as asked (not for a count), and each of its mistakes;
    # a measured row's answer and mistakes once more, with a wide interval kept in the store before the run
    rows = DISPLAYED[path.name]
    once = sum(1 + (rounded("x", row.answer_cell) is not None) + len(row.mistakes) for row in rows)
    again = sum(1 + len(row.mistakes) for row in rows if isinstance(question_of(row.answer_cell), Measured))
    assert run.probes == once + again
