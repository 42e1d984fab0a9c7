"""How ``gpucost-lab`` reports bad input, for the commands of every chapter (README, "CLI reference"): one line on
stderr that names the flag the user typed, the value and what is allowed; and every other failure in one line too
(:func:`failure`: a file the system refuses, nesting too deep, memory run out, or the package's own error, whose
full report goes to a file), the library's warnings included (:func:`one_line_warnings`).

The library raises :class:`~gpucost_lab.InputError`, which names the Python field (``err.field``):
:data:`FLAGS` turns it into the flag (``price_per_hour_usd`` into ``--price-per-hour``), and every other input the
message names (``with activation_gb_per_sample=0.34``) is shown as its flag too. Another ValueError keeps the older
reading: the first word of its message is taken for the input's name.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from gpucost_lab._validate import NAME_MAX_BYTES, InputError
from gpucost_lab.cli import grading as cli_grading
from gpucost_lab.cli import memory as cli_memory
from gpucost_lab.simulate.config import SimConfig

# Library errors name the Python field (InputError.field); the CLI user typed the flag. The memory and grading
# commands bring their own; a command added later (cli_export) adds its flags here.
FLAGS = {
    **{
        name: "--" + name.replace("_", "-")
        for name in (
            *("throughput_gain", "steps_change", "baseline_hours", "window_hours", "repeats", "rounds", "device"),
            *("top", "scenario", "candidate", "registry", "report", *SimConfig.__dataclass_fields__),
            *("output", "student", "learner", "assignment", "source_root"),  # output: simulate -o
        )
    },
    "price_per_hour_usd": "--price-per-hour",
    "timeout_s": "--timeout",
    "after": "--after",  # diff's sides
    "before": "BEFORE",
    **cli_memory.FLAGS,  # ledger, fix-oom
    **cli_grading.FLAGS,  # grade-class
}


def shown(value: object) -> str:
    """``value`` as text safe to print: control and other unprintable characters (a newline, an escape sequence,
    a right-to-left override) are escaped, ``\\n``, ``\\x1b``, ``\\u202e``, so every name stays on its line."""
    text = str(value)
    return (
        text
        if text.isprintable()
        else "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    )


def _named_inputs() -> re.Pattern:
    """The inputs named inside a message: a snake_case word (never English) or any input given as "name=value"."""
    return re.compile(
        r"\b(?:"
        + "|".join(re.escape(k) for k in FLAGS if "_" in k)
        + r")\b|\b(?:"
        + "|".join(re.escape(k) for k in FLAGS)
        + r")(?==)"
    )


def error_line(command: str, err: ValueError) -> str:
    """The line bad input prints: ``gpucost-lab COMMAND: error:``, the input as the flag typed, then the message
    with every other input it names as its flag.

    An InputError's message opens with its field, which the flag replaces (``--price-per-hour must be > 0, got
    0.0``); one opening otherwise follows the flag and a colon. For another ValueError the message's first word is
    taken for the input's name (a file path, a trace's field), shown as its flag when it is one."""
    text = str(err)
    if isinstance(err, InputError):
        field, rest = err.field, text[len(err.field) :]
        if not text.startswith(field) or rest[:1].isalnum() or rest[:1] == "_":
            rest = f": {text}"
    else:
        field, _, rest = text.partition(" ")
        rest = " " + rest
    rest = _named_inputs().sub(lambda m: FLAGS[m[0]], rest)
    return shown(f"gpucost-lab {command}: error: {FLAGS.get(field, field)}{rest}")


EXIT_USAGE = 2  # bad input: one line naming it
EXIT_INTERNAL = 70  # an error of the package itself, not of the input (sysexits.h: EX_SOFTWARE)
# The input a command's nested data comes from, named when it is too deep to read (a RecursionError).
_NESTED_INPUT = {
    "analyze": "trace",
    "diff": "before",
    "grade": "notebook",
    "self-check": "notebook",
    "grade-class": "submitted_dir",
    "plan": "registry",
    "export-grades": "source",
}


def _path_input(args: argparse.Namespace, filename) -> str | None:
    """The argument that names ``filename`` (or a file inside it): its field, for an OSError's line."""
    if filename is None:
        return None
    wanted = os.fsdecode(filename) if isinstance(filename, bytes) else str(filename)
    for field, value in vars(args).items():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v and (wanted == v or wanted.startswith(v.rstrip(os.sep) + os.sep)):
                return field
    return None


