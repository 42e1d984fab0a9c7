"""Dead code in ``gpucost_lab/``: names nothing uses, found by vulture (`make lint`).

A name counts as used when the package, the tests, the benchmarks, the deployment files or the code cells of a
chapter or lab (read from their text forms in ``text/``) use it. Names that only a framework calls (nbgrader's
traitlets, IPython's display hooks, classes named in a configuration string) are listed, with the reason, in
``tools/dead_code_allowed.py``. Prints each finding and exits 1 when there is one; prints nothing otherwise.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["gpucost_lab", "tests", "benchmarks", "deploy", "tools", "nbgrader_config.py"]
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.M | re.S)
CELL_OPTIONS = re.compile(r"\A---\n.*?^---\n", re.M | re.S)  # a cell's metadata (tags, nbgrader) in YAML
MIN_CONFIDENCE = "60"


def notebook_code(text_forms: Path, into: Path) -> list[Path]:
    """Each text form's code cells as one Python file (IPython magics and shell lines left out)."""
    written = []
    for i, md in enumerate(sorted(text_forms.rglob("*.md"))):
        cells = [CELL_OPTIONS.sub("", cell) for cell in CODE_CELL.findall(md.read_text(encoding="utf-8"))]
        lines = [ln for cell in cells for ln in cell.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        target = into / f"notebook_{i}.py"
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(target)
    return written


def findings() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="gpucost-dead-code-") as tmp:
        cells = notebook_code(ROOT / "text", Path(tmp))
        paths = [str(ROOT / p) for p in SCANNED] + [str(p) for p in cells]
        paths.append(str(ROOT / "tools" / "dead_code_allowed.py"))
        command = [sys.executable, "-m", "vulture", *paths, "--min-confidence", MIN_CONFIDENCE]
        run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if run.returncode not in (0, 3) or run.stderr:  # 3: dead code found; anything else: a file vulture could not read
        raise SystemExit(f"tools/dead_code.py: vulture failed: {run.stderr.strip() or run.returncode}")
    out = run.stdout
    # vulture names files relative to the working directory (ROOT) where it can
    relative = [line.replace(str(ROOT) + "/", "", 1) for line in out.splitlines()]
    return [line for line in relative if line.startswith("gpucost_lab/")]


def main() -> int:
    found = findings()
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
