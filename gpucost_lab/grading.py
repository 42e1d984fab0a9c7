"""Grading the course lab (`labs/`, taught as the course's final step): 80% of the points passes.

Two tools, one rule:

- ``grade(notebook)`` is the instructor's autograder for one submission. It runs the standard nbgrader 0.9
  steps in a throw-away course directory built from the repository's own ``solutions/`` (``generate_assignment``
  to build the gradebook and checksums, ``autograde`` with a per-cell timeout, ``generate_feedback``) and reads
  the scores back from that gradebook. Test cells are read-only; nbgrader restores any edited one (hidden tests
  included) from the gradebook before running it, and a deleted one is put back, so changing the tests never
  raises a score. An answer that loops forever fails its cell after the timeout; the rest is still graded.
- ``self_check(notebook)`` is the learner's progress check: it runs the learner's own copy, whose test cells
  are the *visible* tests only, and counts the points they pass. Hidden tests run only when the lab is graded
  and may still fail, so a self-check is progress, never the grade.

Both pass at ``PASS_MARK_PERCENT`` of the maximum score, compared in exact fractions of whole points
(``meets_pass_mark``), so 8 of 10 passes and 7.99 of 10 does not, whatever the floating-point noise.
"""
from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator

#: The pass mark, in percent of the maximum score. The one place it is defined.
PASS_MARK_PERCENT = 80
#: nbgrader shows scores to 2 decimals (its feedback template rounds to 2); scores are compared at that precision.
SCORE_DECIMALS = 2
#: The lab graded when no assignment is named.
DEFAULT_ASSIGNMENT = "profile_training_loop"
#: The course id used in the gradebook (the same as in the repository's nbgrader_config.py).
COURSE_ID = "gpucost-lab"
#: Seconds each cell may run before it is interrupted and failed.
DEFAULT_TIMEOUT_S = 30
#: Set in the environment of the kernel a self-check starts, so the lab's own self-check cell does nothing there.
SELF_CHECK_ENV = "GPUCOST_LAB_SELF_CHECK"

HIDDEN_TESTS_NOTE = ("visible tests only: hidden tests run when the lab is graded and may still fail, so this is "
                     "progress, not your grade")

_STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# ---------------------------------------------------------------------------------------------- the pass mark

def _points(value: float | int | str) -> Fraction:
    """A score as an exact fraction, rounded to nbgrader's precision first."""
    return Fraction(str(round(float(value), SCORE_DECIMALS)))


def meets_pass_mark(score: float, max_score: float) -> bool:
    """True when ``score`` is at least ``PASS_MARK_PERCENT`` % of ``max_score`` (inclusive), in exact arithmetic."""
    maximum = _points(max_score)
    return maximum > 0 and _points(score) * 100 >= maximum * PASS_MARK_PERCENT


def points_to_pass(max_score: float) -> float:
    """The smallest score (at nbgrader's precision) that passes out of ``max_score``."""
    step = Fraction(1, 10 ** SCORE_DECIMALS)
    needed = _points(max_score) * PASS_MARK_PERCENT / 100
    return float(math.ceil(needed / step) * step)


def _points_text(points: float) -> str:
    """``12.8 points (13 in whole points)``: nbgrader's precision, and what it means when points are whole."""
    if float(points).is_integer():
        return f"{points:g} points"
    return f"{points:g} points ({math.ceil(points)} in whole points)"


def _percent(score: float, max_score: float) -> float:
    maximum = _points(max_score)
    return round(float(_points(score) * 100 / maximum), 2) if maximum > 0 else 0.0


# ---------------------------------------------------------------------------------------------- reports

