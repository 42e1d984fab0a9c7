"""``grade``: one submission through nbgrader's steps in a throw-away course; scores read from its gradebook.

The steps are separate so that a class is graded with the very same ones (:mod:`gpucost_lab.class_grading`):
:func:`read_submission` checks the input, :func:`generate_course` runs ``generate_assignment`` (once per class
there), :func:`autograde_in` runs ``autograde`` (and ``generate_feedback`` when asked) for one submission and
reads its scores; with ``forget`` it then removes the submission, leaving the course as generated.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .notebooks import (
    _ANSI,
    DEFAULT_ASSIGNMENT,
    DEFAULT_TIMEOUT_S,
    _check_assignment,
    _check_source_root,
    _check_student,
    _check_timeout,
    _grade_ids,
    _nbgrader_meta,
    _one_line,
    _quiet_nbformat,
    _read_notebook,
    _source_notebook,
    detect_assignment,
)
from .passmark import SCORE_DECIMALS, _percent, _points, meets_pass_mark
from .reports import GradeReport

#: The course id used in the gradebook (the same as in the repository's nbgrader_config.py).
COURSE_ID = "gpucost-lab"


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
    autograde_steps(c)
    c.SandboxedExecute.timeout = timeout_s
    return c


def autograde_steps(c) -> None:
    """nbgrader's autograde steps with ``Execute`` replaced by the sandboxed one and ``DeduplicateIds`` by one that
    keeps a copied cell from stopping the grading (also used by nbgrader_config.py)."""
    c.Autograde.sanitize_preprocessors = [
        "nbgrader.preprocessors.ClearOutput",
        "gpucost_lab.grading.execute.DropDuplicateIds",
        "nbgrader.preprocessors.OverwriteKernelspec",
        "nbgrader.preprocessors.OverwriteCells",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    c.Autograde.autograde_preprocessors = [
        "gpucost_lab.grading.execute.SandboxedExecute",
        "nbgrader.preprocessors.IgnorePattern",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "nbgrader.preprocessors.LimitOutput",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]


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
        before = [
            present[_nbgrader_meta(c)["grade_id"]] for c in released[:pos] if _nbgrader_meta(c)["grade_id"] in present
        ]
        after = [
            present[_nbgrader_meta(c)["grade_id"]]
            for c in released[pos + 1 :]
            if _nbgrader_meta(c)["grade_id"] in present
        ]
        index = max(before) + 1 if before else (min(after) if after else len(submission_nb.cells))
        new = copy.deepcopy(cell)
        new.pop("id", None)
        submission_nb.cells.insert(index, new)
        present = {m.get("grade_id"): i for i, m in enumerate(map(_nbgrader_meta, submission_nb.cells))}
        restored.append(meta["grade_id"])
    return restored


def _drop_duplicate_grade_ids(nb) -> list[str]:
    """Cells copied in JupyterLab keep their nbgrader metadata: keep the first cell of each grade id as graded and
    make every later copy a plain cell (nbgrader would otherwise fail on it); the ids that had copies."""
    seen, copies = set(), []
    for cell in nb.cells:
        gid = _nbgrader_meta(cell).get("grade_id")
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
        ename, evalue = out.get("ename") or "Error", _one_line(out.get("evalue") or "")
        if ename == "CheckFailed":  # a test cell graded by the grader (grading.execute): its sentence says it all
            return evalue
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
    causes = [
        line.strip()
        for line in text.splitlines()
        if re.match(r"^\s*[\w.]*(Error|Exception|Exit)\b.*", line) and "NbGraderException" not in line
    ]
    return causes[-1] if causes else _one_line(result.get("error") or result.get("log") or "unknown error")


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
    """The submission at ``notebook_path``, checked as :func:`grade` describes; ``ValueError`` for unusable input."""
    submission = Path(notebook_path)
    learner = "" if student is None or self_study else _check_student(student)
    student = _check_student("student" if student is None else student)
    nb = _read_notebook(submission)
    root = _check_source_root(source_root)
    assignment = _check_assignment(
        detect_assignment(root, nb) or DEFAULT_ASSIGNMENT if assignment is None else assignment
    )
    source_nb_path = _source_notebook(root, assignment, nb, submission)
    return Submission(submission, nb, student, learner, root, assignment, source_nb_path.name)


@dataclasses.dataclass
class Course:
    """A throw-away nbgrader course in which one assignment has been generated (its gradebook and release)."""

    path: Path
    assignment: str
    timeout_s: int
    config: object  # the nbgrader configuration of this course (``_config``)
    dirty: bool = False  # a submission could not be removed from it: not to be used for another


def _convert(config, converter_class, **traits) -> str | None:
    """Run one nbgrader converter in this process, as ``NbGraderAPI`` does; None, or why it failed."""
    from nbgrader.coursedir import CourseDirectory

    log = _quiet_logger()
    coursedir = CourseDirectory(config=config, log=log, **traits)
    converter = converter_class(coursedir=coursedir, config=config, log=log)
    converter.force = True
    result = _run(converter)
    return None if result["success"] else _root_cause(result)


def generate_course(course: str | os.PathLike, root: Path, assignment: str, timeout_s: int) -> Course:
    """``nbgrader generate_assignment`` of ``root/assignment`` in the empty or new folder ``course``."""
    from nbgrader.converters import GenerateAssignment

    course = Path(course)
    course.mkdir(parents=True, exist_ok=True)
    course = course.resolve()
    shutil.copytree(
        root / assignment,
        course / "source" / assignment,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc"),
    )
    config = _config(course, timeout_s)
    with _environment(PATH=_path_with_this_python()), _quiet_stderr():
        problem = _convert(config, GenerateAssignment, assignment_id=assignment, student_id=".")
    if problem:
        raise GradingError(f"nbgrader could not generate assignment {assignment!r} from {root}: {problem}")
    return Course(course, assignment, timeout_s, config)


def copy_course(template: Course, course: str | os.PathLike) -> Course:
    """A copy of a generated course (its source, release and gradebook) at ``course``, a new folder."""
    course = Path(course).resolve()
    shutil.copytree(template.path, course)
    return Course(course, template.assignment, template.timeout_s, _config(course, template.timeout_s))


def autograde_in(
    course: Course,
    sub: Submission,
    *,
    feedback: bool = True,
    feedback_dir: str | os.PathLike | None = None,
    forget: bool = False,
) -> GradeReport:
    """Autograde ``sub`` in ``course`` (generated for its assignment) and read its scores from the gradebook.

    With ``feedback``, ``nbgrader generate_feedback`` runs after the scores are in and its page is copied to
    ``feedback_dir`` as ``<student>_<notebook stem>_feedback.html`` (default: beside the submission, as
    ``<notebook stem>_feedback.html``). ``forget`` removes the student from the gradebook and their folders from
    the course afterwards, leaving the course as generated, ready for the next submission.
    """
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.converters import Autograde

    if sub.assignment != course.assignment:
        raise ValueError(f"assignment {sub.assignment!r} cannot be graded in a course of {course.assignment!r}")
    assignment, student, name = sub.assignment, sub.student, sub.notebook_name
    nb = copy.deepcopy(sub.nb)
    config = course.config
    config.SandboxedExecute.learner = sub.learner
    folders = [course.path / step / student for step in ("submitted", "autograded", "feedback")]
    try:
        with _environment(PATH=_path_with_this_python()), _quiet_stderr():
            released_nb = _read_notebook(course.path / "release" / assignment / name, "released notebook")
            copies = _drop_duplicate_grade_ids(nb)
            _restore_missing_grade_cells(nb, released_nb)
            target = course.path / "submitted" / student / assignment / name
            target.parent.mkdir(parents=True)
            with _quiet_nbformat():
                nbformat.write(nb, str(target))

            problem = _convert(config, Autograde, assignment_id=assignment, student_id=student)
            if problem:
                raise ValueError(f"{sub.path}: nbgrader could not autograde it: {problem}")
            autograded = _read_notebook(course.path / "autograded" / student / assignment / name, "autograded notebook")
            messages = _cell_messages(autograded, course.timeout_s)

            order = {gid: i for i, gid in enumerate(_grade_ids(autograded))}
            with Gradebook(config.CourseDirectory.db_url, COURSE_ID) as gb:
                graded = gb.find_submission(assignment, student)
                score, max_score = float(graded.score), float(graded.max_score)
                grades = sorted(
                    (g for n in graded.notebooks for g in n.grades), key=lambda g: order.get(g.name, 1 << 30)
                )
                failed, pending = [], []
                for g in grades:
                    if g.needs_manual_grade:
                        pending.append({"cell": g.name, "max_points": float(g.max_score)})
                    elif _points(g.score) < _points(g.max_score):
                        failed.append(
                            {
                                "cell": g.name,
                                "points": float(g.score),
                                "max_points": float(g.max_score),
                                "message": messages.get(g.name) or "no response",
                            }
                        )

            feedback_html, notes = (
                None,
                [f"cell {gid} appears more than once: the first is graded, the copy is ignored" for gid in copies],
            )
            if feedback:
                feedback_html = _feedback(config, sub, course.path, feedback_dir, notes)
    finally:
        if forget:
            try:
                _forget(course, student, folders)
            except Exception:  # noqa: BLE001  (the grade stands; the course is not used again)
                course.dirty = True

    score, max_score = round(score, SCORE_DECIMALS), round(max_score, SCORE_DECIMALS)
    return GradeReport(
        score=score,
        max_score=max_score,
        percent=_percent(score, max_score),
        passed=meets_pass_mark(score, max_score),
        failed=tuple(failed),
        pending_manual=tuple(pending),
        feedback_html=feedback_html,
        notes=tuple(notes),
    )


def _feedback(config, sub: Submission, course: Path, feedback_dir, notes: list) -> str | None:
    """``generate_feedback`` for the graded ``sub``; the page's new path, or None with a note saying why not."""
    from nbgrader.converters import GenerateFeedback

    problem = _convert(config, GenerateFeedback, assignment_id=sub.assignment, student_id=sub.student)
    produced = course / "feedback" / sub.student / sub.assignment / f"{Path(sub.notebook_name).stem}.html"
    if problem:
        notes.append(f"feedback not generated: {problem}")
        return None
    if not produced.exists():
        return None
    out_dir = Path(feedback_dir) if feedback_dir is not None else sub.path.resolve().parent
    stem = sub.path.stem if feedback_dir is None else f"{sub.student}_{sub.path.stem}"
    try:  # the grade does not depend on where its feedback could be written
        out_dir.mkdir(parents=True, exist_ok=True)
        dest = out_dir / f"{stem}_feedback.html"
        shutil.copyfile(produced, dest)
        return str(dest)
    except OSError as err:
        notes.append(f"feedback not written to {out_dir}: {err.strerror or err}")
        return None


