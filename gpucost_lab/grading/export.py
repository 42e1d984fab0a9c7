"""The course's grades in an LMS's import format: Canvas's gradebook CSV, Moodle's grade import CSV, or a plain CSV.

The grades are those ``nbgrader export`` writes with the course's plugin (:mod:`gpucost_lab.grading.nbgrader_export`): a
score per learner and assignment (a missing submission scores 0) and ``passed`` (True/False at 80% of the
maximum, or ``pending`` while manual grading is outstanding). ``read_grades`` takes them from the gradebook itself
(``gradebook.db``, through that plugin) or from its ``grades.csv``; ``write`` turns them into:

- ``canvas``: Canvas's gradebook import CSV. The columns Canvas's own export starts with, ``Student`` (``Last,
  First``, or the learner's id), ``ID``, ``SIS User ID``, ``SIS Login ID`` (the learner's id: the hub user name) and
  ``Section``; a ``Points Possible`` row; then, per assignment, its score column (headed ``<assignment>``, or
  ``<assignment> (<Canvas assignment id>)`` to fill an existing assignment) and ``<assignment> passed``:
  ``complete`` or ``incomplete`` (a Complete/Incomplete assignment in Canvas), blank while pending.
- ``moodle``: Moodle's CSV grade import, one row per learner: ``First name``, ``Last name``, ``Username`` (the
  learner's id), ``Email address``, then per assignment its score column and ``<assignment> passed`` (``Pass``,
  ``Fail``, blank while pending), which Moodle's import maps to a grade item (a Pass/Fail scale) or to the score's
  feedback. On import, map ``Username`` to ``username`` (or ``Email address`` to ``useremail``).
- ``csv``: one row per learner and assignment: ``student_id``, ``last_name``, ``first_name``, ``email``,
  ``assignment``, ``score``, ``max_score``, ``passed``.
"""

from __future__ import annotations

import csv
import io
import math
import os
import sqlite3
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from gpucost_lab._validate import InputError, input_file, output_file
from gpucost_lab.atomic import atomic_write_text

FORMATS = ("canvas", "moodle", "csv")
CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_ROW = "Points Possible"
MOODLE_IDENTITY = ["First name", "Last name", "Username", "Email address"]
PLAIN_COLUMNS = ["student_id", "last_name", "first_name", "email", "assignment", "score", "max_score", "passed"]
#: What grades.csv must have (the columns of gpucost_lab.grading.nbgrader_export that the formats use).
NEEDED = ["assignment", "student_id", "last_name", "first_name", "email", "score", "max_score", "passed"]
#: The tables of an nbgrader gradebook that the export reads; a sqlite file without them is not a gradebook (and is
#: never opened by nbgrader, which would add its tables to it).
GRADEBOOK_TABLES = (
    "assignment",
    "course",
    "grade",
    "notebook",
    "student",
    "submitted_assignment",
    "submitted_notebook",
)
#: The largest grades.csv read: a class of 1,000 learners and 20 assignments is about 2 MB; a larger file is not one
#: ``nbgrader export`` wrote. Its fields may hold at most csv's default 131,072 characters.
MAX_GRADES_CSV_BYTES = 64 * 2**20
PASSED_VALUES = ("True", "False", "pending")
CANVAS_PASSED = {"True": "complete", "False": "incomplete", "pending": ""}
MOODLE_PASSED = {"True": "Pass", "False": "Fail", "pending": ""}


@dataclass(frozen=True)
class Grade:
    """One learner's grade for one assignment."""

    student_id: str
    assignment: str
    score: float
    max_score: float
    passed: str  # "True", "False" or "pending"
    first_name: str = ""
    last_name: str = ""
    email: str = ""


def _number(field: str, value: str, row: int) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise InputError(field, f"{field} must be a number >= 0 (row {row}), got {value!r}")
    return number


def parse_grades_csv(text: str) -> list[Grade]:
    """The grades of an ``nbgrader export`` CSV written with the course's plugin."""
    try:
        return _parse_grades_csv(text)
    except csv.Error as err:  # a field over csv's limit, a NUL, an unclosed quote at the end, ...
        raise InputError("source", f"source is not a CSV `nbgrader export` wrote ({err})") from None