@dataclass(frozen=True)
class GradeReport:
    """One autograded submission. ``failed`` lists graded cells that lost points, ``pending_manual`` the cells
    that still need a human grader (their points are not in ``score`` yet, and they are never counted as failed)."""

    score: float
    max_score: float
    percent: float
    passed: bool
    failed: tuple = ()
    pending_manual: tuple = ()
    feedback_html: str | None = None

    def to_dict(self) -> dict:
        return {"score": self.score, "max_score": self.max_score, "percent": self.percent, "passed": self.passed,
                "failed": [dict(f) for f in self.failed], "pending_manual": [dict(p) for p in self.pending_manual],
                "feedback_html": self.feedback_html}

    def text(self) -> str:
        verdict = "PASSED" if self.passed else "NOT PASSED"
        lines = [f"{self.score:g} / {self.max_score:g} points ({self.percent:.2f}%): {verdict} "
                 f"(pass mark {PASS_MARK_PERCENT}% = {_points_text(points_to_pass(self.max_score))})"]
        lines += [f"  ✗ {f['cell']}: {f['points']:g} / {f['max_points']:g}  {f['message']}" for f in self.failed]
        if self.pending_manual:
            pending = sum(p["max_points"] for p in self.pending_manual)
            lines.append(f"awaiting manual grading ({pending:g} points, not counted yet, not failed): "
                         + ", ".join(p["cell"] for p in self.pending_manual))
        if self.feedback_html:
            lines.append(f"feedback: {self.feedback_html}")
        return "\n".join(lines)


@dataclass(frozen=True)
class SelfCheckReport:
    """The learner's progress on the visible tests of their own copy of a lab (``note`` says what it is not)."""

    notebook: str
    points_passed: float
    visible_points: float
    manual_points: float
    max_points: float
    percent: float
    points_to_pass: float
    reaches_pass_mark: bool
    failed: tuple = ()
    note: str = HIDDEN_TESTS_NOTE

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["failed"] = [dict(f) for f in self.failed]
        out["pass_mark_percent"] = PASS_MARK_PERCENT
        return out

    def text(self) -> str:
        lines = [f"Self-check of {self.notebook} (the saved file): {self.points_passed:g} of {self.max_points:g} "
                 f"points pass their visible tests ({self.percent:.0f}%); passing needs {PASS_MARK_PERCENT}% = "
                 f"{_points_text(self.points_to_pass)}."]
        if self.reaches_pass_mark:
            lines.append("✓ On track for the pass mark, but this counts visible tests only: hidden tests run when "
                         "your lab is graded and may still fail.")
        else:
            missing = round(max(0.0, self.points_to_pass - self.points_passed), SCORE_DECIMALS)
            lines.append(f"Not there yet: {_points_text(missing)} more needed. "
                         "Hidden tests run when your lab is graded and may still fail.")
        lines += [f"  ✗ {f['cell']} ({f['max_points']:g} point{'' if f['max_points'] == 1 else 's'}): {f['message']}"
                  for f in self.failed]
        if self.manual_points:
            lines.append(f"{self.manual_points:g} points are graded by hand and are not counted here.")
        return "\n".join(lines)

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython shows the text, not the dataclass repr
        printer.text(self.text())


# ---------------------------------------------------------------------------------------------- inputs

def _read_notebook(path: Path, what: str = "notebook"):
    import nbformat

    if not path.exists():
        raise ValueError(f"{path}: no such file")
    if not path.is_file():
        raise ValueError(f"{path}: not a file")
    if path.suffix != ".ipynb":
        raise ValueError(f"{path}: not a Jupyter notebook (expected a .ipynb file, got {path.suffix or 'no suffix'!r})")
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not valid notebook JSON ({_one_line(err)})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError(f"{path}: not a notebook (no list of cells)")
    try:
        with _quiet_nbformat():
            nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # nbformat raises several types for structurally broken notebooks
        raise ValueError(f"{path}: unreadable {what} ({_one_line(err)})") from None
    return nb


@contextlib.contextmanager
def _quiet_nbformat() -> Iterator[None]:
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


def _one_line(err: BaseException | str) -> str:
    """The last line of an error or a log, without terminal colours."""
    text = _ANSI.sub("", str(err)).strip()
    if text:
        return text.splitlines()[-1].strip()
    return "" if isinstance(err, str) else type(err).__name__


