"""Input checks shared by every module: each error names the field, the value and what is allowed.

Every check raises :class:`InputError`, a ValueError that also carries the field's name (``err.field``), so a caller
that shows the error in its own terms (the CLI's flags, a widget's labels) need not read it out of the message.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from numbers import Integral, Real
from pathlib import Path

FLOAT_MAX = sys.float_info.max  # the largest finite float, about 1.8e308


class InputError(ValueError):
    """A bad input: ``field`` names it (dotted or indexed for a nested one: ``scenario.steps``, ``runs[2].seed``),
    and the message, ``str(err)``, opens with that name, then says the value and what is allowed.

    A ValueError, so ``except ValueError`` and ``pytest.raises(ValueError, match=...)`` still catch it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self):  # pickles (to another process) with its field
        return type(self), (self.field, str(self))


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InputError(name, f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise InputError(name, f"{name} must be a finite number, got {value!r}")
    return x


def positive(name: str, value: object) -> float:
    """Return ``value`` as a float if it is finite and > 0, else raise InputError."""
    x = _number(name, value)
    if x <= 0:
        raise InputError(name, f"{name} must be > 0, got {value!r}")
    return x


def non_negative(name: str, value: object) -> float:
    """Return ``value`` as a float if it is finite and >= 0, else raise InputError."""
    x = _number(name, value)
    if x < 0:
        raise InputError(name, f"{name} must be >= 0, got {value!r}")
    return x


def greater_than(name: str, value: object, bound: float) -> float:
    """Return ``value`` as a float if it is finite and > ``bound``."""
    x = _number(name, value)
    if x <= bound:
        raise InputError(name, f"{name} must be > {bound:g}, got {value!r}")
    return x


def fraction(name: str, value: object, *, include_zero: bool = True, include_one: bool = False) -> float:
    """Return ``value`` if it lies in [0, 1), (0, 1], [0, 1] or (0, 1) as the flags say."""
    x = _number(name, value)
    low_ok = x >= 0 if include_zero else x > 0
    high_ok = x <= 1 if include_one else x < 1
    if not (low_ok and high_ok):
        interval = ("[" if include_zero else "(") + "0, 1" + ("]" if include_one else ")")
        raise InputError(name, f"{name} must be in {interval}, got {value!r}")
    return x


def integer_at_least(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """Return ``value`` as an int if it is an integer >= ``minimum`` (and <= ``maximum`` when one is given)."""
    allowed = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InputError(name, f"{name} must be an integer {allowed}, got {value!r}")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        raise InputError(name, f"{name} must be an integer {allowed}, got {value!r}")
    return number


def too_large(name: str, value: object, limit: float, given: str, beyond: str) -> InputError:
    """The error for an input too large for a result: ``name`` must be <= ``limit`` with the ``given`` inputs,
    as ``beyond`` it a result overflows (or passes a stated bound)."""
    return InputError(name, f"{name} must be <= {limit:.6g} with {given}: beyond it {beyond}, got {value!r}")


# Output paths (every file the package writes goes through gpucost_lab.atomic, which writes a temporary file beside
# the target and renames it). One name in a path may hold at most 255 bytes on ext4, XFS, btrfs, APFS and tmpfs (NTFS:
# 255 UTF-16 units), and a whole path at most 4,096 on Linux (PATH_MAX, the final NUL included). The temporary name
# adds TEMPORARY_NAME_EXTRA_BYTES to the target's (".NAME.PID.8-hex.tmp": a dot, a dot, at most 10 digits, a dot, 8
# hex digits, ".tmp"), so a target's own name may hold at most MAX_OUTPUT_NAME_BYTES: checked before any work, not
# found when the temporary file cannot be created at the end.
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4095
TEMPORARY_NAME_EXTRA_BYTES = 25
MAX_OUTPUT_NAME_BYTES = NAME_MAX_BYTES - TEMPORARY_NAME_EXTRA_BYTES


def _path_text(name: str, path: object) -> str:
    """``path`` as text, refused when it is no path, is empty or holds a NUL (which no system call takes)."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not isinstance(text, str) or not text:
        raise InputError(name, f"{name} must name a file, got {path!r}")
    if "\x00" in text:
        raise InputError(name, f"{name} must not hold a NUL character, got {text!r}")
    return text


def path_lengths(name: str, text: str, last_max: int = NAME_MAX_BYTES) -> None:
    """InputError naming ``name`` when a name in the path ``text`` is longer than the file system allows (the last one
    at most ``last_max`` bytes) or the whole path is."""
    encoded = os.fsencode(text)
    parts = encoded.split(os.fsencode(os.sep))
    longest = max(parts, key=len)
    if len(parts[-1]) > last_max:
        extra = (
            f" (the file system allows {NAME_MAX_BYTES}, and the temporary file written first adds "
            f"{TEMPORARY_NAME_EXTRA_BYTES})"
            if last_max < NAME_MAX_BYTES
            else ""
        )
        raise InputError(
            name,
            f"{name} must end in a name of at most {last_max} bytes{extra}, got one of {len(parts[-1])} bytes: "
            f"{text[:60]!r}...",
        )
    if len(longest) > NAME_MAX_BYTES:
        raise InputError(
            name,
            f"{name} must be made of names of at most {NAME_MAX_BYTES} bytes each (the file system's limit), got one "
            f"of {len(longest)} bytes: {text[:60]!r}...",
        )
    if len(encoded) + TEMPORARY_NAME_EXTRA_BYTES > PATH_MAX_BYTES:
        raise InputError(
            name,
            f"{name} must be at most {PATH_MAX_BYTES - TEMPORARY_NAME_EXTRA_BYTES} bytes long (the system's limit "
            f"on a path, less the temporary file's extra {TEMPORARY_NAME_EXTRA_BYTES}), got {len(encoded)} bytes: "
            f"{text[:60]!r}...",
        )


def output_file(name: str, path: object) -> Path:
    """Return ``path`` as a Path if a file can be written (or replaced) there: a file name (not empty, not ending in
    ``/``, ``.`` or ``..``) short enough for its temporary file (:data:`MAX_OUTPUT_NAME_BYTES`), not a folder nor a
    special file, in an existing folder that may be written to."""
    text = _path_text(name, path)
    if os.path.basename(text) in ("", ".", ".."):
        raise InputError(
            name, f"{name} must name a file, not a folder (it ends in {os.path.basename(text) or '/'!r}), got {text!r}"
        )
    path_lengths(name, text, MAX_OUTPUT_NAME_BYTES)
    p = Path(text)
    try:
        if p.is_dir():
            raise InputError(name, f"{name} must be a file path, not a folder, got {text!r}")
        if p.exists() and not p.is_file():
            raise InputError(name, f"{name} must be a regular file (or a new one), got {text!r}")
        if not p.parent.is_dir():
            raise InputError(name, f"{name} must be in an existing folder, got {text!r}")
        if not os.access(p.parent, os.W_OK | os.X_OK):
            raise InputError(name, f"{name} must be in a folder you may write to, got {text!r}")
    except OSError as err:  # a link loop, a folder that cannot be searched, ...
        raise InputError(
            name,
            f"{name} {text!r} cannot be written ({err.strerror or err}); allowed: a file path in an existing "
            f"folder you may write to",
        ) from None
    return p


def input_file(name: str, path: object, what: str = "file") -> tuple[Path, os.stat_result]:
    """``path`` as a Path and its status if it names a regular file that may be read: not missing, not a folder, and
    not a FIFO, a socket or a device (reading one may never end); InputError naming ``name`` otherwise."""
    import stat as _stat

    text = _path_text(name, path)
    path_lengths(name, text)
    try:
        status = os.stat(text)
    except FileNotFoundError:
        raise InputError(name, f"{name} {text!r}: no such {what}") from None
    except OSError as err:
        raise InputError(name, f"{name} {text!r} cannot be read ({err.strerror or err})") from None
    if _stat.S_ISDIR(status.st_mode):
        raise InputError(name, f"{name} {text!r} is a directory; allowed: a {what}")
    if not _stat.S_ISREG(status.st_mode):
        kind = (
            "a FIFO (named pipe)"
            if _stat.S_ISFIFO(status.st_mode)
            else "a socket"
            if _stat.S_ISSOCK(status.st_mode)
            else "a device"
            if _stat.S_ISCHR(status.st_mode) or _stat.S_ISBLK(status.st_mode)
            else "not a regular file"
        )
        raise InputError(name, f"{name} {text!r} is {kind}, which may never end; allowed: a regular {what}")
    return Path(text), status


# Prices (every command's --price-per-hour): a price per accelerator-hour (or per hour of the run's hardware) within
# these bounds. Below a millionth of a dollar an hour every cost the commands print is 0 to their digits, and a
# subnormal price (1e-320) makes a cost per sample 0, which no log-scale interval can take; above a million dollars
# an hour is more than any cluster rents for: a typo, which could also overflow a night's cost.
MIN_PRICE_PER_HOUR_USD = 1e-6
MAX_PRICE_PER_HOUR_USD = 1e6


def price_per_hour(name: str, value: object) -> float:
    """Return ``value`` as a float if it is a price per hour within [MIN_PRICE_PER_HOUR_USD, MAX_PRICE_PER_HOUR_USD]
    (a price <= 0 gets :func:`positive`'s message)."""
    x = positive(name, value)
    if not MIN_PRICE_PER_HOUR_USD <= x <= MAX_PRICE_PER_HOUR_USD:
        raise InputError(
            name,
            f"{name} must be in [{MIN_PRICE_PER_HOUR_USD:g}, {MAX_PRICE_PER_HOUR_USD:g}] USD per hour (below, every "
            f"cost rounds to nothing; above, more than any cluster rents for), got {value!r}",
        )
    return x


def one_of(name: str, value: object, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise InputError(name, f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def non_empty_text(name: str, value: object) -> str:
    """Return ``value`` if it is a string holding more than whitespace (a name, a title, a summary)."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(name, f"{name} must be a non-empty string, got {value!r}")
    return value
