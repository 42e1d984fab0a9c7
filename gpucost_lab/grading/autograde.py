"""``grade``: one submission through nbgrader's steps in a throw-away course; scores read from its gradebook.

The steps are separate so that a class is graded with the very same ones (:mod:`gpucost_lab.grading.classes`):
:func:`~.submission.read_submission` checks the input, :func:`~.course.generate_course` runs
``generate_assignment`` (once per class there), :func:`autograde_in` runs ``autograde`` (and
``generate_feedback`` when asked) for one submission and reads its scores; with ``forget`` it then removes the
submission, leaving the course as generated. A failure of nbgrader itself raises :class:`~.course.GradingError`.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import tempfile
from pathlib import Path

from gpucost_lab._validate import InputError
from gpucost_lab.atomic import atomic_write_bytes
from gpucost_lab.grading.course import (
    COURSE_ID,
    Course,
    GradingError,
    generate_course,
    path_with_this_python,
    quiet_stderr,
    run_converter,
    temporary_environment,
)
from gpucost_lab.grading.gradebook_cells import apply_flags, gradebook_flags
from gpucost_lab.grading.notebooks import (
    DEFAULT_TIMEOUT_S,
    check_student,
    check_timeout,
    grade_ids,
    quiet_nbformat,
    read_notebook,
)
from gpucost_lab.grading.passmark import SCORE_DECIMALS, exact_points, meets_pass_mark, percent_of
from gpucost_lab.grading.reports import GradeReport
from gpucost_lab.grading.sandbox import require as require_sandbox
from gpucost_lab.grading.submission import (
    Submission,
    cell_messages,
    drop_duplicate_grade_ids,
    read_submission,
    restore_missing_grade_cells,
)


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
    the course afterwards, leaving the course as generated, ready for the next submission. Raises
    :class:`~.course.GradingError` when nbgrader cannot autograde it.
    """
    from nbgrader.converters import Autograde

    if sub.assignment != course.assignment:
        raise InputError(
            "assignment",
            f"assignment {sub.assignment!r} cannot be graded in a course generated for {course.assignment!r}; "
            f"allowed: {course.assignment!r}",
        )
    assignment, student, name = sub.assignment, sub.student, sub.notebook_name
    nb = copy.deepcopy(sub.nb)
    config = course.config
    config.SandboxedExecute.learner = sub.learner
    folders = [course.path / step / student for step in ("submitted", "autograded", "feedback")]
    try:
        with temporary_environment(PATH=path_with_this_python()), quiet_stderr():
            notes = _submit(course, sub, nb)
            problem = run_converter(config, Autograde, assignment_id=assignment, student_id=student)
            if problem:
                raise GradingError(f"{sub.path}: nbgrader could not autograde it: {problem}")
            autograded = read_notebook(course.path / "autograded" / student / assignment / name, "autograded notebook")
            score, max_score, failed, pending = _scores(course, sub, autograded)
            feedback_html = _feedback(config, sub, course.path, feedback_dir, notes) if feedback else None
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
        percent=percent_of(score, max_score),
        passed=meets_pass_mark(score, max_score),
        failed=tuple(failed),
        pending_manual=tuple(pending),
        feedback_html=feedback_html,
        notes=tuple(notes),
    )


def _submit(course: Course, sub: Submission, nb) -> list[str]:
    """``nb`` (the submission's copy) into the course's ``submitted/`` folder, as nbgrader is to read it: a copied
    graded cell made plain, a deleted one put back, every cell's flags the gradebook's. The notes on what changed."""
    import nbformat

    name = sub.notebook_name
    released_nb = read_notebook(course.path / "release" / sub.assignment / name, "released notebook")
    copies = drop_duplicate_grade_ids(nb)
    restore_missing_grade_cells(nb, released_nb)
    db_url = course.config.CourseDirectory.db_url
    foreign = apply_flags(nb, gradebook_flags(db_url, Path(name).stem, sub.assignment))
    target = course.path / "submitted" / sub.student / sub.assignment / name
    target.parent.mkdir(parents=True)
    with quiet_nbformat():
        nbformat.write(nb, str(target))
    return [f"cell {gid} appears more than once: the first is graded, the copy is ignored" for gid in copies] + foreign


