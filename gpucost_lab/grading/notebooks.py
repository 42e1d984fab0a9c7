"""Reading lab notebooks and their nbgrader metadata; finding the assignment a submission belongs to."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

from gpucost_lab._validate import InputError

#: The lab graded when no assignment is named.
DEFAULT_ASSIGNMENT = "profile_training_loop"
#: Seconds each cell may run before it is interrupted and failed.
DEFAULT_TIMEOUT_S = 30

_STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
ANSI_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


#: Largest notebook read for grading: a lab with every output kept is under 2 MB; a bigger one is refused before it is
#: parsed (a 100 MB notebook took a minute and 1.1 GB to grade, and gave a 100 MB feedback page).
MAX_NOTEBOOK_BYTES = 16 * 2**20
#: Deepest nesting of JSON lists and objects in a notebook: nbformat 4 needs about 8; deeper ones are refused by name
#: rather than left to a RecursionError.
MAX_NOTEBOOK_DEPTH = 64


def check_notebook_size(path: Path, size: int) -> None:
    """``ValueError`` for a notebook of ``size`` bytes over :data:`MAX_NOTEBOOK_BYTES`."""
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(
            f"{path}: a notebook of {size:,} bytes is over the {MAX_NOTEBOOK_BYTES:,} bytes grading reads; "
            f"clear the large outputs and save it again"
        )


def notebook_json(path: Path, text: str) -> dict:
    """``text`` parsed as a notebook's JSON: nesting and format checked, one line naming the file otherwise."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid notebook JSON ({one_line(err)})") from None
    except RecursionError:  # nested past what json reads, so past the limit below
        raw = too_deep = True
    else:
        too_deep = _depth_over(raw, MAX_NOTEBOOK_DEPTH)
    if too_deep:
        raise ValueError(f"{path}: JSON nested over {MAX_NOTEBOOK_DEPTH} levels deep; not a notebook JupyterLab saves")
    if isinstance(raw, dict) and "nbformat" in raw and raw["nbformat"] != 4:
        raise ValueError(
            f"{path}: an nbformat {raw['nbformat']!r} notebook; allowed: nbformat 4 (open it in JupyterLab 4 and "
            f"save it)"
        )
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError(f"{path}: not a notebook (no list of cells)")
    return raw


