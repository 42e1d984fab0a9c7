"""Every chapter executes top to bottom: with the reference answers, as committed, and with wrong answers.

With the reference answers from ``chapter_answers.py`` in its answer cells, no cell may fail. As
committed (placeholders in the answer cells) and with wrong answers (each reference answer's value
perturbed), the only cells that may fail are the graded checkpoint cells, and each of them must
fail: a checkpoint that passes unanswered or wrong grades nothing.
"""

from pathlib import Path

import nbformat
import pytest
from chapter_answers import ANSWERS
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _execute(nb, workdir: Path) -> None:
    NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(workdir)}}
    ).execute()


def _errors(nb) -> list[int]:
    return [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.get("outputs", []))
    ]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_runs_clean_with_reference_answers(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    answers = ANSWERS.get(path.name, {})
    solution_ids = {_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("solution")}
    assert solution_ids == set(answers), "every answer cell needs a reference answer and vice versa"
    for cell in nb.cells:
        if _nbgrader(cell).get("solution"):
            cell.source = answers[_nbgrader(cell)["grade_id"]]
    _execute(nb, tmp_path)  # a scratch working directory: chapters must not depend on their own folder
    failed = _errors(nb)
    assert failed == [], "\n".join(str(nb.cells[i].outputs[-1].get("evalue", "")) for i in failed)


def _wrong(reference: str) -> str:
    """The reference answer with its value spoiled: numbers scaled and shifted, anything else replaced."""
    name = reference.split("=", 1)[0].strip()
    return (
        f"{reference}\n{name} = ({name} * 1.5 + 1) if isinstance({name}, (int, float)) "
        f"and not isinstance({name}, bool) else 'not the answer'"
    )


@pytest.mark.parametrize("mode", ["as committed", "wrong answers"])
@pytest.mark.parametrize("path", [p for p in CHAPTERS if ANSWERS.get(p.name)], ids=lambda p: p.name)
def test_checkpoints_fail_unanswered_or_wrong_and_nothing_else_does(path, mode, tmp_path):
    nb = nbformat.read(path, as_version=4)
    graded = {i for i, c in enumerate(nb.cells) if _nbgrader(c).get("grade") and not _nbgrader(c).get("solution")}
    assert len(graded) >= 3, "a chapter ends in at least three graded checkpoints"
    if mode == "wrong answers":
        for cell in nb.cells:
            if _nbgrader(cell).get("solution"):
                cell.source = _wrong(ANSWERS[path.name][_nbgrader(cell)["grade_id"]])
    _execute(nb, tmp_path)
    assert set(_errors(nb)) == graded
    for i in graded:
        assert nb.cells[i].outputs[-1]["ename"] == "AssertionError"
