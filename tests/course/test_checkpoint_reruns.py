"""A measured answer read on the first Run All is still right on the second.

Each chapter with a measured question (``chapter_runs.RERUN``: a figure timed on this machine, accepted anywhere
inside the 95% interval the chapter prints) runs twice in fresh kernels under the same load: its answered run, then
a re-run whose numeric answer cells hold as literals the figures the answered run displayed, typed as a learner
reads them. Every check of the re-run passes, and a literal really was typed for every displayed figure.
"""

from __future__ import annotations

import pytest
from chapter_answers import ANSWERS, DISPLAYED
from chapter_runs import RERUN, RUN_LIMIT_S, cell_index

pytestmark = [pytest.mark.notebook, pytest.mark.timeout(RUN_LIMIT_S)]


def test_the_chapters_with_measured_questions_are_rerun():
    # by hand: 03 (03.1), 06 (06.3), 07 (07.1-07.3) and 08 (08.1, 08.3, 08.5) ask for figures timed on this
    # machine; no other chapter
    assert RERUN == [
        "03_price_the_result.ipynb",
        "06_release_the_result.ipynb",
        "07_feed_the_device.ipynb",
        "08_profile_the_service.ipynb",
    ]


@pytest.mark.parametrize("name", RERUN)
def test_the_first_runs_displayed_figures_pass_in_a_second_run(name, chapter_run):
    first, second = chapter_run(name, "answered"), chapter_run(name, "re-run")
    assert first.errors() == [], first.error_text()
    for row in DISPLAYED[name]:
        if row.shown is None:
            continue
        typed = second.nb.cells[cell_index(second.nb, row.answer_cell)].source
        assert typed != ANSWERS[name][row.answer_cell] and "(" not in typed.split("=", 1)[1], typed  # a literal
    failed = [
        f"{second.nb.cells[i - 1].source.strip()}: {second.nb.cells[i].outputs[-1].get('evalue', '')}"
        for i in sorted(second.checks())
        if i in second.errors()
    ]
    assert failed == [] and second.errors() == [], "\n".join(failed) or second.error_text()