def _parse_grades_csv(text: str) -> list[Grade]:
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(
            "source",
            f"source lacks the column {missing[0]!r} of `nbgrader export` with the course's plugin "
            f"(gpucost_lab.grading.nbgrader_export); its columns: {reader.fieldnames}",
        )
    grades = []
    for number, row in enumerate(reader, start=2):
        if not row["student_id"] or not row["assignment"]:
            raise InputError(
                "student_id",
                f"student_id and assignment must be set (row {number}), got "
                f"{row['student_id']!r} and {row['assignment']!r}",
            )
        if row["passed"] not in PASSED_VALUES:
            raise InputError(
                "passed", f"passed must be one of {', '.join(PASSED_VALUES)} (row {number}), got {row['passed']!r}"
            )
        grades.append(
            Grade(
                student_id=row["student_id"],
                assignment=row["assignment"],
                score=_number("score", row["score"], number),
                max_score=_number("max_score", row["max_score"], number),
                passed=row["passed"],
                first_name=row["first_name"] or "",
                last_name=row["last_name"] or "",
                email=row["email"] or "",
            )
        )
    return grades


def read_gradebook(path: str | os.PathLike, course_id: str = "gpucost-lab") -> list[Grade]:
    """The grades in an nbgrader gradebook (sqlite file), as the course's ``nbgrader export`` plugin reports them."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning, SQLAlchemyError

    from gpucost_lab.grading.nbgrader_export import PassMarkExportPlugin

    path = Path(path)
    _check_gradebook(path)
    with tempfile.TemporaryDirectory(prefix="gpucost-grades-") as tmp:
        out = Path(tmp) / "grades.csv"
        try:
            with warnings.catch_warnings(), Gradebook(f"sqlite:///{path.resolve()}", course_id) as gradebook:
                warnings.simplefilter("ignore", SAWarning)  # nbgrader's own session notes, not the learner's data
                PassMarkExportPlugin(to=str(out)).export(gradebook)
        except (SQLAlchemyError, sqlite3.Error) as err:
            detail = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise InputError(
                "source", f"source {str(path)!r} is not a gradebook nbgrader can read ({detail[:200]})"
            ) from None
        return parse_grades_csv(out.read_text(encoding="utf-8"))


def _check_gradebook(path: Path) -> None:
    """InputError unless ``path`` is a sqlite database holding :data:`GRADEBOOK_TABLES` (opened read-only)."""
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            connection.close()
    except sqlite3.Error as err:
        raise InputError("source", f"source {str(path)!r} is not a readable sqlite gradebook ({err})") from None
    missing = [t for t in GRADEBOOK_TABLES if t not in tables]
    if missing:
        raise InputError(
            "source",
            f"source {str(path)!r} is a sqlite file but not an nbgrader gradebook (no {missing[0]!r} table); "
            f"allowed: the course's gradebook.db, or the grades.csv `nbgrader export` wrote",
        )


def read_grades(source: str | os.PathLike, course_id: str = "gpucost-lab") -> list[Grade]:
    """``source``: a gradebook (``.db``, read with nbgrader) or the CSV ``nbgrader export`` wrote."""
    path, status = input_file("source", source, "gradebook (.db) or `nbgrader export` CSV")
    try:
        if path.suffix == ".db":
            with open(path, "rb") as fh:
                if fh.read(16) != b"SQLite format 3\x00":
                    raise InputError(
                        "source", f"source must be an nbgrader gradebook (an sqlite file), got {str(source)!r}"
                    )
            return read_gradebook(path, course_id)
        if status.st_size > MAX_GRADES_CSV_BYTES:
            raise InputError(
                "source",
                f"source must be a grades CSV of at most {MAX_GRADES_CSV_BYTES:,} bytes (a class's is a few MB), got "
                f"{str(source)!r} of {status.st_size:,}",
            )
        with open(path, "rb") as fh:
            data = fh.read(MAX_GRADES_CSV_BYTES + 1)
        return parse_grades_csv(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError("source", f"source must be a UTF-8 CSV, got {str(source)!r}") from None
    except OSError as err:
        raise InputError("source", f"source {str(source)!r} cannot be read ({err.strerror or err})") from None


def _score(value: float) -> str:
    return f"{value:g}"


def _learners(grades: list[Grade]) -> list[Grade]:
    """One grade per learner (the first), for their names, in student-id order."""
    first: dict[str, Grade] = {}
    for g in grades:
        first.setdefault(g.student_id, g)
    return [first[s] for s in sorted(first)]


def _assignments(grades: list[Grade]) -> list[str]:
    return sorted({g.assignment for g in grades})


def canvas_rows(grades: list[Grade], canvas_ids: dict[str, str] | None = None) -> list[list[str]]:
    """Header, ``Points Possible`` row and one row per learner of Canvas's gradebook import CSV."""
    canvas_ids = canvas_ids or {}
    assignments = _assignments(grades)
    unknown = sorted(set(canvas_ids) - set(assignments))
    if unknown:
        raise InputError(
            "canvas_ids", f"canvas_ids names an assignment with no grades, {unknown[0]!r}; assignments: {assignments}"
        )
    by = {(g.student_id, g.assignment): g for g in grades}
    maxima = {a: max(g.max_score for g in grades if g.assignment == a) for a in assignments}
    header, points = list(CANVAS_IDENTITY), [CANVAS_POINTS_ROW] + [""] * (len(CANVAS_IDENTITY) - 1)
    for a in assignments:
        title = f"{a} ({canvas_ids[a]})" if a in canvas_ids else a
        header += [title, f"{a} passed"]
        points += [_score(maxima[a]), ""]
    rows = [header, points]
    for learner in _learners(grades):
        name = (
            f"{learner.last_name}, {learner.first_name}"
            if learner.last_name and learner.first_name
            else (learner.last_name or learner.first_name or learner.student_id)
        )
        rows.append([name, "", "", learner.student_id, ""] + _score_cells(by, learner, assignments, CANVAS_PASSED))
    return rows