def _scores(course: Course, sub: Submission, autograded) -> tuple[float, float, list[dict], list[dict]]:
    """The autograded ``sub``'s score and maximum from the gradebook, its graded cells that lost points (with why,
    read off the ``autograded`` notebook) and those awaiting a manual grade, in the notebook's order."""
    from nbgrader.api import Gradebook

    messages = cell_messages(autograded, course.timeout_s)
    order = {gid: i for i, gid in enumerate(grade_ids(autograded))}
    with Gradebook(course.config.CourseDirectory.db_url, COURSE_ID) as gb:
        graded = gb.find_submission(sub.assignment, sub.student)
        score, max_score = float(graded.score), float(graded.max_score)
        grades = sorted((g for n in graded.notebooks for g in n.grades), key=lambda g: order.get(g.name, 1 << 30))
        failed, pending = [], []
        for g in grades:
            if g.needs_manual_grade:
                pending.append({"cell": g.name, "max_points": float(g.max_score)})
            elif exact_points(g.score) < exact_points(g.max_score):
                failed.append(
                    {
                        "cell": g.name,
                        "points": float(g.score),
                        "max_points": float(g.max_score),
                        "message": messages.get(g.name) or "no response",
                    }
                )
    return score, max_score, failed, pending


def _feedback(config, sub: Submission, course: Path, feedback_dir, notes: list[str]) -> str | None:
    """``generate_feedback`` for the graded ``sub``; the page's new path, or None with a note saying why not."""
    from nbgrader.converters import GenerateFeedback

    problem = run_converter(config, GenerateFeedback, assignment_id=sub.assignment, student_id=sub.student)
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
        dest = atomic_write_bytes(out_dir / f"{stem}_feedback.html", produced.read_bytes(), name="feedback_dir")
        return str(dest)
    except (OSError, ValueError) as err:  # ValueError: the atomic writer's check of the folder
        notes.append(f"feedback not written to {out_dir}: {getattr(err, 'strerror', None) or err}")
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
    course: Course | None = None,
) -> GradeReport:
    """Autograde one submitted notebook with nbgrader and report its score against the pass mark.

    ``student`` is the learner's id: their lab's numbers derive from it (:mod:`gpucost_lab.course.variants`), so the
    checks expect that learner's answers. None grades the self-study lab (as the id "student"), and so does
    ``self_study=True`` whatever the id.

    ``source_root`` is an nbgrader source directory holding ``<assignment>/<notebook>.ipynb`` (default:
    :func:`default_source_root`); ``assignment`` defaults to the one whose cells the submission carries. The
    generated feedback is copied to ``feedback_dir`` (default: beside the submission) as
    ``<notebook stem>_feedback.html``. The course is built in a temporary directory and removed, unless
    ``course_dir`` names an empty or new directory to build it in and keep (to inspect the gradebook). Raises
    ``ValueError`` naming the file and the problem for unusable input, and :class:`~.course.GradingError` when
    nbgrader cannot generate the course or autograde the submission (no grade is given then). Where no sandbox can
    be made, raises :class:`~.sandbox.SandboxUnavailable` before the submission is read.

    ``course``, a course :func:`~.course.generate_course` made for the assignment with this ``timeout_s`` and
    ``source_root``, grades in it instead of a new one and leaves it as generated (``forget``), as a class is graded;
    ``course_dir`` is then not allowed.

    The steps are those of a whole class (:mod:`gpucost_lab.grading.classes`), which generates the course once and
    grades every submission in it: :func:`~.submission.read_submission`, :func:`~.course.generate_course`,
    :func:`autograde_in`.
    """
    if student is not None:
        check_student(student)  # the inputs are checked in the order they are given
    timeout_s = check_timeout(timeout_s)
    require_sandbox()  # before the submission is read or anything is written
    sub = read_submission(notebook_path, student, assignment, source_root=source_root, self_study=self_study)
    if course is not None:
        return autograde_in(_usable(course, timeout_s, course_dir), sub, feedback_dir=feedback_dir, forget=True)
    with contextlib.ExitStack() as stack:
        if course_dir is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpucost-grade-")))
        else:
            folder = Path(course_dir)
            if folder.exists() and any(folder.iterdir()):
                raise InputError(
                    "course_dir", f"course_dir must be an empty or new folder, got {str(folder)!r}, which holds files"
                )
        course = generate_course(folder, sub.root, sub.assignment, timeout_s)
        return autograde_in(course, sub, feedback=True, feedback_dir=feedback_dir)


def _usable(course: Course, timeout_s: int, course_dir) -> Course:
    """``course`` if a submission graded with ``timeout_s`` may be graded in it; else :class:`InputError`."""
    if course_dir is not None:
        raise InputError("course_dir", f"course_dir must be None when a course is given, got {str(course_dir)!r}")
    if course.dirty:
        raise InputError(
            "course",
            f"course {str(course.path)!r} kept a submission it could not remove; allowed: a course as generated",
        )
    if course.timeout_s != timeout_s:
        raise InputError(
            "timeout_s",
            f"timeout_s {timeout_s} differs from the course's {course.timeout_s}; allowed: {course.timeout_s}",
        )
    return course