def _depth_over(value, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def read_notebook(path: Path, what: str = "notebook"):
    """The notebook at ``path``, checked and read; ``ValueError`` naming the file (and ``what`` it is) otherwise."""
    import nbformat

    if not path.exists():
        raise ValueError(f"{path}: no such file")
    if not path.is_file():
        raise ValueError(f"{path}: not a file")
    if path.suffix != ".ipynb":
        raise ValueError(f"{path}: not a Jupyter notebook (expected a .ipynb file, got {path.suffix or 'no suffix'!r})")
    check_notebook_size(path, path.stat().st_size)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not valid notebook JSON ({one_line(err)})") from None
    notebook_json(path, text)
    try:
        with quiet_nbformat():
            nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # nbformat raises several types for structurally broken notebooks
        raise ValueError(f"{path}: unreadable {what} ({one_line(err)})") from None
    return nb


@contextlib.contextmanager
def quiet_nbformat() -> Iterator[None]:
    """Silence nbformat's warnings and log (a notebook's validation notes) for the duration."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logger = logging.getLogger("nbformat")
        old = logger.level
        logger.setLevel(logging.CRITICAL)
        try:
            yield
        finally:
            logger.setLevel(old)


def one_line(err: BaseException | str) -> str:
    """The last line of an error or a log, without terminal colours."""
    text = ANSI_ESCAPES.sub("", str(err)).strip()
    if text:
        return text.splitlines()[-1].strip()
    return "" if isinstance(err, str) else type(err).__name__


def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader metadata ({} where it has none, or none that is a dict)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def grade_ids(nb) -> list[str]:
    """The grade ids of ``nb``'s cells, in order."""
    return [m["grade_id"] for m in map(nbgrader_meta, nb.cells) if isinstance(m.get("grade_id"), str)]


def default_source_root() -> Path:
    """The course's ``solutions/`` folder: ``$GPUCOST_LAB_SOURCE_ROOT`` if set, else the repository this package
    was installed from (an editable install), else the nearest folder above the working directory that holds
    ``nbgrader_config.py`` and ``solutions/`` (a non-editable install run from inside the course)."""
    if os.environ.get("GPUCOST_LAB_SOURCE_ROOT"):
        return Path(os.environ["GPUCOST_LAB_SOURCE_ROOT"])
    beside_package = Path(__file__).resolve().parents[2]  # gpucost_lab/grading/notebooks.py -> the repository
    for folder in (beside_package, *(p for p in (Path.cwd(), *Path.cwd().parents))):
        if (folder / "nbgrader_config.py").is_file() and (folder / "solutions").is_dir():
            return folder / "solutions"
    return beside_package / "solutions"  # reported as missing by the caller, with how to pass it


def detect_assignment(source_root: Path, submission_nb) -> str | None:
    """The assignment folder under ``source_root`` whose notebooks share the most grade ids with the submission."""
    submitted = set(grade_ids(submission_nb))
    best, best_overlap = None, 0
    for folder in sorted(p for p in source_root.iterdir() if p.is_dir()):
        for notebook in folder.glob("*.ipynb"):
            overlap = len(submitted & set(grade_ids(read_notebook(notebook, "source notebook"))))
            if overlap > best_overlap:
                best, best_overlap = folder.name, overlap
    return best


def source_notebook(source_root: Path, assignment: str, submission_nb, submission: Path) -> Path:
    """The notebook of ``assignment`` the submission is graded against: the one sharing the most grade ids with it
    (a tie goes to the one named as ``submission``); ``ValueError`` when none shares any."""
    folder = source_root / assignment
    if not folder.is_dir():
        raise InputError(
            "assignment",
            f"assignment {assignment!r} has no source folder {folder} (give another nbgrader source "
            f"folder as source_root, --source-root on the command line)",
        )
    notebooks = sorted(p for p in folder.glob("*.ipynb"))
    if not notebooks:
        raise InputError("assignment", f"assignment {assignment!r}: no notebook in its source folder {folder}")
    submitted = set(grade_ids(submission_nb))
    best, best_overlap = None, 0
    for candidate in notebooks:
        overlap = len(submitted & set(grade_ids(read_notebook(candidate, "source notebook"))))
        if overlap > best_overlap or (overlap == best_overlap and overlap and candidate.stem == submission.stem):
            best, best_overlap = candidate, overlap
    if best is None:
        raise ValueError(
            f"{submission}: has none of the cells of assignment {assignment!r} (no cell carries a "
            f"grade id of {', '.join(p.name for p in notebooks)}); is it the right notebook?"
        )
    return best


def check_student(student: str) -> str:
    """``student`` if it is 1-100 letters, digits, '_', '.', '@' or '-', starting with a letter or digit (a name
    for the gradebook and the course's folders); ``ValueError`` otherwise."""
    if not isinstance(student, str) or not _STUDENT_ID.match(student):
        raise InputError(
            "student",
            f"student must be 1-100 letters, digits, '_', '.', '@' or '-' starting with a letter or "
            f"digit, got {student!r}",
        )
    return student


def check_timeout(timeout_s: object) -> int:
    """``timeout_s`` as whole seconds per cell, from 1 to 3600; ``ValueError`` otherwise."""
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, (int, float))
        or not float(timeout_s).is_integer()
        or not 1 <= timeout_s <= 3600
    ):
        raise InputError("timeout_s", f"timeout_s must be a whole number of seconds from 1 to 3600, got {timeout_s!r}")
    return int(timeout_s)


def check_source_root(source_root: str | os.PathLike | None) -> Path:
    """The nbgrader source folder (default: :func:`default_source_root`); ``ValueError`` unless it is a folder."""
    root = Path(source_root) if source_root is not None else default_source_root()
    if source_root is None and not os.environ.get("GPUCOST_LAB_SOURCE_ROOT") and not root.is_dir():
        raise InputError(  # the user gave no folder: say where it was looked for
            "source_root",
            f"source_root was not given, and no nbgrader source folder was found (solutions/ beside "
            f"nbgrader_config.py in {str(root.parent)!r}, where the package was installed from, in the working "
            f"directory or in a folder above it); allowed: --source-root naming the course's solutions/ folder, "
            f"or $GPUCOST_LAB_SOURCE_ROOT",
        )
    if not root.is_dir():
        raise InputError(
            "source_root",
            f"source_root {str(root)!r} is not a directory; allowed: the nbgrader source folder, such "
            f"as the repository's solutions/",
        )
    return root


def check_assignment(assignment: object) -> str:
    """``assignment`` if it is a plain folder name; ``ValueError`` otherwise."""
    if not isinstance(assignment, str) or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", assignment):
        raise InputError(
            "assignment", f"assignment must be a folder name of letters, digits, '_', '.' or '-', got {assignment!r}"
        )
    return assignment
