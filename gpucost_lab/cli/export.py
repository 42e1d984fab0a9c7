"""``gpucost-lab export-grades``: the class's grades in an LMS's import format (instructors; grading.export).

Bad input (a missing gradebook, an unknown format, a CSV without the ``passed`` column) raises ValueError naming the
field; :mod:`gpucost_lab.cli.main` prints it as one line naming the flag (:data:`FLAGS` maps this module's fields)
and exits with status 2.
"""

from __future__ import annotations

import argparse
import csv
import io
import re

from gpucost_lab._validate import InputError
from gpucost_lab.cli.command import Command, Subcommands, add_json_flag
from gpucost_lab.grading.export import FORMATS, export_grades

# Library errors name the Python field; the CLI user typed the flag (or the positional argument).
FLAGS = {
    "source": "GRADEBOOK",
    "format": "--format",
    "output": "--output",
    "canvas_ids": "--canvas-id",
    "course_id": "--course-id",
}


def add_export_grades(sub: Subcommands) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "export-grades",
        help="the gradebook in an LMS's import format (Canvas gradebook CSV, "
        "Moodle grade import CSV, or plain CSV), with `passed`",
    )
    p.add_argument(
        "source",
        metavar="GRADEBOOK",
        nargs="?",
        default="gradebook.db",
        help="the course's gradebook.db, or the grades.csv `nbgrader export` wrote (default: gradebook.db here)",
    )
    p.add_argument("--format", required=True, metavar="|".join(FORMATS), help="canvas, moodle or csv")
    p.add_argument("-o", "--output", default=None, help="write the CSV here (default: print it)")
    p.add_argument(
        "--canvas-id",
        action="append",
        default=[],
        metavar="ASSIGNMENT=ID",
        dest="canvas_ids",
        help="canvas: fill the existing Canvas assignment ID with ASSIGNMENT's scores (repeatable; "
        "default: Canvas creates an assignment named ASSIGNMENT)",
    )
    p.add_argument("--course-id", default="gpucost-lab", help="the nbgrader course id (default: %(default)s)")
    add_json_flag(p, "print one JSON object: the output path, format and rows")
    return p


def _canvas_ids(pairs: list[str]) -> dict[str, str]:
    ids = {}
    for pair in pairs:
        name, sep, number = pair.partition("=")
        if not sep or not name or not re.fullmatch(r"[0-9]{1,20}", number.strip()):  # ASCII digits: "²" is a digit
            raise InputError(
                "canvas_ids", f"canvas_ids must be ASSIGNMENT=ID with an ID of 1-20 digits 0-9, got {pair!r}"
            )
        ids[name] = number.strip()
    return ids


def export_grades_command(args: argparse.Namespace) -> tuple[dict, str]:
    text = export_grades(
        args.source, args.format, args.output, course_id=args.course_id, canvas_ids=_canvas_ids(args.canvas_ids)
    )
    rows = len(list(csv.reader(io.StringIO(text)))) - 1
    out = {"format": args.format, "source": str(args.source), "output": args.output, "rows": rows}
    if args.output is None:
        return out, text.replace("\r\n", "\n").rstrip("\n")  # print() ends lines as the terminal does
    return out, f"wrote {args.output}: {args.format} import file, {rows} rows under the header"


COMMANDS = (
    Command(
        "export-grades",
        add_export_grades,
        export_grades_command,
        FLAGS,
        paths=("output", "source"),
        nested_input="source",
    ),
)
