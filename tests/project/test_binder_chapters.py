"""Every chapter runs in what Binder builds: each executes top to bottom with the kernel of the environment the
``binder`` fixture (tests/project/conftest.py) builds from binder/ alone, where the only cells that may fail are the
graded checkpoint checks (tagged `raises-exception`, unanswered as committed). Slow by nature: about a minute to
install, then each chapter in a kernel of its own.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from .helpers import ROOT, _run

# the first test builds the Binder environment (a pip install, 81 s quiet) and each runs a chapter in it
pytestmark = [pytest.mark.binder, pytest.mark.notebook, pytest.mark.slow, pytest.mark.timeout(900)]

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


# Runs inside the Binder environment: nbclient and the kernel both come from it. The chapter runs in place, in the
# checkout's chapters/ folder, as a learner's does; a last cell reports the kernel's environment.
RUNNER = textwrap.dedent("""
    import json, sys
    import nbformat
    from nbclient import NotebookClient

    path = sys.argv[1]
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.prefix)"))
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": path.rsplit("/", 1)[0]}}).execute()
    probe = nb.cells.pop()
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        cells.append({"index": i, "executed": cell.get("execution_count") is not None,
                      "tagged": "raises-exception" in cell.get("metadata", {}).get("tags", []),
                      "graded": bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade")),
                      "error": f"{errors[0]['ename']}: {errors[0]['evalue']}" if errors else None})
    kernel_prefix = "".join(o.get("text", "") for o in probe.outputs if o.get("name") == "stdout").strip()
    print(json.dumps({"kernel_prefix": kernel_prefix, "cells": cells}))
""")


@pytest.mark.parametrize("chapter", [p.name for p in CHAPTERS])
def test_every_chapter_runs_in_the_binder_environment(binder, chapter):
    out = _run(
        [binder.python, "-c", RUNNER, binder.repo / "chapters" / chapter],
        env=binder.env,
        cwd=binder.repo / "chapters",
        timeout=1200,
    )
    result = json.loads(out.strip().splitlines()[-1])
    assert Path(result["kernel_prefix"]) == binder.venv, f"the kernel ran in {result['kernel_prefix']!r}"
    cells = result["cells"]
    assert cells and all(c["executed"] for c in cells), "every code cell ran"
    failed_untagged = [f"cell {c['index']}: {c['error']}" for c in cells if c["error"] and not c["tagged"]]
    assert failed_untagged == [], "\n".join(failed_untagged)
    # as committed the checkpoints are unanswered, so each graded check fails, and only those
    assert all(c["graded"] for c in cells if c["error"]), [c for c in cells if c["error"]]
