"""The package's shape: every import a notebook makes still works, and no module outgrows a room.

The import lines are read from the notebooks themselves (chapters/, labs/ and solutions/), so a module moved
without re-exporting a name the course uses fails here, not in a learner's notebook.
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted([*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("labs/*/*.ipynb"), *ROOT.glob("solutions/*/*.ipynb")])
PACKAGE = ROOT / "gpucost_lab"
MAX_MODULE_LINES = 400


def _code(cell: dict) -> str:
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    # IPython magics and shell escapes are not Python
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def _imports(path: Path) -> set[tuple[str, str | None]]:
    """(module, name) for every ``from gpucost_lab... import name`` and (module, None) for ``import gpucost_lab...``."""
    found: set[tuple[str, str | None]] = set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse(_code(cell))
        except SyntaxError:  # a released answer cell may hold a placeholder; its imports are elsewhere
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gpucost_lab":
                found.update((node.module, alias.name) for alias in node.names)
            elif isinstance(node, ast.Import):
                found.update((a.name, None) for a in node.names if a.name.split(".")[0] == "gpucost_lab")
    return found


IMPORTS = sorted({imp for nb in NOTEBOOKS for imp in _imports(nb)}, key=lambda i: (i[0], i[1] or ""))


def test_the_notebooks_import_from_the_package():
    # a property of the course, not of this test: every chapter and lab calls into gpucost_lab
    assert len(NOTEBOOKS) >= 7 + 2 + 2
    assert all(_imports(nb) for nb in NOTEBOOKS), [nb.name for nb in NOTEBOOKS if not _imports(nb)]


@pytest.mark.parametrize("module,name", IMPORTS, ids=[f"{m}:{n}" for m, n in IMPORTS])
def test_every_import_path_the_notebooks_use_still_works(module, name):
    imported = importlib.import_module(module)
    if name is not None:
        assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}") is not None, (
            f"`from {module} import {name}` no longer works"
        )


def test_no_module_is_over_about_400_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")}
    assert sizes, "no modules found"
    over = {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not over, f"split these modules (over {MAX_MODULE_LINES} lines): {over}"


def _make_targets() -> set[str]:
    """The targets a developer types: every name declared .PHONY in the Makefile."""
    phony = set()
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if line.startswith(".PHONY:"):
            phony.update(line.split(":", 1)[1].split())
    return phony


def test_make_help_lists_every_target():
    import subprocess

    targets = _make_targets()
    assert {"lab", "test", "check", "lint", "labs", "bench", "clean", "help"} <= targets
    shown = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    listed = {line.split()[1] for line in shown.splitlines() if line.startswith("make ")}
    assert targets - {"help"} <= listed, f"make help omits {sorted(targets - {'help'} - listed)}"


def test_make_clean_removes_every_environment_it_made():
    import subprocess

    # make -n prints the recipe without running it
    recipe = subprocess.run(["make", "-n", "clean"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    made = {".venv", ".venv-hta", "deploy/hub/node_modules", "deploy/hub/state"}
    assert all(path in recipe.split() for path in made), f"make clean leaves some of {sorted(made)}: {recipe!r}"
