"""How ``gpucost-lab`` reports bad input, for the commands of every chapter (README, "CLI reference"): one line on
stderr that names the flag the user typed, the value and what is allowed; and every other failure in one line too
(:func:`failure`: a file the system refuses, nesting too deep, memory run out, no grading sandbox, or the package's
own error, whose full report goes to a file), the library's warnings included (:func:`one_line_warnings`).

The library raises :class:`~gpucost_lab.InputError`, which names the Python field (``err.field``): the ``flags``
every function here is given (all the commands' :attr:`~gpucost_lab.cli.command.Command.flags`, merged by
:mod:`gpucost_lab.cli.main`) turn it into the flag (``price_per_hour_usd`` into ``--price-per-hour``), and every
other input the message names (``with activation_gb_per_sample=0.34``) is shown as its flag too. Another ValueError
keeps the older reading: the first word of its message is taken for the input's name.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Iterator, Mapping

from gpucost_lab._validate import NAME_MAX_BYTES, InputError
from gpucost_lab.cli.command import Command

EXIT_USAGE = 2  # bad input: one line naming it
EXIT_INTERNAL = 70  # an error of the package itself, not of the input (sysexits.h: EX_SOFTWARE)


def shown(value: object) -> str:
    """``value`` as text safe to print: control and other unprintable characters (a newline, an escape sequence,
    a right-to-left override) are escaped, ``\\n``, ``\\x1b``, ``\\u202e``, so every name stays on its line."""
    text = str(value)
    return (
        text
        if text.isprintable()
        else "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    )


def _named_inputs(flags: Mapping[str, str]) -> re.Pattern:
    """The inputs named inside a message: a snake_case word (never English) or any input given as "name=value"."""
    return re.compile(
        r"\b(?:"
        + "|".join(re.escape(k) for k in flags if "_" in k)
        + r")\b|\b(?:"
        + "|".join(re.escape(k) for k in flags)
        + r")(?==)"
    )


def error_line(command: str, err: ValueError, flags: Mapping[str, str]) -> str:
    """The line bad input prints: ``gpucost-lab COMMAND: error:``, the input as the flag typed, then the message
    with every other input it names as its flag (``flags``: field to flag).

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
    rest = _named_inputs(flags).sub(lambda m: flags[m[0]], rest)
    return shown(f"gpucost-lab {command}: error: {flags.get(field, field)}{rest}")


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


def _os_error_line(command: str, args: argparse.Namespace, err: OSError, flags: Mapping[str, str]) -> str:
    import errno

    field = _path_input(args, err.filename) or _path_input(args, err.filename2)
    what = err.strerror or str(err)
    allowed_for: dict[int | None, str] = {
        errno.ENAMETOOLONG: f"a path whose names hold at most {NAME_MAX_BYTES} bytes each",
        errno.EACCES: "a path you may read (and, for an output, write)",
        errno.ELOOP: "a path without a loop of symbolic links",
    }
    allowed = allowed_for.get(err.errno, "an existing path you may read (and, for an output, write)")
    if field is None:
        where = f"{os.fsdecode(err.filename)}: " if err.filename is not None else ""
        return shown(f"gpucost-lab {command}: error: {where}{what}; allowed: {allowed}")
    value = getattr(args, field)
    inner = os.fsdecode(err.filename) if err.filename is not None else None
    where = f" ({inner})" if inner is not None and inner != value else ""
    return error_line(command, InputError(field, f"{field} {value!r}: {what}{where}; allowed: {allowed}"), flags)


@contextlib.contextmanager
def writing(field: str, path: str | None) -> Iterator[None]:
    """An OSError while writing ``path`` (a full disk, a folder made unwritable meanwhile) as a one-line InputError;
    the writers leave no half-written file."""
    try:
        yield
    except OSError as err:
        raise InputError(
            field,
            f"{field} {path!r} could not be written ({err.strerror or err}); allowed: a file path in "
            f"an existing folder you may write to, on a disk with room",
        ) from None


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


def check_inputs(args: argparse.Namespace, command: Command) -> None:
    """Checks made before ``command`` runs: its own (``command.checks``), then that no argument naming a file or
    folder (``command.paths``) is empty, which would be read as the working directory ("" is ".")."""
    for check in command.checks:
        check(args)
    for field in command.paths:
        value = getattr(args, field, None)
        for v in value if isinstance(value, list) else [value]:
            if v is not None and not str(v).strip():
                raise InputError(field, f"{field} must name a file or folder, got {v!r}")


def failure(command: Command, args: argparse.Namespace, err: Exception, flags: Mapping[str, str]) -> tuple[str, int]:
    """The line and exit status of an exception that is not a ValueError: a file the system refuses (a name too
    long, no permission), input nested too deep to read, memory run out, no grading sandbox on this machine (each
    bad input: status 2), else an error of the package itself (status 70, its report written to a file)."""
    from gpucost_lab.grading.sandbox import SandboxUnavailable

    name = command.name
    if isinstance(err, SandboxUnavailable):  # the line says what to install or allow
        return shown(f"gpucost-lab {name}: error: {err}"), EXIT_USAGE
    if isinstance(err, OSError):
        return _os_error_line(name, args, err, flags), EXIT_USAGE
    if isinstance(err, RecursionError):
        field = command.nested_input
        value = getattr(args, field, None)
        said = f"{field} {value!r} is nested too deep to read; allowed: JSON nested at most 64 levels"
        return error_line(name, InputError(field, said), flags), EXIT_USAGE
    if isinstance(err, MemoryError):
        return (
            shown(
                f"gpucost-lab {name}: error: out of memory: these inputs need more memory than this process may "
                f"use; make them smaller (README, CLI reference: each command's limits)"
            ),
            EXIT_USAGE,
        )
    return internal_error(name, err), EXIT_INTERNAL
