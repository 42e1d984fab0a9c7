"""The question registry covers exactly the chapters' checkpoints, and each question is well formed."""

from __future__ import annotations

import json
import re
from importlib import resources

import nbformat
from chapter_runs import CHAPTERS

from gpucost_lab.course.questions import QUESTIONS, Exact, Measured, Named

KEYS = json.loads((resources.files("gpucost_lab") / "data" / "answer_keys.json").read_text())


def _called() -> list[str]:
    ids = []
    for path in CHAPTERS:
        for cell in nbformat.read(path, as_version=4).cells:
            ids += re.findall(r'checkpoint\("(\d\d\.\d+)"', cell.source)
    return ids


def test_every_checkpoint_a_chapter_calls_is_defined_once_and_nothing_else_is():
    called = _called()
    assert len(called) == len(set(called)), "a question checked twice"
    assert set(called) == set(QUESTIONS) | set(KEYS)
    assert not set(QUESTIONS) & set(KEYS), "a question both keyed and computed"


def test_every_chapter_has_a_checkpoint():
    chapters = {path.name[:2] for path in CHAPTERS}
    assert chapters == {qid.split(".")[0] for qid in _called()}


def test_each_question_is_labelled_by_its_id_and_measured_ones_ask_for_digits():
    for qid, question in QUESTIONS.items():
        assert isinstance(question, (Exact, Measured, Named))
        assert question.label.startswith(f"{qid} ") and question.where.strip(), qid
        if isinstance(question, Measured):
            assert (question.significant is None) != (question.decimals is None), qid


def test_each_measured_question_computes_the_mistakes_the_chapter_tests_probe():
    # the course refuses an earlier interval holding one of these; the probes (chapter_answers.DISPLAYED) put the
    # same mistakes into the answer cell, so the two lists name the same mistakes, and no measured question has none
    from chapter_answers import DISPLAYED
    from chapter_runs import question_of

    probed = {row.answer_cell: set(row.mistakes) for rows in DISPLAYED.values() for row in rows}
    measured = {cell: question_of(cell) for cell in probed if isinstance(question_of(cell), Measured)}
    assert len(measured) == sum(isinstance(q, Measured) for q in QUESTIONS.values())
    for cell, question in measured.items():
        assert question.mistakes and set(question.mistakes) == probed[cell], cell
    assert all(not getattr(q, "mistakes", None) for q in QUESTIONS.values() if not isinstance(q, Measured))