def _os_error_line(command: str, args: argparse.Namespace, err: OSError) -> str:
    import errno

    field = _path_input(args, err.filename) or _path_input(args, err.filename2)
    what = err.strerror or str(err)
    allowed = {
        errno.ENAMETOOLONG: f"a path whose names hold at most {NAME_MAX_BYTES} bytes each",
        errno.EACCES: "a path you may read (and, for an output, write)",
        errno.ELOOP: "a path without a loop of symbolic links",
    }.get(err.errno, "an existing path you may read (and, for an output, write)")
    if field is None:
        where = f"{os.fsdecode(err.filename)}: " if err.filename is not None else ""
        return shown(f"gpucost-lab {command}: error: {where}{what}; allowed: {allowed}")
    value = getattr(args, field)
    inner = os.fsdecode(err.filename) if err.filename is not None else None
    where = f" ({inner})" if inner is not None and inner != value else ""
    return error_line(command, InputError(field, f"{field} {value!r}: {what}{where}; allowed: {allowed}"))


def internal_error(command: str, err: BaseException) -> str:
    """Write the full report of an unexpected error to a file; the one line that says so and where it is."""
    import tempfile
    import time
    import traceback

    from gpucost_lab.atomic import atomic_write_text

    report = "".join(traceback.format_exception(err))
    try:
        where = atomic_write_text(
            os.path.join(
                tempfile.gettempdir(), f"gpucost-lab-{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
            ),
            f"gpucost-lab {command}: {' '.join(map(repr, sys.argv[1:]))}\n{report}",
        )
        said = f"the full report is in {where}"
    except Exception:  # noqa: BLE001 - nowhere to write it: say so, still in one line
        said = "the full report could not be written"
    detail = (str(err).strip().splitlines() or [""])[0][:200]
    return shown(
        f"gpucost-lab {command}: internal error (not your input): {type(err).__name__}"
        f"{': ' + detail if detail else ''}; {said}"
    )


def one_line_warnings(command: str):
    """Print each warning (the package's notes, a library's) as one line on stderr, never its source line."""

    def show(message, category, filename, lineno, file=None, line=None):
        text = (str(message).strip().splitlines() or [category.__name__])[0]
        print(shown(f"gpucost-lab {command}: note: {text}"), file=sys.stderr)

    return show


# The arguments that name a file or folder: an empty one would be read as the working directory ("" is ".").
_PATHS = (
    "trace",
    "before",
    "after",
    "output",
    "registry",
    "report",
    "notebook",
    "submitted_dir",
    "source",
    "source_root",
    "feedback_dir",
    "feedback",
)


def check_inputs(args: argparse.Namespace) -> None:
    """Checks every command shares, made before the command runs: no empty path; the grading commands' --timeout
    (an integer of 400 digits overflowed the grader's own check)."""
    timeout = getattr(args, "timeout", None)
    if args.command in ("grade", "self-check", "grade-class") and not (
        isinstance(timeout, int) and 1 <= timeout <= 3600
    ):
        raise InputError("timeout_s", f"timeout_s must be a whole number of seconds from 1 to 3600, got {timeout!r}")
    for field in _PATHS:
        value = getattr(args, field, None)
        for v in value if isinstance(value, list) else [value]:
            if v is not None and not str(v).strip():
                raise InputError(field, f"{field} must name a file or folder, got {v!r}")


def failure(command: str, args, err: Exception) -> tuple[str, int]:
    """The line and exit status of an exception that is not a ValueError: a file the system refuses (a name too
    long, no permission), input nested too deep to read, memory run out (each bad input: status 2), else an error of
    the package itself (status 70, its report written to a file)."""
    if isinstance(err, OSError):
        return _os_error_line(command, args, err), EXIT_USAGE
    if isinstance(err, RecursionError):
        field = _NESTED_INPUT.get(command, "input")
        value = getattr(args, field, None)
        said = f"{field} {value!r} is nested too deep to read; allowed: JSON nested at most 64 levels"
        return error_line(command, InputError(field, said)), EXIT_USAGE
    if isinstance(err, MemoryError):
        return (
            shown(
                f"gpucost-lab {command}: error: out of memory: these inputs need more memory than this process may "
                f"use; make them smaller (README, CLI reference: each command's limits)"
            ),
            EXIT_USAGE,
        )
    return internal_error(command, err), EXIT_INTERNAL
