"""Every file the package writes is written atomically: a crash mid-write leaves the previous file intact.

The bytes go to a temporary file in the same folder, ``.NAME.PID.XXXXXXXX.tmp`` (the writer's process id and 8
random hex digits), which is flushed, fsynced and renamed over the target with ``os.replace``; then the folder is
fsynced so the rename itself survives a power cut. If anything fails before the rename, the target keeps its old
content and the temporary file is removed. Used by the release registry, the report, the simulated traces and the
grade exports.

A writer killed mid-write (``kill -9``, a lost machine) cannot remove its temporary file, so the next write to the
same path does: a file of this pattern for that target (or of the older ``.NAME.<32 hex>.tmp`` one) last modified
before this process started is removed when the process named in it no longer runs (or the name holds none). One
whose process still runs (another write under way, or its id since reused) or that cannot be removed is left and
named in one line, as a :class:`LeftoverTemporaryFiles` warning (the CLI prints it as one line on stderr).

:func:`prepare` writes the temporary file and returns a :class:`Pending` write to :meth:`~Pending.commit` (rename)
or :meth:`~Pending.discard`: two files written as one decision (``gpucost-lab plan``'s registry and report) are
both prepared before either is renamed.
"""

from __future__ import annotations

import os
import re
import secrets
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, BinaryIO, TextIO

from gpucost_lab._validate import TEMPORARY_NAME_EXTRA_BYTES, output_file

STARTED_AT = time.time()  # "older than this process": the module is loaded when the package's commands start


class LeftoverTemporaryFiles(UserWarning):
    """Temporary files of an earlier write to the same path that were left in place (their writer may still run)."""


def _temporary_name(path: Path) -> Path:
    name = f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    assert len(os.fsencode(name)) - len(os.fsencode(path.name)) <= TEMPORARY_NAME_EXTRA_BYTES
    return path.with_name(name)


def _pattern(path: Path) -> re.Pattern:
    return re.compile(r"\." + re.escape(path.name) + r"\.(?:(?P<pid>[0-9]{1,10})\.[0-9a-f]{8}|[0-9a-f]{32})\.tmp")


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if pid <= 0:  # 0 and -1 would signal groups of processes: no writer has that id
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except (OverflowError, ValueError):  # an id no system gives
        return False
    return True


def stale_temporary_files(path: str | os.PathLike) -> tuple[list[Path], list[Path]]:
    """``(removable, kept)``: the temporary files of earlier writes to ``path`` made before this process started,
    split by whether their writer has gone (module doc)."""
    path = Path(path)
    pattern = _pattern(path)
    removable: list[Path] = []
    kept: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return [], []
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if not match:
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_mtime >= STARTED_AT:
                continue
        except OSError:
            continue
        pid = match["pid"]
        (kept if pid is not None and _running(int(pid)) else removable).append(Path(entry.path))
    return removable, kept


def remove_stale_temporary_files(path: str | os.PathLike) -> list[Path]:
    """Remove the stale temporary files of ``path`` (:func:`stale_temporary_files`); warn, in one line, of those left.
    Returns the files removed."""
    removable, kept = stale_temporary_files(path)
    removed = []
    for tmp in removable:
        try:
            tmp.unlink()
            removed.append(tmp)
        except FileNotFoundError:
            pass
        except OSError:
            kept.append(tmp)
    if kept:
        names = ", ".join(str(p) for p in kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        warnings.warn(
            LeftoverTemporaryFiles(
                f"{len(kept)} temporary file{'s' if len(kept) > 1 else ''} of an earlier write to {str(path)!r} "
                f"left in place (its writer may still run, or it cannot be removed): {names}"
            ),
            stacklevel=3,
        )
    return removed


def _fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable where the platform allows opening a folder (not Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Pending:
    """A file written to its temporary name, not yet renamed over its target: :meth:`commit` or :meth:`discard`."""

    def __init__(self, path: Path, tmp: Path):
        self.path, self.tmp, self.done = path, tmp, False

    def commit(self) -> Path:
        """Rename the temporary file over the target (atomic), then make the rename durable. Returns the target."""
        try:
            os.replace(self.tmp, self.path)
        finally:
            self.discard()  # gone after a successful rename; removed after a failure
        _fsync_directory(self.path.parent)
        return self.path

    def discard(self) -> None:
        """Remove the temporary file: the target keeps its old content."""
        self.done = True
        self.tmp.unlink(missing_ok=True)


def prepare(
    path: str | os.PathLike, write: Callable[[IO], object], mode: str = "xb", name: str = "path", **kw
) -> Pending:
    """Write ``path``'s new content to its temporary file (flushed and fsynced) and return it as a :class:`Pending`
    write; nothing is left behind when ``write`` fails. Stale temporary files of ``path`` go first (module doc)."""
    path = output_file(name, path)
    remove_stale_temporary_files(path)
    tmp = _temporary_name(path)
    try:
        with open(tmp, mode, **kw) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return Pending(path, tmp)


def _atomic(path: str | os.PathLike, write: Callable[[Any], object], mode: str, name: str, **open_kwargs) -> Path:
    return prepare(path, write, mode, name, **open_kwargs).commit()


def atomic_write(
    path: str | os.PathLike, write: Callable[[TextIO], object], *, name: str = "path", newline: str = "\n"
) -> Path:
    """Write a UTF-8 text file atomically: ``write(f)`` fills the temporary file. Returns the path.

    ``name`` is the field a bad ``path`` is reported as; ``newline`` as for :func:`open` (``""`` keeps the
    ``\\r\\n`` of a CSV writer)."""
    return _atomic(path, write, "x", name, encoding="utf-8", newline=newline)


def atomic_write_text(path: str | os.PathLike, text: str, *, name: str = "path", newline: str = "\n") -> Path:
    """:func:`atomic_write` of a string."""
    return atomic_write(path, lambda f: f.write(text), name=name, newline=newline)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, name: str = "path") -> Path:
    """Write ``data`` to ``path`` atomically. Returns the path."""
    return _atomic(path, lambda f: f.write(data), "xb", name)


def atomic_write_stream(path: str | os.PathLike, write: Callable[[BinaryIO], object], *, name: str = "path") -> Path:
    """Write a binary file atomically, ``write(f)`` filling the temporary file a piece at a time. Returns the path."""
    return _atomic(path, write, "xb", name)


__all__ = [
    "LeftoverTemporaryFiles",
    "Pending",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_stream",
    "atomic_write_text",
    "prepare",
    "remove_stale_temporary_files",
    "stale_temporary_files",
]
