"""Every notebook of chapters/ and solutions/ is exactly what its text form in text/ gives (`make notebooks`).

The text form (MyST Markdown, paired in jupytext.toml) is what a reviewer reads, so the notebook may hold nothing it
does not say: cell by cell the same type, source and metadata (nbgrader's included), the stable id that
``text/sync.py`` derives from the text form, and no outputs. Nothing is executed.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
from pathlib import Path

import jupytext
import pytest
from jupytext.config import load_jupytext_config

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("text_sync", ROOT / "text" / "sync.py")
sync = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sync)

NOTEBOOKS = sync.notebooks()
FIX = 'run `make notebooks` (DEVELOPERS.md, "Notebooks and their text forms")'
NBFORMAT_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # nbformat 4.5's cell id


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _cell(cell: dict) -> dict:
    """A cell as committed, its source as one string."""
    source = cell.get("source", "")
    return {**cell, "source": "".join(source) if isinstance(source, list) else source}


def _from_text_form(notebook: Path) -> dict:
    """The notebook its text form gives: what jupytext reads from it, the stable ids, no outputs."""
    nb = jupytext.read(sync.text_form(notebook), fmt="md:myst", config=load_jupytext_config(str(notebook)))
    metadata = json.loads(json.dumps(nb.metadata))
    # where the notebook came from, which jupytext leaves out of the .ipynb
    metadata.get("jupytext", {}).pop("text_representation", None)
    if metadata.get("jupytext") == {}:
        del metadata["jupytext"]
    cells = []
    for cell, cell_id in zip(nb.cells, sync.cell_ids(nb.cells)):
        expected = {"cell_type": cell.cell_type, "id": cell_id, "metadata": dict(cell.metadata), "source": cell.source}
        if cell.cell_type == "code":
            expected.update(outputs=[], execution_count=None)
        cells.append(json.loads(json.dumps(expected)))
    return {"metadata": metadata, "cells": cells}


def test_every_notebook_has_a_text_form_and_every_text_form_a_notebook():
    assert len(NOTEBOOKS) >= 7 + 2, NOTEBOOKS
    no_text = [_rel(nb) for nb in NOTEBOOKS if not sync.text_form(nb).exists()]
    assert no_text == [], f"no text form for {no_text}: {FIX}"
    no_notebook = [_rel(t) for t in sync.text_forms() if not sync.notebook_of(t).exists()]
    assert no_notebook == [], f"no notebook for {no_notebook}: {FIX}, or delete the text form with its notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_rel)
def test_the_notebook_is_what_its_text_form_gives(path):
    if not sync.text_form(path).exists():
        pytest.skip("no text form (test_every_notebook_has_a_text_form_and_every_text_form_a_notebook fails)")
    committed = json.loads(path.read_text(encoding="utf-8"))
    expected = _from_text_form(path)
    assert (committed["nbformat"], committed["nbformat_minor"]) >= (4, 5), "cell ids need nbformat 4.5"
    assert committed["metadata"] == expected["metadata"], f"the notebook's metadata differs from its text form: {FIX}"
    differ = []
    for i, (got, want) in enumerate(itertools.zip_longest(committed["cells"], expected["cells"], fillvalue={})):
        got = _cell(got) if got else {}
        if got != want:
            fields = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            differ.append(f"cell {i} ({want.get('id') or got.get('id')}): {', '.join(fields)}")
    assert differ == [], (
        f"{_rel(path)} is out of step with {_rel(sync.text_form(path))}: {'; '.join(differ[:5])}"
        f"{' ...' if len(differ) > 5 else ''}. {FIX}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_rel)
def test_cell_ids_are_the_stable_ones(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    ids = [cell.get("id") for cell in cells]
    assert all(isinstance(i, str) and NBFORMAT_ID.match(i) for i in ids), f"missing or invalid cell ids: {FIX}"
    stable = sync.cell_ids(cells)
    wrong = [f"cell {n}: {got!r}, not {want!r}" for n, (got, want) in enumerate(zip(ids, stable)) if got != want]
    assert wrong == [], f"{_rel(path)}: {'; '.join(wrong[:5])}. {FIX}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_rel)
def test_committed_without_outputs(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    dirty = [
        n for n, c in enumerate(cells) if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))
    ]
    assert dirty == [], f"{_rel(path)}: cells {dirty} carry outputs; clear them before committing"


def test_the_id_scheme():
    # by hand: a grade_id is kept (what no id may hold replaced), a heading gives its slug (ascii, five words at
    # most, not ending on "the"), the cells under a heading count from its id, and a repeat gets a suffix
    def md(source, **nbgrader):
        return {"cell_type": "markdown", "source": source, "metadata": {"nbgrader": nbgrader} if nbgrader else {}}

    def code(source, **nbgrader):
        return {**md(source, **nbgrader), "cell_type": "code"}

    cells = [
        code("import torch"),
        md("# 07 · Café, then the roofline\n\ntext"),
        code("x = 1"),
        md("**What to notice.**"),
        md("## Summary"),
        md("## Summary"),
        code("answer = None", grade_id="ch07_q1_answer"),
        code("check(answer)", grade_id="ch07 q1.check"),
        code("# not a heading in a code cell"),
        md("## 2 · Why it lies: the clock stops before the work is done"),
        md("## Summary"),
        md("#"),
        md("## 3 · A graded task", grade_id="lab_task3"),
        code("x = 1"),
    ]
    assert sync.cell_ids(cells) == [
        "top-1",
        "07-cafe-then-the-roofline",
        "07-cafe-then-the-roofline-1",
        "07-cafe-then-the-roofline-2",
        "summary",
        "summary-2",
        "ch07_q1_answer",
        "ch07-q1-check",
        "summary-2-1",
        "2-why-it-lies",
        "summary-3",
        "summary-3-1",
        "lab_task3",
        "lab_task3-1",
    ]
