"""Grading a whole class's lab submissions at once (instructors; README "For instructors", the lab in `labs/`).

``grade_class(submissions_dir)`` finds one notebook per student, either ``<dir>/<student>/<notebook>.ipynb`` or
``<dir>/<student>.ipynb``, and grades them in ``workers`` worker processes, each started once for the class
(nbgrader, the grader and the course's modules imported once per worker, not per submission). The nbgrader
course is generated once per class and assignment (``generate_assignment``: gradebook, checksums, release); each
worker grades in its own copy of it, submission after submission, with the very steps of
:func:`gpucost_lab.grading.grade` (:func:`~gpucost_lab.grading.autograde.autograde_in`): nbgrader's ``autograde``
with the learner's cells in a fresh sandboxed kernel per submission and the tests in the worker (the grader),
on answers read back as plain data. After each submission the worker removes it from its gradebook and course
folders, so every submission is graded in a course exactly as generated, as ``grade`` does. Feedback pages are
made only when asked for (``feedback_dir``), after each submission's scores.

A submission that cannot be graded (broken JSON, not the lab, a folder with no or several notebooks, an unusable
student id) becomes a row with ``error`` set, and so does one nbgrader fails to autograde (a ``GradingError``);
it never stops the others. The pass mark is the one ``grading`` defines (80%, exact).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import multiprocessing
import os
import stat
import tempfile
from pathlib import Path

from gpucost_lab._validate import InputError
from gpucost_lab.atomic import atomic_write_text
from gpucost_lab.grading.autograde import autograde_in
from gpucost_lab.grading.course import Course, GradingError, copy_course, course_config, generate_course
from gpucost_lab.grading.links import ALLOWED, offending, refusal
from gpucost_lab.grading.notebooks import DEFAULT_TIMEOUT_S, check_assignment, check_source_root, check_timeout
from gpucost_lab.grading.sandbox import require as require_sandbox
from gpucost_lab.grading.submission import read_submission

COLUMNS = ["student", "score", "max_score", "percent", "passed", "error"]
_ALLOWED = "allowed: a folder holding <student>/<notebook>.ipynb or <student>.ipynb, one per student"


def find_submissions(submissions_dir: str | os.PathLike) -> list[tuple[str, Path | None, str | None]]:
    """``(student, notebook, problem)`` for each entry of ``submissions_dir``, sorted by student.

    A folder must hold exactly one ``.ipynb`` (checkpoint folders ignored); otherwise ``notebook`` is None and
    ``problem`` says why. Hidden entries and files that are not ``.ipynb`` are skipped. A submission is plain files
    in its folder (:mod:`.links`): a student's folder or notebook that is a symbolic link, or a folder holding a
    link, a hard link or a special file anywhere, is not graded, and ``problem`` names the first such file and why.
    """
    root = Path(submissions_dir)
    if not root.exists():
        raise InputError("submissions_dir", f"submissions_dir {str(root)!r} does not exist; {_ALLOWED}")
    if not root.is_dir():
        raise InputError("submissions_dir", f"submissions_dir {str(root)!r} is not a directory; {_ALLOWED}")
    found: list[tuple[str, Path | None, str | None]] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        try:
            st = entry.lstat()
        except FileNotFoundError:  # removed since the folder was listed
            continue
        is_notebook = entry.suffix == ".ipynb"
        student = entry.stem if is_notebook and not stat.S_ISDIR(st.st_mode) else entry.name
        if stat.S_ISDIR(st.st_mode):
            refused = offending(entry)
            if refused:
                found.append((student, None, _refused(refused)))
                continue
            notebooks = sorted(p for p in entry.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
            if len(notebooks) == 1:
                found.append((student, notebooks[0], None))
            else:
                found.append((student, None, f"{entry}: expected one notebook, found {len(notebooks)}"))
        elif is_notebook or (stat.S_ISLNK(st.st_mode) and entry.is_dir()):  # a notebook, or a link to a folder
            link = refusal(entry)
            found.append((student, None, _refused([link])) if link else (student, entry, None))
    return sorted(found, key=lambda row: row[0])


def _refused(refused: list) -> str:
    """A submission's ``problem`` for the links and special files it holds (:func:`.links.offending`)."""
    more = f" (and {len(refused) - 1} more such file{'s' if len(refused) > 2 else ''})" if len(refused) > 1 else ""
    return f"submissions_dir: {refused[0]}{more}; {ALLOWED}"


def _row(student: str, error: str | None) -> dict[str, object]:
    """A student's row with no score yet: ``error`` says why it has none (None while it is being graded)."""
    return {"student": student, "score": None, "max_score": None, "percent": None, "passed": False, "error": error}


# ------------------------------------------------------------------------------------------- in a worker process

