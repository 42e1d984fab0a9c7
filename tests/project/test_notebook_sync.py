"""`make notebooks` (text/sync.py) keeps syncing every pair, now that the learner's JupyterLab writes only the notebook.

`make lab` runs no jupytext (tests/project/test_learner_lab.py), so a notebook saved there leaves its text form
behind; the pairing itself stays in jupytext.toml at the root, where jupytext's command line finds it. Here, in a copy
of the root laid out as the repository is (jupytext.toml, text/sync.py, one chapter and its text form): a cell
edited in the notebook alone (what a save in the learner's JupyterLab does) reaches the text form, and a cell edited
in the text form reaches the notebook, with its stable id.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "00_start_here"
EDIT = "print('edited in JupyterLab')"


@pytest.fixture
def copy(tmp_path):
    for rel in ("jupytext.toml", "text/sync.py", f"chapters/{CHAPTER}.ipynb", f"text/chapters/{CHAPTER}.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, tmp_path / rel)
    return tmp_path


def _sync(root: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(root / "text" / "sync.py")], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _later(path: Path, than: Path) -> None:
    """Give ``path`` a modification time after ``than``'s, as a later save does (file systems round times)."""
    stamp = than.stat().st_mtime + 5
    os.utime(path, (stamp, stamp))


def test_a_notebook_saved_alone_reaches_its_text_form(copy):
    notebook, text = copy / "chapters" / f"{CHAPTER}.ipynb", copy / "text" / "chapters" / f"{CHAPTER}.md"
    nb = json.loads(notebook.read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["source"] = EDIT
    code["metadata"]["trusted"] = True  # JupyterLab marks what it saves; the text form leaves it out
    notebook.write_text(json.dumps(nb, indent=1))
    _later(notebook, text)
    assert f"updated text/chapters/{CHAPTER}.md" in _sync(copy)
    assert EDIT in text.read_text()
    assert "trusted" not in text.read_text()
    assert "trusted" not in json.loads(notebook.read_text())["cells"][nb["cells"].index(code)]["metadata"]


def test_a_text_form_edited_alone_reaches_its_notebook(copy):
    notebook, text = copy / "chapters" / f"{CHAPTER}.ipynb", copy / "text" / "chapters" / f"{CHAPTER}.md"
    ids = [c["id"] for c in json.loads(notebook.read_text())["cells"]]
    text.write_text(text.read_text().replace("```{code-cell}\n", f"```{{code-cell}}\n{EDIT}\n", 1))
    _later(text, notebook)
    assert f"updated chapters/{CHAPTER}.ipynb" in _sync(copy)
    cells = json.loads(notebook.read_text())["cells"]
    assert any(c["cell_type"] == "code" and "".join(c["source"]).startswith(EDIT) for c in cells)
    assert [c["id"] for c in cells] == ids, "the cells keep their stable ids"
