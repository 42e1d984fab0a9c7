"""Helpers of the tests in tests/course/ that several files share: a test run once per lab, a lab's test cells by
section, learner ids, and what a process left in its temporary folder."""

import re
from pathlib import Path

import nbformat
import pytest
from labtools import LABS, is_check, meta

each_lab = pytest.mark.parametrize("lab", LABS, ids=[lab.name for lab in LABS])
# learner ids for the per-learner variants (test_variants.py, test_variants_jobs.py): numbered, named, accented, odd
IDS = [f"learner{i:02d}" for i in range(40)] + ["alice", "bob", "émile", "a.b@c-d"]


def _check_cells_by_section(lab):
    """(section number, grade_id, source) of each test cell of ``lab``'s source, under its ``## N ·`` heading."""
    section, found = None, []
    for cell in nbformat.read(lab.source, as_version=4).cells:
        heading = re.match(r"## (\d+) ·", cell.source) if cell.cell_type == "markdown" else None
        section = int(heading.group(1)) if heading else section
        if is_check(cell):
            found.append((section, meta(cell)["grade_id"], cell.source))
    return found


def _left(tmp: Path) -> list[str]:
    """The names in ``tmp`` (a process's TMPDIR): what it left behind."""
    return sorted(p.name for p in tmp.iterdir())
