"""Every chapter ends with its sources (DEVELOPERS.md, "Chapters and their checkpoints"): a last section
"## Sources" whose entries each name a primary source with its address (a datasheet through the catalog, a figure
recorded in a shipped trace), or say that the figure is a stated assumption."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "text" / "chapters").glob("*.md"))


def test_every_chapter_has_a_text_form():
    assert len(CHAPTERS) == len(list((ROOT / "chapters").glob("*.ipynb"))) >= 8


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_last_section_lists_the_sources(path):
    text = path.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings and headings[-1] == "Sources", f"{path.name}: the last section is {headings[-1:]}, not Sources"
    entries = [line for line in text.split("\n## Sources\n", 1)[1].splitlines() if line.startswith("- ")]
    assert len(entries) >= 3, f"{path.name}: {len(entries)} sources"
    for entry in entries:
        assert re.search(r"https?://\S+", entry) or re.search(r"assumption|hardware\.json|recorded in", entry), entry
