"""What the chapters' sources hold, read without executing them (the chapters' runs are read by
tests/course/test_chapters.py, test_chapter_tables.py and test_checkpoint_display.py).

- Every answer cell has a reference answer in tests/chapter_answers.py and every reference answer a cell; an answered
  chapter ends in at least three graded checkpoints (chapter 00: one).
- Each check cell is one import and one ``checkpoint`` call on the name its answer cell binds, right after the
  question, which states the digits compared and, for a measured figure, that its interval is accepted.
- No cell but a check reads a name an answer cell binds, and a check reads its own answer's names only: so the
  chapter's other cells run alike whatever the answers hold, and the spoiled run stands for the run as committed.
- No chapter sets pandas' display options in a cell of its own or calls ``plt.show()``; the formatter sets them once
  (``tidy_tables()``).
"""

import ast
import re

import nbformat
import pytest
from chapter_answers import ANSWERS, DISPLAYED
from chapter_runs import CHAPTERS, cell_index, question_of
from labtools import is_check, meta

from gpucost_lab.course.questions import QUESTIONS, Exact, Measured


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


SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _names(source: str, context: type) -> set[str]:
    """The names ``source`` binds (``ast.Store``) or reads (``ast.Load``) in the notebook's namespace (a name bound
    inside a function, a class or a comprehension is its own), IPython's ``%`` and ``!`` lines left out."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    found, todo = set(), [ast.parse(code)]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, context):
            found.add(node.id)
        inner = isinstance(node, SCOPES) and context is ast.Store
        todo.extend([] if inner else ast.iter_child_nodes(node))
    return found


def _answer_names(nb) -> dict[int, set[str]]:
    """Each answer cell's index, and the names its placeholder and its reference answer bind."""
    answers = ANSWERS[nb.metadata["path_name"]]
    return {
        i: _names(c.source, ast.Store) | _names(answers[meta(c)["grade_id"]], ast.Store)
        for i, c in enumerate(nb.cells)
        if meta(c).get("solution")
    }


def _chapter(path):
    nb = nbformat.read(path, as_version=4)
    nb.metadata["path_name"] = path.name
    return nb


@pytest.mark.parametrize("path", [p for p in CHAPTERS if ANSWERS.get(p.name)], ids=lambda p: p.name)
def test_no_cell_but_a_check_reads_what_an_answer_cell_binds(path):
    nb = _chapter(path)
    bound = set().union(*_answer_names(nb).values())
    readers = {
        i: sorted(_names(c.source, ast.Load) & bound)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and not meta(c).get("solution") and not is_check(c)
    }
    assert {i: names for i, names in readers.items() if names} == {}


@pytest.mark.parametrize("path", [p for p in CHAPTERS if ANSWERS.get(p.name)], ids=lambda p: p.name)
def test_each_check_reads_its_own_answer_and_no_other(path):
    nb = _chapter(path)
    answers = _answer_names(nb)
    bound = set().union(*answers.values())
    for i, own in answers.items():
        assert is_check(nb.cells[i + 1]), f"{path.name}: cell {i + 1} does not check the answer in cell {i}"
        read = _names(nb.cells[i + 1].source, ast.Load) & bound
        assert read and read <= own, (path.name, i + 1, sorted(read), sorted(own))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_display_options_are_set_once_by_the_formatter_not_per_cell(path):
    nb = nbformat.read(path, as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    assert not any("pd.set_option(" in s or "pandas.set_option(" in s for s in code), path.name
    assert not any("plt.show()" in s for s in code), f"{path.name}: show a figure with formatting.figure"
    assert sum(s.count("tidy_tables()") for s in code) <= 1, path.name