def _nbgrader_meta(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def _grade_ids(nb) -> list[str]:
    return [m["grade_id"] for m in map(_nbgrader_meta, nb.cells) if isinstance(m.get("grade_id"), str)]


def default_source_root() -> Path:
    """The course's ``solutions/`` folder: ``$GPUCOST_LAB_SOURCE_ROOT`` if set, else the repository this package
    was installed from (an editable install), else the nearest folder above the working directory that holds
    ``nbgrader_config.py`` and ``solutions/`` (a non-editable install run from inside the course)."""
    if os.environ.get("GPUCOST_LAB_SOURCE_ROOT"):
        return Path(os.environ["GPUCOST_LAB_SOURCE_ROOT"])
    beside_package = Path(__file__).resolve().parent.parent
    for folder in (beside_package, *(p for p in (Path.cwd(), *Path.cwd().parents))):
        if (folder / "nbgrader_config.py").is_file() and (folder / "solutions").is_dir():
            return folder / "solutions"
    return beside_package / "solutions"  # reported as missing by the caller, with how to pass it


def detect_assignment(source_root: Path, submission_nb) -> str | None:
    """The assignment folder under ``source_root`` whose notebooks share the most grade ids with the submission."""
    submitted = set(_grade_ids(submission_nb))
    best, best_overlap = None, 0
    for folder in sorted(p for p in source_root.iterdir() if p.is_dir()):
        for notebook in folder.glob("*.ipynb"):
            overlap = len(submitted & set(_grade_ids(_read_notebook(notebook, "source notebook"))))
            if overlap > best_overlap:
                best, best_overlap = folder.name, overlap
    return best


def _source_notebook(source_root: Path, assignment: str, submission_nb, submission: Path) -> Path:
    folder = source_root / assignment
    if not folder.is_dir():
        raise ValueError(f"assignment {assignment!r} has no source folder {folder} (give another nbgrader source "
                         f"folder as source_root, --source-root on the command line)")
    notebooks = sorted(p for p in folder.glob("*.ipynb"))
    if not notebooks:
        raise ValueError(f"assignment {assignment!r}: no notebook in its source folder {folder}")
    submitted = set(_grade_ids(submission_nb))
    best, best_overlap = None, 0
    for candidate in notebooks:
        overlap = len(submitted & set(_grade_ids(_read_notebook(candidate, "source notebook"))))
        if overlap > best_overlap or (overlap == best_overlap and overlap and candidate.stem == submission.stem):
            best, best_overlap = candidate, overlap
    if best is None:
        raise ValueError(f"{submission}: has none of the cells of assignment {assignment!r} (no cell carries a "
                         f"grade id of {', '.join(p.name for p in notebooks)}); is it the right notebook?")
    return best


def _check_student(student: str) -> str:
    if not isinstance(student, str) or not _STUDENT_ID.match(student):
        raise ValueError(f"student must be 1-100 letters, digits, '_', '.', '@' or '-' starting with a letter or "
                         f"digit, got {student!r}")
    return student


def _check_timeout(timeout_s: object) -> int:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not float(timeout_s).is_integer() \
            or not 1 <= timeout_s <= 3600:
        raise ValueError(f"timeout_s must be a whole number of seconds from 1 to 3600, got {timeout_s!r}")
    return int(timeout_s)


# ---------------------------------------------------------------------------------------------- nbgrader

@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence what nbgrader, SQLAlchemy and the kernels write to stderr (nbgrader's log is captured instead)."""
    import warnings

    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to silence
        yield
        return
    try:
        with open(os.devnull, "w") as devnull, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            os.dup2(devnull.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Set environment variables for the duration (the kernels nbgrader starts inherit them)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _path_with_this_python() -> str:
    # nbgrader 0.9 runs the `alembic` console script by name when it creates a gradebook: find this environment's.
    here = str(Path(sys.executable).parent)
    parts = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join([here] + [p for p in parts if p and p != here])


def _quiet_logger() -> logging.Logger:
    logger = logging.getLogger("gpucost_lab.grading.nbgrader")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


def _run(converter) -> dict:
    """Run one nbgrader converter the way ``NbGraderAPI`` does (``nbgrader.utils.capture_log``)."""
    from nbgrader.utils import capture_log

    return capture_log(converter)


def _config(course: Path, timeout_s: int):
    from traitlets.config import Config

    c = Config()
    c.CourseDirectory.root = str(course)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = "source"
    c.CourseDirectory.release_directory = "release"
    c.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    c.Execute.timeout = timeout_s
    c.Execute.interrupt_on_timeout = True
    c.OverwriteCells.add_missing_cells = True
    return c


def _restore_missing_grade_cells(submission_nb, released_nb) -> list[str]:
    """Put back graded cells the learner deleted (or stripped of their metadata), where they were.

    nbgrader's own ``OverwriteCells.add_missing_cells`` only inserts after a graded or answer cell; this places each
    missing cell after the nearest earlier nbgrader cell the submission still has (else before the nearest later
    one, else at the end). The released copy is inserted; nbgrader then replaces its source with the gradebook's
    (hidden tests included), like any edited read-only cell.
    """
    present = {m.get("grade_id"): i for i, m in enumerate(map(_nbgrader_meta, submission_nb.cells))}
    released = [c for c in released_nb.cells if _nbgrader_meta(c).get("grade_id")]
    restored = []
    for pos, cell in enumerate(released):
        meta = _nbgrader_meta(cell)
        if not meta.get("grade") or meta["grade_id"] in present:
            continue
        before = [present[_nbgrader_meta(c)["grade_id"]] for c in released[:pos]
                  if _nbgrader_meta(c)["grade_id"] in present]
        after = [present[_nbgrader_meta(c)["grade_id"]] for c in released[pos + 1:]
                 if _nbgrader_meta(c)["grade_id"] in present]
        index = max(before) + 1 if before else (min(after) if after else len(submission_nb.cells))
        new = copy.deepcopy(cell)
        new.pop("id", None)
        submission_nb.cells.insert(index, new)
        present = {m.get("grade_id"): i for i, m in enumerate(map(_nbgrader_meta, submission_nb.cells))}
        restored.append(meta["grade_id"])
    return restored


def _error_message(cell, timeout_s: int | None = None) -> str | None:
    errors = [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    if any(out.get("ename") == "CellTimeoutError" for out in errors):
        limit = f"{timeout_s} s " if timeout_s else ""
        return f"CellTimeoutError: still running at the {limit}time limit, so it was interrupted"
    for out in errors:
        ename, evalue = out.get("ename") or "Error", _one_line(out.get("evalue") or "")
        return f"{ename}: {evalue}" if evalue and evalue != ename else ename
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stderr":
            return f"wrote to stderr, which fails a graded test: {_one_line(out.get('text', ''))}"
    return None


def _cell_messages(nb, timeout_s: int | None = None) -> dict[str, str]:
    """For each graded cell of an executed notebook, why it lost points (its own error, and an earlier one)."""
    messages, earlier = {}, None
    for cell in nb.cells:
        meta = _nbgrader_meta(cell)
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


def _root_cause(result: dict) -> str:
    """The most specific error line in a failed nbgrader run (its final line only says "see the traceback")."""
    text = _ANSI.sub("", (result.get("log") or "") + "\n" + (result.get("error") or ""))
    causes = [line.strip() for line in text.splitlines()
              if re.match(r"^\s*[\w.]*(Error|Exception|Exit)\b.*", line) and "NbGraderException" not in line]
    return causes[-1] if causes else _one_line(result.get("error") or result.get("log") or "unknown error")


def grade(notebook_path: str | os.PathLike, student: str = "student", assignment: str | None = None,
          timeout_s: int = DEFAULT_TIMEOUT_S, *, source_root: str | os.PathLike | None = None,
          feedback_dir: str | os.PathLike | None = None, course_dir: str | os.PathLike | None = None) -> GradeReport:
    """Autograde one submitted notebook with nbgrader and report its score against the pass mark.

    ``source_root`` is an nbgrader source directory holding ``<assignment>/<notebook>.ipynb`` (default:
    :func:`default_source_root`); ``assignment`` defaults to the one whose cells the submission carries. The generated feedback is copied to ``feedback_dir`` (default: beside the
    submission) as ``<notebook stem>_feedback.html``. The course is built in a temporary directory and removed,
    unless ``course_dir`` names an empty or new directory to build it in and keep (to inspect the gradebook).
    Raises ``ValueError`` naming the file and the problem for unusable input.
    """
    from nbgrader.api import Gradebook
    from nbgrader.converters import Autograde, GenerateAssignment, GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    import nbformat

    submission = Path(notebook_path)
    student = _check_student(student)
    timeout_s = _check_timeout(timeout_s)
    nb = _read_notebook(submission)
    root = Path(source_root) if source_root is not None else default_source_root()
    if not root.is_dir():
        raise ValueError(f"source_root {root} is not a directory (give the nbgrader source folder, such as the "
                         f"repository's solutions/)")
    if assignment is None:
        assignment = detect_assignment(root, nb) or DEFAULT_ASSIGNMENT
    if not isinstance(assignment, str) or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", assignment):
        raise ValueError(f"assignment must be a folder name of letters, digits, '_', '.' or '-', got {assignment!r}")
    source_nb_path = _source_notebook(root, assignment, nb, submission)

    with contextlib.ExitStack() as stack:
        if course_dir is None:
            course = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpucost-grade-")))
        else:
            course = Path(course_dir)
            if course.exists() and any(course.iterdir()):
                raise ValueError(f"course_dir {course} must be empty or new")
            course.mkdir(parents=True, exist_ok=True)
        course = course.resolve()
        shutil.copytree(root / assignment, course / "source" / assignment,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc"))
        stack.enter_context(_environment(PATH=_path_with_this_python()))
        stack.enter_context(_quiet_stderr())
        config = _config(course, timeout_s)
        log = _quiet_logger()

        def run(converter_class, **traits):
            coursedir = CourseDirectory(config=config, log=log, **traits)
            converter = converter_class(coursedir=coursedir, config=config, log=log)
            converter.force = True
            result = _run(converter)
            return None if result["success"] else _root_cause(result)

        problem = run(GenerateAssignment, assignment_id=assignment, student_id=".")
        if problem:
            raise GradingError(f"nbgrader could not generate assignment {assignment!r} from {root}: {problem}")

        released_nb = _read_notebook(course / "release" / assignment / source_nb_path.name, "released notebook")
        _restore_missing_grade_cells(nb, released_nb)
        target = course / "submitted" / student / assignment / source_nb_path.name
        target.parent.mkdir(parents=True)
        with _quiet_nbformat():
            nbformat.write(nb, str(target))

        problem = run(Autograde, assignment_id=assignment, student_id=student)
        if problem:
            raise ValueError(f"{submission}: nbgrader could not autograde it: {problem}")
        autograded = _read_notebook(course / "autograded" / student / assignment / source_nb_path.name,
                                    "autograded notebook")
        messages = _cell_messages(autograded, timeout_s)

        problem = run(GenerateFeedback, assignment_id=assignment, student_id=student)
        feedback_html = None
        produced = course / "feedback" / student / assignment / f"{source_nb_path.stem}.html"
        if not problem and produced.exists():
            out_dir = Path(feedback_dir) if feedback_dir is not None else submission.resolve().parent
            out_dir.mkdir(parents=True, exist_ok=True)
            stem = submission.stem if feedback_dir is None else f"{student}_{submission.stem}"
            dest = out_dir / f"{stem}_feedback.html"
            shutil.copyfile(produced, dest)
            feedback_html = str(dest)

        order = {gid: i for i, gid in enumerate(_grade_ids(autograded))}
        with Gradebook(config.CourseDirectory.db_url, COURSE_ID) as gb:
            sub = gb.find_submission(assignment, student)
            score, max_score = float(sub.score), float(sub.max_score)
            grades = sorted((g for n in sub.notebooks for g in n.grades), key=lambda g: order.get(g.name, 1 << 30))
            failed, pending = [], []
            for g in grades:
                if g.needs_manual_grade:
                    pending.append({"cell": g.name, "max_points": float(g.max_score)})
                elif _points(g.score) < _points(g.max_score):
                    failed.append({"cell": g.name, "points": float(g.score), "max_points": float(g.max_score),
                                   "message": messages.get(g.name) or "no response"})

    score, max_score = round(score, SCORE_DECIMALS), round(max_score, SCORE_DECIMALS)
    return GradeReport(score=score, max_score=max_score, percent=_percent(score, max_score),
                       passed=meets_pass_mark(score, max_score), failed=tuple(failed), pending_manual=tuple(pending),
                       feedback_html=feedback_html)


class GradingError(RuntimeError):
    """nbgrader could not build the course from the source (a problem with the source, not the submission)."""


# ---------------------------------------------------------------------------------------------- self-check

def self_check(path: str | os.PathLike, timeout_s: int = DEFAULT_TIMEOUT_S) -> SelfCheckReport | None:
    """Run the saved notebook at ``path`` (the learner's copy: visible tests only) and report the points its
    test cells pass, against the pass mark. Call it from the lab's last cell after saving.

    Returns ``None`` without running anything inside a self-check or an nbgrader run (so the lab's own
    self-check cell does not start itself again). Hidden tests are not run: they may still fail when graded.
    """
    if os.environ.get(SELF_CHECK_ENV) or os.environ.get("NBGRADER_EXECUTION"):
        return None
    from nbclient import NotebookClient
    from nbgrader.utils import determine_grade

    notebook = Path(path)
    timeout_s = _check_timeout(timeout_s)
    nb = _read_notebook(notebook)
    graded = [c for c in nb.cells if _nbgrader_meta(c).get("grade")]
    if not graded:
        raise ValueError(f"{notebook}: has no graded test cells to check (is it a lab notebook?)")
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None
    client = NotebookClient(nb, timeout=timeout_s, interrupt_on_timeout=True, allow_errors=True,
                            kernel_name="python3", resources={"metadata": {"path": str(notebook.resolve().parent)}},
                            error_on_timeout={"ename": "CellTimeoutError", "evalue": "", "traceback": [
                                "CellTimeoutError: No reply from kernel before timeout"]})
    env = dict(os.environ, **{SELF_CHECK_ENV: "1"})
    env["PATH"] = _path_with_this_python()
    with _quiet_nbformat(), _quiet_stderr():
        client.execute(env=env)

    messages = _cell_messages(nb, timeout_s)
    passed = visible = manual = 0.0
    failed = []
    for cell in graded:
        meta = _nbgrader_meta(cell)
        points = float(meta.get("points", 0) or 0)
        if meta.get("solution") or cell.get("cell_type") != "code":
            manual += points  # answers graded by hand: not checkable here
            continue
        visible += points
        got, _ = determine_grade(cell)  # nbgrader's own rule: an error or stderr output fails the cell
        got = float(got or 0)
        passed += got
        if _points(got) < _points(points):
            failed.append({"cell": meta["grade_id"], "points": got, "max_points": points,
                           "message": messages.get(meta["grade_id"], "failed")})
    total = visible + manual
    report = SelfCheckReport(notebook=str(notebook), points_passed=round(passed, SCORE_DECIMALS),
                             visible_points=round(visible, SCORE_DECIMALS), manual_points=round(manual, SCORE_DECIMALS),
                             max_points=round(total, SCORE_DECIMALS), percent=_percent(passed, total),
                             points_to_pass=points_to_pass(total), reaches_pass_mark=meets_pass_mark(passed, total),
                             failed=tuple(failed))
    return report
