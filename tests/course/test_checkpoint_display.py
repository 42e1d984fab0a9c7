"""Every numeric checkpoint accepts the value as its chapter displays it, and rejects plausible mistakes.

``chapter_answers.DISPLAYED`` has one row per numeric checkpoint, keyed by chapter: where the chapter displays the
value (a regular expression over the text outputs of the cells above the question; its groups are the displayed
figures), what a learner writes from that display, the digits the check compares to, and plausible mistakes.
Each chapter's answered run (tests/chapter_runs.py: once, with its reference answers, in a scratch working
directory) ends, in the same kernel, with each row's probes: the row's answer is put into the answer cell and the
check cell is run again: the answer as displayed and the answer rounded to the digits the question asks for must
pass, every mistake must fail with AssertionError. The check compares against the value the same kernel computed,
so machine-speed figures (01.1) are fine.

Adding a chapter is adding its rows under its file name in tests/chapter_answers.py.
"""

from __future__ import annotations

import re

import nbformat
import pytest
from chapter_answers import DISPLAYED
from chapter_runs import CHAPTERS, cell_index
from labtools import is_check

NUMERIC = re.compile(r"\bcheck_number\(")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_table_covers_every_numeric_checkpoint_and_the_question_states_its_digits(path):
    nb = nbformat.read(path, as_version=4)
    numeric = {
        nb.cells[i - 1].metadata["nbgrader"]["grade_id"]
        for i, c in enumerate(nb.cells)
        if is_check(c) and NUMERIC.search(c.source)
    }
    rows = DISPLAYED.get(path.name, [])
    assert {row.answer_cell for row in rows} == numeric
    for row in rows:
        i = cell_index(nb, row.answer_cell)
        check, question = nb.cells[i + 1].source, nb.cells[i - 1].source
        assert "where=" in check, f"{row.answer_cell}: the check should say where to recompute the answer from"
        if row.digits == "exact":
            assert not re.search(r"significant=|decimals=|rel_tol=", check), f"{row.answer_cell} is a count"
            continue
        assert f"{row.digits}," in check or f"{row.digits})" in check, f"{row.answer_cell}: check is not {row.digits}"
        kind, n = row.digits.split("=")
        asked = {
            "significant": f"{n} significant digits",
            "decimals": "nearest whole number" if n == "0" else f"{n} decimal place",
        }[kind]  # "1 decimal place", "2 decimal places"
        assert asked in question, f"{row.answer_cell}: the question should ask for the {asked}"


@pytest.mark.notebook
@pytest.mark.parametrize("path", [p for p in CHAPTERS if p.name in DISPLAYED], ids=lambda p: p.name)
def test_the_displayed_value_passes_and_plausible_mistakes_fail(path, chapter_run):
    run = chapter_run(path, "answered")
    assert run.errors() == [], "the answered chapter must run clean first:\n" + run.error_text()
    assert run.probe_problems == [], "\n".join(run.probe_problems)
    # every row was probed: its answer as displayed, rounded as asked (not for a count), and each of its mistakes
    rows = DISPLAYED[path.name]
    assert run.probes == sum(1 + (row.digits != "exact") + len(row.mistakes) for row in rows)
