"""A submission to grade: read and checked, its graded cells put back in order, and why its cells lost points.

:func:`read_submission` checks the input (``ValueError`` for unusable input, naming the file and the problem; a
notebook that is a link or a special file is refused, and the notebook is read through no link: :mod:`.links`);
:func:`drop_duplicate_grade_ids` and :func:`restore_missing_grade_cells` prepare the notebook for nbgrader;
:func:`cell_messages` reads an executed notebook back (also for the learner's self-check).
"""

from __future__ import annotations

import copy
import dataclasses
import os
from pathlib import Path

from gpucost_lab._validate import InputError
from gpucost_lab.grading.links import ALLOWED, read_plain, refusal
from gpucost_lab.grading.notebooks import (
    DEFAULT_ASSIGNMENT,
    check_assignment,
    check_notebook_size,
    check_source_root,
    check_student,
    detect_assignment,
    nbgrader_meta,
    notebook_json,
    one_line,
    quiet_nbformat,
    read_notebook,
    source_notebook,
)


@dataclasses.dataclass
class Submission:
    """One submission, read and checked: what grading it needs besides a course."""

    path: Path
    nb: object  # the notebook, as read
    student: str  # the id it is graded under in the gradebook
    learner: str  # the id its lab's numbers derive from ("" for the self-study lab)
    root: Path  # the nbgrader source folder
    assignment: str
    notebook_name: str  # the source notebook it is graded against, as a file name


def read_submission(
    notebook_path: str | os.PathLike,
    student: str | None = None,
    assignment: str | None = None,
    *,
    source_root: str | os.PathLike | None = None,
    self_study: bool = False,
) -> Submission:
    """The submission at ``notebook_path``, checked as :func:`~gpucost_lab.grading.grade` describes;
    ``ValueError`` for unusable input."""
    submission = Path(notebook_path)
    learner = "" if student is None or self_study else check_student(student)
    student = check_student("student" if student is None else student)
    nb = _read_submitted(submission)
    root = check_source_root(source_root)
    assignment = check_assignment(
        detect_assignment(root, nb) or DEFAULT_ASSIGNMENT if assignment is None else assignment
    )
    source_nb_path = source_notebook(root, assignment, nb, submission)
    return Submission(submission, nb, student, learner, root, assignment, source_nb_path.name)


def _read_submitted(path: Path):
    """The notebook at ``path``, which must be a plain file of its own: ``InputError`` naming the notebook when it is
    a symbolic link (to the lab's solution, say), a hard link or a special file. It is read through an ``O_NOFOLLOW``
    descriptor, checked on the open file; its JSON gets the same one-line errors as any other notebook."""
    refused = refusal(path)
    if refused:
        raise InputError("notebook", f"notebook {str(path)!r} is {refused.why}; {ALLOWED}")
    if not path.is_file() or path.suffix != ".ipynb":
        return read_notebook(path)  # no such file, not a file, not a .ipynb: its line, before anything is read
    import nbformat

    check_notebook_size(path, path.stat().st_size)
    try:
        text = read_plain(path, "notebook").decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not valid notebook JSON ({one_line(err)})") from None
    notebook_json(path, text)  # nesting and nbformat checked, one line each
    try:
        with quiet_nbformat():
            return nbformat.reads(text, as_version=4)
    except Exception as err:  # nbformat raises several types for structurally broken notebooks
        raise ValueError(f"{path}: unreadable notebook ({one_line(err)})") from None


def restore_missing_grade_cells(submission_nb, released_nb) -> list[str]:
    """Put back graded cells the learner deleted (or stripped of their metadata), where they were.

    nbgrader's own ``OverwriteCells.add_missing_cells`` only inserts after a graded or answer cell; this places each
    missing cell after the nearest earlier nbgrader cell the submission still has (else before the nearest later
    one, else at the end). The released copy is inserted; nbgrader then replaces its source with the gradebook's
    (hidden tests included), like any edited read-only cell.
    """
    present = {m.get("grade_id"): i for i, m in enumerate(map(nbgrader_meta, submission_nb.cells))}
    released = [c for c in released_nb.cells if nbgrader_meta(c).get("grade_id")]
    restored = []
    for pos, cell in enumerate(released):
        meta = nbgrader_meta(cell)
        if not meta.get("grade") or meta["grade_id"] in present:
            continue
        before = [
            present[nbgrader_meta(c)["grade_id"]] for c in released[:pos] if nbgrader_meta(c)["grade_id"] in present
        ]
        after = [
            present[nbgrader_meta(c)["grade_id"]]
            for c in released[pos + 1 :]
            if nbgrader_meta(c)["grade_id"] in present
        ]
        index = max(before) + 1 if before else (min(after) if after else len(submission_nb.cells))
        new = copy.deepcopy(cell)
        new.pop("id", None)
        submission_nb.cells.insert(index, new)
        present = {m.get("grade_id"): i for i, m in enumerate(map(nbgrader_meta, submission_nb.cells))}
        restored.append(meta["grade_id"])
    return restored


def drop_duplicate_grade_ids(nb) -> list[str]:
    """Cells copied in JupyterLab keep their nbgrader metadata: keep the first cell of each grade id as graded and
    make every later copy a plain cell (nbgrader would otherwise fail on it); the ids that had copies."""
    seen, copies = set(), []
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if not isinstance(gid, str):
            continue
        if gid in seen:
            cell.get("metadata", {}).pop("nbgrader", None)
            copies.append(gid)
        seen.add(gid)
    return list(dict.fromkeys(copies))


def _error_message(cell, timeout_s: int | None = None) -> str | None:
    errors = [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    if any(out.get("ename") == "CellTimeoutError" for out in errors):
        limit = f"{timeout_s} s " if timeout_s else ""
        return f"CellTimeoutError: still running at the {limit}time limit, so it was interrupted"
    for out in errors:
        ename, evalue = out.get("ename") or "Error", one_line(out.get("evalue") or "")
        if ename in ("CheckFailed", "Miss"):  # a test graded by the grader (grading.checks), a check's own miss:
            # its sentence says it all
            return evalue
        return f"{ename}: {evalue}" if evalue and evalue != ename else ename
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            return f"wrote to stderr, which fails a graded test: {one_line(out.get('text', ''))}"
    return None


def cell_messages(nb, timeout_s: int | None = None) -> dict[str, str]:
    """For each graded cell of an executed notebook, why it lost points (its own error, and an earlier one)."""
    messages, earlier = {}, None
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        own = _error_message(cell, timeout_s) if cell.get("cell_type") == "code" else None
        if meta.get("grade"):
            text = own or "partial credit"
            if earlier and earlier[1] != own:
                text += f" (after an error in cell {earlier[0]}: {earlier[1]})"
            messages[meta["grade_id"]] = text
            earlier = None
        elif own and earlier is None:
            earlier = (meta.get("grade_id") or f"#{nb.cells.index(cell)}", own)
    return messages