def _score_cells(by: dict, learner: Grade, assignments: list[str], passed_words: dict) -> list[str]:
    """The score and pass cells of ``learner`` for each assignment, empty where they have no grade."""
    cells = []
    for a in assignments:
        g = by.get((learner.student_id, a))
        cells += [_score(g.score), passed_words[g.passed]] if g else ["", ""]
    return cells


def moodle_rows(grades: list[Grade]) -> list[list[str]]:
    """Header and one row per learner of Moodle's CSV grade import."""
    assignments = _assignments(grades)
    by = {(g.student_id, g.assignment): g for g in grades}
    header = list(MOODLE_IDENTITY)
    for a in assignments:
        header += [a, f"{a} passed"]
    rows = [header]
    for learner in _learners(grades):
        rows.append(
            [learner.first_name, learner.last_name, learner.student_id, learner.email]
            + _score_cells(by, learner, assignments, MOODLE_PASSED)
        )
    return rows


def plain_rows(grades: list[Grade]) -> list[list[str]]:
    rows = [list(PLAIN_COLUMNS)]
    for g in sorted(grades, key=lambda g: (g.student_id, g.assignment)):
        rows.append(
            [
                g.student_id,
                g.last_name,
                g.first_name,
                g.email,
                g.assignment,
                _score(g.score),
                _score(g.max_score),
                g.passed,
            ]
        )
    return rows


def rows_for(grades: list[Grade], fmt: str, canvas_ids: dict[str, str] | None = None) -> list[list[str]]:
    if fmt not in FORMATS:
        raise InputError("format", f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if canvas_ids and fmt != "canvas":
        raise InputError("canvas_ids", f"canvas_ids apply to the canvas format only, got format {fmt!r}")
    if fmt == "canvas":
        return canvas_rows(grades, canvas_ids)
    return moodle_rows(grades) if fmt == "moodle" else plain_rows(grades)


def to_csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)  # RFC 4180 line ends, as both LMSs export
    return out.getvalue()


def export_grades(
    source: str | os.PathLike,
    fmt: str,
    output: str | os.PathLike | None = None,
    *,
    course_id: str = "gpucost-lab",
    canvas_ids: dict[str, str] | None = None,
) -> str:
    """The grades in ``source`` in format ``fmt``, as CSV text; also written to ``output`` when given."""
    if fmt not in FORMATS:  # before reading: a wrong format is said first
        raise InputError("format", f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if output is not None:  # checked before the gradebook is read
        output_file("output", output)
    grades = read_grades(source, course_id)
    if not grades:
        raise InputError("source", f"source has no grades, got {str(source)!r} (run `nbgrader autograde` first)")
    text = to_csv(rows_for(grades, fmt, canvas_ids))
    if output is not None:
        out = Path(output)
        try:
            atomic_write_text(out, text, name="output", newline="")  # "": the CSV's own \r\n
        except OSError as err:
            raise InputError("output", f"output {str(output)!r} could not be written ({err.strerror or err})") from None
    return text
