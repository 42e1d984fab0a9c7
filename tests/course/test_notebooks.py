"""Notebooks are committed clean: no outputs, no execution counts (they are executed by `make test`)."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(
    p
    for d in ("chapters", "labs", "solutions")
    for p in (ROOT / d).rglob("*.ipynb")
    if ".ipynb_checkpoints" not in p.parts
)


def test_the_course_has_notebooks():
    assert any(p.parent.name == "chapters" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_without_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    dirty = [
        i for i, c in enumerate(cells) if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))
    ]
    assert dirty == [], f"{path.name}: cells {dirty} carry outputs; clear them before committing"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.parent.name == "chapters"], ids=lambda p: p.name)
def test_graded_checks_are_tagged_for_nbval(path):
    # as committed, a checkpoint's check fails until it is answered; the tag tells nbval's lax mode so
    cells = json.loads(path.read_text())["cells"]
    checks = [
        c
        for c in cells
        if c.get("metadata", {}).get("nbgrader", {}).get("grade") and not c["metadata"]["nbgrader"].get("solution")
    ]
    assert all("raises-exception" in c["metadata"].get("tags", []) for c in checks)
