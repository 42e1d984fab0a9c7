"""Keep every notebook of chapters/ and solutions/ in step with its text form here, and give its cells stable ids.

    .venv/bin/python text/sync.py     # what `make notebooks` runs

Each notebook has a MyST Markdown text form: ``chapters/NN_name.ipynb`` <-> ``text/chapters/NN_name.md`` and
``solutions/LAB/LAB.ipynb`` <-> ``text/solutions/LAB/LAB.md`` (the pairing is in ``jupytext.toml``). The text form
holds every cell's source, type and metadata (nbgrader's included) and the notebook's metadata; the notebook adds
the cell ids, which are derived from the text form by ``cell_ids``, so a notebook regenerated from its text form
gets them back. ``sync`` runs ``jupytext --sync`` on every pair (the side edited last wins: a new or edited text
form updates its notebook and the other way round) and then writes the stable ids into every notebook.
``tests/project/test_notebook_pairs.py`` fails when a pair is out of step.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
TEXT = ROOT / "text"
# the notebooks that have a text form; labs/ is generated from solutions/ by nbgrader (`make labs`)
PATTERNS = ("chapters/*.ipynb", "solutions/*/*.ipynb")

# a heading's slug: its first five words, lower-case ASCII, joined by "-" (nbformat 4.5 allows [a-zA-Z0-9-_], 1-64)
SLUG_WORDS = 5
# words a heading's slug does not end on ("2-the-ledger-as-a" -> "2-the-ledger")
TRAILING_WORDS = frozenset(
    "a an and as at before by for from how in is it of on or s the then to was when with".split()
)


def notebooks() -> list[Path]:
    return sorted(p for pattern in PATTERNS for p in ROOT.glob(pattern) if ".ipynb_checkpoints" not in p.parts)


def text_form(notebook: Path) -> Path:
    return TEXT / notebook.relative_to(ROOT).with_suffix(".md")


def text_forms() -> list[Path]:
    return sorted(p for pattern in PATTERNS for p in TEXT.glob(str(Path(pattern).with_suffix(".md"))))


def notebook_of(text: Path) -> Path:
    return ROOT / text.relative_to(TEXT).with_suffix(".ipynb")


def _source(cell) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def _slug(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = re.sub(r"[^a-z0-9]+", " ", ascii_text).split()[:SLUG_WORDS]
    while len(words) > 1 and words[-1] in TRAILING_WORDS:
        words.pop()
    return "-".join(words)


def _heading_slug(cell) -> str:
    """The slug of the heading a cell opens with ("## 3 · Walk from the widest gap" -> "3-walk-from-the-widest")."""
    if cell["cell_type"] != "markdown":
        return ""
    match = re.match(r"#{1,6}\s+(.*)", _source(cell).lstrip("\n").split("\n", 1)[0])
    return _slug(match.group(1)) if match else ""


def cell_ids(cells) -> list[str]:
    """The stable id of every cell, from what the text form carries: each cell's metadata, type, source and place.

    A cell with an nbgrader ``grade_id`` takes it (``ch01_q1_answer``, ``lab_setup``); a Markdown cell that opens
    with a heading takes the heading's slug, its first five words (``1-the-naive-snippet``); any other cell takes
    the id of the heading cell above it and its place after it (``1-the-naive-snippet-2``, ``lab_task1-1``;
    ``top-1`` before the first heading). A repeated id gets ``-2``, ``-3``, ... .
    """
    ids: list[str] = []
    section, place = "top", 0
    for cell in cells:
        grade_id = (cell.get("metadata") or {}).get("nbgrader", {}).get("grade_id")
        heading = _heading_slug(cell)
        if grade_id:
            base = re.sub(r"[^a-zA-Z0-9_-]+", "-", str(grade_id))[:56]
        elif heading:
            base = heading[:48]
        else:
            place += 1
            base = f"{section}-{place}"
        cell_id, n = base, 1
        while cell_id in ids:
            n += 1
            cell_id = f"{base}-{n}"
        ids.append(cell_id)
        if heading:
            section, place = cell_id, 0
    return ids


def left_out_cell_metadata() -> list[str]:
    """The cell metadata keys jupytext.toml leaves out of the text forms (interface state: ``trusted``, ...)."""
    from jupytext.config import load_jupytext_configuration_file

    config = load_jupytext_configuration_file(str(ROOT / "jupytext.toml"))
    return [key[1:] for key in config.cell_metadata_filter.split(",") if key.startswith("-")]


def with_stable_ids(path: Path) -> bool:
    """Write the stable ids into the notebook at ``path``, less the metadata its text form leaves out; whether it
    changed."""
    text = path.read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    nb.nbformat_minor = max(nb.nbformat_minor, 5)
    left_out = left_out_cell_metadata()
    for cell, cell_id in zip(nb.cells, cell_ids(nb.cells)):
        cell["id"] = cell_id
        for key in left_out:
            cell.metadata.pop(key, None)
    new = nbformat.writes(nb) + "\n"
    if new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


def sync() -> list[Path]:
    """Sync every pair and write the stable ids; the notebooks and text forms changed."""
    from jupytext.cli import jupytext

    pairs = notebooks() + [t for t in text_forms() if not notebook_of(t).exists()]
    files = sorted(
        {f for nb in notebooks() for f in (nb, text_form(nb))} | {f for t in text_forms() for f in (t, notebook_of(t))}
    )
    before = {f: f.read_bytes() for f in files if f.exists()}
    os.chdir(ROOT)  # jupytext reads jupytext.toml from the notebook's folder upwards, and logs relative paths
    jupytext(["--sync", "--quiet", *(str(p.relative_to(ROOT)) for p in pairs)])
    for nb in notebooks():
        if with_stable_ids(nb):
            # the text form, which holds the inputs, stays at least as recent as its notebook
            os.utime(text_form(nb))
    return [f for f in files if f.exists() and before.get(f) != f.read_bytes()]


def main() -> int:
    changed = sync()
    for path in changed:
        print(f"updated {path.relative_to(ROOT)}")
    print(f"{len(notebooks())} notebooks in step with their text forms ({len(changed)} files updated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
