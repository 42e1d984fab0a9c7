"""Every file the package writes is written atomically: a crash mid-write leaves the previous file intact.

The bytes go to a temporary file in the same folder, which is flushed, fsynced and renamed over the target
with ``os.replace``; then the folder is fsynced so the rename itself survives a power cut. If anything fails
before the rename, the target keeps its old content and the temporary file is removed. Used by the release
registry, the report, the simulated traces and the grade exports.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, TextIO

from ._validate import output_file


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


def _atomic(path: str | os.PathLike, write: Callable[[IO], None], mode: str, name: str, **open_kwargs) -> Path:
    path = output_file(name, path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, mode, **open_kwargs) as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone after a successful rename; removed after a failure
    _fsync_directory(path.parent)
    return path


def atomic_write(
    path: str | os.PathLike, write: Callable[[TextIO], None], *, name: str = "path", newline: str = "\n"
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


__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text"]
