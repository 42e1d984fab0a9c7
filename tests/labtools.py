"""What the lab and chapter tests share: nbgrader metadata, the labs' files, and submissions built from the sources.

A lab's source (``solutions/<lab>/<lab>.ipynb``) holds each answer between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` and each hidden test between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``; its
release (``labs/<lab>/<lab>.ipynb``) is what nbgrader generates from it. A learner who answers everything submits
the source's answers without the marker lines: every line holding ``### `` is dropped.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
MARKER = "### "  # the prefix of nbgrader's BEGIN/END SOLUTION and BEGIN/END HIDDEN TESTS lines


def source_path(lab: str) -> Path:
    """The nbgrader source of ``lab``: answers and hidden tests in place."""
    return ROOT / "solutions" / lab / f"{lab}.ipynb"


def release_path(lab: str) -> Path:
    """What learners receive: ``lab`` as nbgrader generates it from its source."""
    return ROOT / "labs" / lab / f"{lab}.ipynb"


def meta(cell) -> dict:
    """A cell's nbgrader metadata ({} for a cell nbgrader does not know)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def cells(nb) -> dict:
    """The cells nbgrader knows, by grade_id."""
    return {meta(c)["grade_id"]: c for c in nb.cells if meta(c).get("grade_id")}


def is_check(cell) -> bool:
    """A graded test cell (graded, not an answer cell)."""
    return bool(meta(cell).get("grade")) and not meta(cell).get("solution")


def without_markers(source: str) -> str:
    """``source`` as a learner would have it: the nbgrader marker lines dropped, everything else kept."""
    return "\n".join(line for line in source.splitlines() if MARKER not in line)


def learner_copy(path: Path):
    """The notebook at ``path``, every cell's marker lines dropped: a source as a learner who answered all submits."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.source = without_markers(cell.source)
    return nb


def answered_release(lab: str, answered: set[str] | None = None):
    """``lab``'s release with the source's answers (markers dropped) in the ``answered`` answer cells (None: all)."""
    source = cells(nbformat.read(source_path(lab), as_version=4))
    release = nbformat.read(release_path(lab), as_version=4)
    for cell in release.cells:
        gid = meta(cell).get("grade_id")
        if meta(cell).get("solution") and (answered is None or gid in answered):
            cell.source = without_markers(source[gid].source)
    return release


def write_submission(nb, directory: Path, lab: str) -> Path:
    """``nb`` written as ``directory/<lab>.ipynb`` (the name a submission has); its path."""
    path = directory / f"{lab}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def checks_after(lab: str, answer_gid: str) -> set[str]:
    """The graded cells of ``lab`` that follow the answer cell ``answer_gid``, up to the next answer cell."""
    tests, current = {}, None
    for cell in nbformat.read(source_path(lab), as_version=4).cells:
        if meta(cell).get("solution"):
            current = meta(cell)["grade_id"]
        elif meta(cell).get("grade") and current:
            tests.setdefault(current, set()).add(meta(cell)["grade_id"])
    return tests[answer_gid]


def course_copy(directory: Path) -> Path:
    """A copy of the course's nbgrader side (``solutions/`` and ``nbgrader_config.py``) in ``directory/course``."""
    course = directory / "course"
    shutil.copytree(ROOT / "solutions", course / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    return course


def generated_release(lab: str, directory: Path):
    """``lab``'s release as ``nbgrader generate_assignment`` writes it now, from a course copied into ``directory``."""
    course = course_copy(directory)
    nbgrader = Path(sys.executable).with_name("nbgrader")
    subprocess.run(
        [str(nbgrader), "generate_assignment", lab, "--force", "--no-db", "--log-level=ERROR"],
        cwd=course,
        check=True,
        capture_output=True,
    )
    return nbformat.read(course / "labs" / lab / f"{lab}.ipynb", as_version=4)