_WORKER: dict = {}  # this worker's class: scratch folder, timeout, and its copies of the generated courses


def _init_worker(scratch: str, timeout_s: int) -> None:
    """Start a worker: what every submission needs is imported here, once (nbgrader, the grader, the course types)."""
    import nbclient  # noqa: F401
    import nbgrader.api  # noqa: F401
    import nbgrader.converters  # noqa: F401

    from gpucost_lab.grading import answers, execute, run  # noqa: F401

    answers.course_types()  # pandas and the course's modules (torch among them)
    _WORKER.update(scratch=Path(scratch), timeout_s=timeout_s, courses={}, made=0)
    _unsynced_gradebooks(Path(scratch))


def _unsynced_gradebooks(scratch: Path) -> None:
    """The worker's gradebooks are throw-away copies, read back at once: no fsync at each of the ~50 commits a
    submission makes (SQLite ``synchronous=OFF``, on the gradebooks under ``scratch`` only)."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def _no_fsync(connection, _record) -> None:
        import sqlite3

        if not isinstance(connection, sqlite3.Connection):
            return
        database = connection.execute("PRAGMA database_list").fetchone()
        if database and str(database[2]).startswith(str(scratch.resolve())):
            connection.execute("PRAGMA synchronous=OFF")


def _template(root: Path, assignment: str):
    """The class's course for ``assignment``: generated by the first worker that needs it, under a file lock, and
    only read afterwards (each worker grades in a copy)."""
    import fcntl
    import shutil

    timeout_s = _WORKER["timeout_s"]
    folder = _WORKER["scratch"] / "generated" / hashlib.sha256(f"{root}\0{assignment}".encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if (folder / "failed").exists():
            raise GradingError((folder / "failed").read_text(encoding="utf-8"))
        if not (folder / "ready").exists():
            shutil.rmtree(folder / "course", ignore_errors=True)  # an attempt cut short
            try:
                generate_course(folder / "course", root, assignment, timeout_s)
            except GradingError as err:  # the next worker reads why, instead of generating it again
                atomic_write_text(folder / "failed", str(err), name="failed marker")
                raise
            atomic_write_text(folder / "ready", "", name="ready marker")
    course = (folder / "course").resolve()
    return Course(course, assignment, timeout_s, course_config(course, timeout_s))


def _course_for(root: Path, assignment: str):
    """This worker's copy of the class's course for ``assignment`` (made on first use, again if it got dirty)."""
    key = (str(root), assignment)
    course = _WORKER["courses"].get(key)
    if course is None or course.dirty:
        _WORKER["made"] += 1
        course = copy_course(
            _template(root, assignment), _WORKER["scratch"] / "workers" / f"{os.getpid()}-{_WORKER['made']}"
        )
        _WORKER["courses"][key] = course
    return course


def _grade_one(
    student: str,
    notebook: str,
    assignment: str | None,
    source_root: str,
    feedback_dir: str | None,
    self_study: bool = False,
) -> dict:
    """Worker: grade one submission; any failure becomes the row's ``error`` (the last line of the message)."""
    row = _row(student, None)
    try:
        sub = read_submission(notebook, student, assignment, source_root=source_root, self_study=self_study)
        course = _course_for(sub.root, sub.assignment)
        report = autograde_in(course, sub, feedback=feedback_dir is not None, feedback_dir=feedback_dir, forget=True)
        row.update(score=report.score, max_score=report.max_score, percent=report.percent, passed=report.passed)
    except Exception as err:  # noqa: BLE001 -- one bad submission must not stop the class
        text = str(err).strip().splitlines()
        row["error"] = f"{type(err).__name__}: {text[-1] if text else ''}".rstrip(": ")
    return row


# ------------------------------------------------------------------------------------------- in the caller