def _forget(course: Course, student: str, folders: list[Path]) -> None:
    """Remove ``student`` from the course's gradebook and folders: the course is again as it was generated."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.config.CourseDirectory.db_url, COURSE_ID) as gb:
        try:
            gb.remove_student(student)
        except MissingEntry:
            pass
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)


def grade(
    notebook_path: str | os.PathLike,
    student: str | None = None,
    assignment: str | None = None,
    timeout_s: int = DEFAULT_TIMEOUT_S,
    *,
    source_root: str | os.PathLike | None = None,
    feedback_dir: str | os.PathLike | None = None,
    course_dir: str | os.PathLike | None = None,
    self_study: bool = False,
) -> GradeReport:
    """Autograde one submitted notebook with nbgrader and report its score against the pass mark.

    ``student`` is the learner's id: their lab's numbers derive from it (:mod:`gpucost_lab.variants`), so the
    checks expect that learner's answers. None grades the self-study lab (as the id "student"), and so does
    ``self_study=True`` whatever the id.

    ``source_root`` is an nbgrader source directory holding ``<assignment>/<notebook>.ipynb`` (default:
    :func:`default_source_root`); ``assignment`` defaults to the one whose cells the submission carries. The
    generated feedback is copied to ``feedback_dir`` (default: beside the submission) as
    ``<notebook stem>_feedback.html``. The course is built in a temporary directory and removed, unless
    ``course_dir`` names an empty or new directory to build it in and keep (to inspect the gradebook). Raises
    ``ValueError`` naming the file and the problem for unusable input.

    The steps are those of a whole class (:mod:`gpucost_lab.class_grading`), which generates the course once and
    grades every submission in it: :func:`read_submission`, :func:`generate_course`, :func:`autograde_in`.
    """
    if student is not None:
        _check_student(student)  # the inputs are checked in the order they are given
    timeout_s = _check_timeout(timeout_s)
    sub = read_submission(notebook_path, student, assignment, source_root=source_root, self_study=self_study)
    with contextlib.ExitStack() as stack:
        if course_dir is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpucost-grade-")))
        else:
            folder = Path(course_dir)
            if folder.exists() and any(folder.iterdir()):
                raise ValueError(f"course_dir {folder} must be empty or new")
        course = generate_course(folder, sub.root, sub.assignment, timeout_s)
        return autograde_in(course, sub, feedback=True, feedback_dir=feedback_dir)


class GradingError(RuntimeError):
    """nbgrader could not build the course from the source (a problem with the source, not the submission)."""
