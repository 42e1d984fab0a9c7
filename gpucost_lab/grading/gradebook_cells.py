"""The gradebook decides what each cell of a submission is, never the submission's own metadata.

A learner can edit a notebook's JSON: strip the nbgrader metadata of the lab's setup cell, mark a test cell as a
solution, invent a grade id or paste a cell from another lab. nbgrader trusts those flags in places: a solution flag
on a test cell changes its checksum (``RuntimeError: Inconsistent checksums``), and a grade id the gradebook does not
know loses its id but keeps ``grade: true`` (``KeyError: 'grade_id'`` when scores are saved); either way no grade.

:class:`GradebookCells` (a sanitize step of autograde, before ``OverwriteCells``) sets each known cell's flags and
points to the gradebook's and drops the nbgrader metadata of a cell the gradebook does not know, with a warning: the
cell is then the learner's own, run but not graded. A cell whose metadata nbgrader's schema still refuses (a key it
does not know) is dropped with a note, and the rest is graded: such a submission earns what its valid cells earn.
:func:`setup_sources` gives the lab's setup cells from the instructor's source notebook, which the grader runs
whatever the submission holds (``run.run_submission``).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

FLAGS = ("grade", "solution", "locked", "task", "points")


def gradebook_flags(db_url: str, notebook: str, assignment: str) -> dict[str, dict]:
    """Each cell the gradebook knows for ``notebook`` of ``assignment``: its grade id -> its nbgrader flags."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        nb = gb.find_notebook(notebook, assignment)
        truth: dict[str, dict[str, bool | float]] = {
            c.name: {"grade": False, "solution": False, "locked": bool(c.locked), "task": False}
            for c in nb.source_cells
        }
        for c in nb.grade_cells:
            truth.setdefault(c.name, {}).update(grade=True, points=float(c.max_score))
        for c in nb.solution_cells:
            truth.setdefault(c.name, {})["solution"] = True
        for c in nb.task_cells:
            truth.setdefault(c.name, {}).update(task=True, points=float(c.max_score))
    return truth


def apply_flags(nb, truth: dict[str, dict]) -> list[str]:
    """Set each cell's nbgrader flags to ``truth``'s; drop the metadata of cells it does not know. The notes."""
    notes = []
    for cell in nb.cells:
        metadata = cell.get("metadata", {})
        if "nbgrader" not in metadata:
            continue
        meta = metadata["nbgrader"]
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if not isinstance(grade_id, str) or grade_id not in truth:
            del metadata["nbgrader"]
            if grade_id:
                notes.append(f"cell {str(grade_id)[:80]!r} is not a cell of this lab (pasted from another?): ignored")
            continue
        kept = {k: v for k, v in meta.items() if k not in FLAGS}
        known = truth[grade_id]
        changed = sorted(
            k
            for k in FLAGS
            if k in known and meta.get(k) != known[k] and not (k == "points" and _same(meta.get(k), known[k]))
        )
        metadata["nbgrader"] = {**kept, **known}
        if changed:
            notes.append(f"cell {grade_id}: its {', '.join(changed)} set back to the lab's")
    return notes + _drop_refused(nb)


def _drop_refused(nb) -> list[str]:
    """Drop each cell whose nbgrader metadata nbgrader's schema refuses (a key it does not know, a value of the wrong
    type): the rest of the notebook is graded, never the whole of it refused. The notes, one a cell."""
    from nbgrader.nbgraderformat import MetadataValidator

    validator, kept, notes = MetadataValidator(), [], []
    for cell in nb.cells:
        try:
            validator.validate_cell(cell)
        except Exception as err:  # noqa: BLE001  (jsonschema's ValidationError, nbgrader's schema version errors)
            grade_id = str(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", ""))[:80]
            said = str(getattr(err, "message", err)).splitlines()[0][:200]
            notes.append(f"cell {grade_id!r}: nbgrader refuses its metadata ({said}): dropped")
            continue
        kept.append(cell)
    nb.cells = kept
    return notes


def _same(a, b) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


class GradebookCells(NbGraderPreprocessor):
    """Autograde's sanitize step as the module docstring says (``course.autograde_steps``)."""

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        db_url, notebook, assignment = info.get("db_url"), info.get("notebook"), info.get("assignment")
        if not (db_url and notebook and assignment):
            return nb, resources
        _check_submitted(nb, resources, notebook)
        for note in apply_flags(nb, gradebook_flags(db_url, notebook, assignment)):
            self.log.warning(note)
        return nb, resources


def _check_submitted(nb, resources, notebook: str) -> None:
    """The bounds ``grade`` checks when it reads a submission, for the plain ``nbgrader autograde`` too: the size,
    and nbformat 4 (nbgrader upgrades an nbformat 3 notebook as it reads it, noting ``orig_nbformat``)."""
    from gpucost_lab.grading.notebooks import check_notebook_size

    path = Path(resources.get("metadata", {}).get("path") or ".") / f"{notebook}.ipynb"
    if path.is_file():
        check_notebook_size(path, path.stat().st_size)
    original = nb.get("metadata", {}).get("orig_nbformat")
    if original is not None and original != 4:
        raise ValueError(
            f"{path}: an nbformat {original!r} notebook; allowed: nbformat 4 (open it in JupyterLab 4 and save it)"
        )


def _is_setup(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return (
        cell.get("cell_type") == "code"
        and isinstance(meta, dict)
        and bool(meta.get("locked"))
        and not meta.get("grade")
        and not meta.get("solution")
    )


def setup_sources(source_folder: Path | None, notebook: str | None) -> list[str] | None:
    """The lab's setup cells (read-only code, neither answer nor test), in order, from the instructor's source
    notebook; None where it is not at hand."""
    if source_folder is None or not notebook:
        return None
    path = Path(source_folder) / f"{notebook}.ipynb"
    if not path.is_file():
        return None
    source = nbformat.read(path, as_version=4)
    return [cell.source for cell in source.cells if _is_setup(cell)]
