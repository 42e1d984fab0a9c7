"""The throw-away nbgrader course a submission is graded in: its configuration, and ``generate_assignment``.

:func:`generate_course` copies one assignment of the source folder into a new course and runs nbgrader's
``generate_assignment`` there (its gradebook, checksums and release); :func:`copy_course` copies a generated one,
so that a class generates it once. :func:`autograde_steps` is the course's autograde configuration, also used by
the repository's nbgrader_config.py. nbgrader is imported on use only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpucost_lab.grading.notebooks import ANSI_ESCAPES, one_line

#: The course id used in the gradebook (the same as in the repository's nbgrader_config.py).
COURSE_ID = "gpucost-lab"


class GradingError(RuntimeError):
    """Grading could not be done: nbgrader could not build the course from the source, or could not autograde a
    submission (a failure of the grading, not a score: no grade is given)."""


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
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
def temporary_environment(**values: str) -> Iterator[None]:
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


def path_with_this_python() -> str:
    """``$PATH`` with this Python's folder first: nbgrader 0.9 runs the ``alembic`` console script by name when it
    creates a gradebook, and it must be this environment's."""
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


def course_config(course: Path, timeout_s: int):
    """The nbgrader configuration of the course in the folder ``course``, each cell allowed ``timeout_s``."""
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
    keeps a copied cell from stopping the grading (also used by nbgrader_config.py). Where no sandbox can be made,
    autograde stops before it writes anything (:class:`~.sandbox.BeforeAutograde`).

    What the learner's notebook displays is sanitized (:mod:`~.sanitize`): by autograde once the scores are saved
    (the autograded notebook is written after its last step, so the one on disk is clean and no score depends on
    it), and by every HTML export of the course, the feedback pages and the formgrader's view, so an autograded
    notebook written before is shown sanitized too."""
    from gpucost_lab.grading.sandbox import BeforeAutograde

    c.Autograde.pre_convert_hook = BeforeAutograde(c)
    c.Autograde.sanitize_preprocessors = [
        "nbgrader.preprocessors.ClearOutput",
        "gpucost_lab.grading.execute.DropDuplicateIds",
        "gpucost_lab.grading.gradebook_cells.GradebookCells",
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
        "gpucost_lab.grading.sanitize.SanitizeLearnerHTML",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    c.HTMLExporter.preprocessors = ["gpucost_lab.grading.sanitize.SanitizeLearnerHTML"]


def _root_cause(result: dict) -> str:
    """The most specific error line in a failed nbgrader run (its final line only says "see the traceback")."""
    text = ANSI_ESCAPES.sub("", (result.get("log") or "") + "\n" + (result.get("error") or ""))
    causes = [
        line.strip()
        for line in text.splitlines()
        if re.match(r"^\s*[\w.]*(Error|Exception|Exit)\b.*", line) and "NbGraderException" not in line
    ]
    return causes[-1] if causes else one_line(result.get("error") or result.get("log") or "unknown error")


@dataclasses.dataclass
class Course:
    """A throw-away nbgrader course in which one assignment has been generated (its gradebook and release)."""

    path: Path
    assignment: str
    timeout_s: int
    config: Any  # the nbgrader configuration of this course (``course_config``)
    dirty: bool = False  # a submission could not be removed from it: not to be used for another


def run_converter(config, converter_class, **traits) -> str | None:
    """Run one nbgrader converter in this process, as ``NbGraderAPI`` does; None, or why it failed."""
    from nbgrader.coursedir import CourseDirectory

    log = _quiet_logger()
    coursedir = CourseDirectory(config=config, log=log, **traits)
    converter = converter_class(coursedir=coursedir, config=config, log=log)
    converter.force = True
    result = _run(converter)
    return None if result["success"] else _root_cause(result)


def generate_course(course: str | os.PathLike, root: Path, assignment: str, timeout_s: int) -> Course:
    """``nbgrader generate_assignment`` of ``root/assignment`` in the empty or new folder ``course``;
    :class:`GradingError` when nbgrader cannot generate it (a problem with the source, not a submission)."""
    from nbgrader.converters import GenerateAssignment

    course = Path(course)
    course.mkdir(parents=True, exist_ok=True)
    course = course.resolve()
    shutil.copytree(
        root / assignment,
        course / "source" / assignment,
        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc"),
    )
    config = course_config(course, timeout_s)
    with temporary_environment(PATH=path_with_this_python()), quiet_stderr():
        problem = run_converter(config, GenerateAssignment, assignment_id=assignment, student_id=".")
    if problem:
        raise GradingError(f"nbgrader could not generate assignment {assignment!r} from {root}: {problem}")
    return Course(course, assignment, timeout_s, config)


def copy_course(template: Course, course: str | os.PathLike) -> Course:
    """A copy of a generated course (its source, release and gradebook) at ``course``, a new folder."""
    course = Path(course).resolve()
    shutil.copytree(template.path, course)
    return Course(course, template.assignment, template.timeout_s, course_config(course, template.timeout_s))
