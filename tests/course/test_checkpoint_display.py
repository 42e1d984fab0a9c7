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

import pytest
from chapter_answers import DISPLAYED
from chapter_runs import CHAPTERS, RUN_LIMIT_S, question_of, rounded

from gpucost_lab.course.questions import Measured

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(RUN_LIMIT_S)]


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