def default_workers() -> int:
    """One worker more than the cores this process may use. A worker waits on its learner's kernel and the kernel
    on the worker's checks, so one worker keeps a core ~85% busy; one more than the cores keeps them all busy (on 2
    cores, 3 workers graded 100 submissions ~1.2x faster than 2: benchmarks/class_autograding.py). Each worker
    with its kernel takes about 1 GB of memory."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores + 1


def _check_workers(workers: object) -> int:
    if workers is None:
        return default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError("workers", f"workers must be a whole number >= 1, got {workers!r}")
    return workers


def _source(source_root: str | os.PathLike | None, assignment: str | None) -> Path:
    root = check_source_root(source_root)
    if assignment is not None:
        if not (root / check_assignment(assignment)).is_dir():
            labs = ", ".join(sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")))
            raise InputError(
                "assignment", f"assignment {assignment!r} has no folder in {root}; allowed: {labs or 'none there'}"
            )
    return root.resolve()


def _feedback_folder(feedback_dir: str | os.PathLike | None) -> str | None:
    """The feedback folder, made if missing; checked before any grading starts."""
    if feedback_dir is None:
        return None
    folder = Path(feedback_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        writable = os.access(folder, os.W_OK | os.X_OK)
    except (FileExistsError, NotADirectoryError):
        raise InputError(
            "feedback_dir", f"feedback_dir {str(folder)!r} is not a folder; allowed: a folder, made if missing"
        ) from None
    except OSError as err:
        raise InputError(
            "feedback_dir",
            f"feedback_dir {str(folder)!r} could not be made ({err.strerror or err}); allowed: a "
            f"folder you may write to, made if missing",
        ) from None
    if not writable:
        raise InputError(
            "feedback_dir", f"feedback_dir {str(folder)!r} is not writable; allowed: a folder you may write to"
        )
    return str(folder.resolve())


def grade_class(
    submissions_dir: str | os.PathLike,
    *,
    workers: int | None = None,
    assignment: str | None = None,
    source_root: str | os.PathLike | None = None,
    progress: bool = False,
    timeout_s: int = DEFAULT_TIMEOUT_S,
    feedback_dir: str | os.PathLike | None = None,
    self_study: bool = False,
):
    """Grade every submission in ``submissions_dir`` with ``workers`` processes (default: :func:`default_workers`,
    one more than the cores); a DataFrame, one row a student.

    Columns: ``student``, ``score``, ``max_score``, ``percent``, ``passed`` (80% of the points, inclusive),
    ``error`` (None, or why the submission could not be graded; its score columns are then empty and
    ``passed`` is False). ``timeout_s`` is the per-cell limit (an infinite loop fails its cell, the rest is
    graded). Feedback pages go to ``feedback_dir`` as ``<student>_<notebook>_feedback.html`` when given; without
    it none is made. ``progress=True`` shows a tqdm bar. Each student's lab numbers derive from their id
    (:mod:`gpucost_lab.course.variants`); ``self_study=True`` grades every submission as the self-study lab instead.

    Raises ``ValueError`` naming the input for a missing folder, one with no submission at all, ``workers`` < 1,
    a bad ``timeout_s``, ``source_root``, ``assignment`` or ``feedback_dir`` (checked before any grading), and
    :class:`~.sandbox.SandboxUnavailable` once, before any submission is read, where no sandbox can be made.
    """
    workers = _check_workers(workers)
    timeout_s = check_timeout(timeout_s)
    require_sandbox()  # once for the class, before any submission is read
    entries = find_submissions(submissions_dir)
    if not entries:
        raise InputError(
            "submissions_dir",
            f"submissions_dir {str(submissions_dir)!r} holds no submission (no student folder, no .ipynb); {_ALLOWED}",
        )
    root = _source(source_root, assignment)
    rows = [_row(s, problem) for s, nb, problem in entries if nb is None]
    jobs = [(s, str(nb)) for s, nb, _ in entries if nb is not None]
    out = _feedback_folder(feedback_dir)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(entries), unit="submission", desc="grading")
        bar.update(len(rows))
    if jobs:
        rows += _grade_in_workers(
            jobs, min(workers, len(jobs)), timeout_s, (assignment, str(root), out, self_study), bar
        )
    if bar is not None:
        bar.close()
    return _frame(rows)


def _grade_in_workers(jobs: list[tuple[str, str]], workers: int, timeout_s: int, how: tuple, bar) -> list[dict]:
    """One row per ``(student, notebook)`` of ``jobs``, graded by ``workers`` worker processes (:func:`_grade_one`
    with ``how``: assignment, source root, feedback folder, self-study), in the order they finish."""
    rows = []
    # spawn: each worker starts clean (no inherited kernels, sockets or threads from the caller), once
    context = multiprocessing.get_context("spawn")
    with (
        tempfile.TemporaryDirectory(prefix="gpucost-class-") as scratch,
        concurrent.futures.ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(scratch, timeout_s),
        ) as pool,
    ):
        futures = {pool.submit(_grade_one, s, nb, *how): s for s, nb in jobs}
        for future in concurrent.futures.as_completed(futures):
            try:
                rows.append(future.result())
            except Exception as err:  # noqa: BLE001 -- a worker that died (killed, out of memory)
                rows.append(_row(futures[future], f"{type(err).__name__}: worker failed ({err})"))
            if bar is not None:
                bar.update(1)
    return rows


def _frame(rows: list[dict]):
    """The class's rows as the DataFrame :func:`grade_class` returns, in student order."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["passed"] = frame["passed"].astype(bool)
    errors = frame["error"].astype(object)
    frame["error"] = errors.where(errors.notna(), None)  # None, not NaN, where there is no error
    return frame.sort_values("student", ignore_index=True)
