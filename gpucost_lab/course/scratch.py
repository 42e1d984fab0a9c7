"""Scratch folders for the files a chapter writes and nobody keeps (traces, checkpoints, a registry), removed when
the chapter's kernel ends (chapters 02, 04, 05, 06 and 07).

``tempfile.mkdtemp`` alone leaves a folder behind every time a chapter runs. ``scratch_folder("02")`` makes a fresh
``gpucost-ch02-XXXXXXXX`` folder in the system's temporary folder (``tempfile.gettempdir()``: ``TMPDIR`` where it is
set) and removes it, with everything in it, when the Python process that made it exits: a kernel shut down or
restarted from JupyterLab (both ask the kernel to exit, and it does), the end of a script, ``sys.exit``. Running the
cell again makes another folder, removed at exit too. A process forked from the kernel (a data loader's worker)
inherits the exit handler but never removes its parent's folder. A process killed outright (SIGKILL, a crash, a
kernel that did not exit when asked and was then killed) runs no exit handler: its folder stays where the system
clears its temporary files.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

from gpucost_lab._validate import InputError

#: A chapter's number as its file name starts (``"02"``), or a short lower-case name for another notebook (``"plan"``).
_CHAPTER = re.compile(r"\d{2}")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


def scratch_folder(chapter: str) -> Path:
    """A new, empty folder ``gpucost-chNN-...`` (``chapter="NN"``; ``gpucost-NAME-...`` for a short lower-case name)
    in the system's temporary folder, removed with all it holds when this process exits.

    The name says which chapter made it, so a folder left by a killed kernel is recognisable.
    """
    if not isinstance(chapter, str) or not (_CHAPTER.fullmatch(chapter) or _NAME.fullmatch(chapter)):
        raise InputError(
            "chapter",
            f"chapter must be a chapter's two digits ('02') or a short lower-case name ('plan'), got {chapter!r}",
        )
    label = f"ch{chapter}" if _CHAPTER.fullmatch(chapter) else chapter
    folder = Path(tempfile.mkdtemp(prefix=f"gpucost-{label}-"))
    atexit.register(_remove, folder, os.getpid())
    return folder


def _remove(folder: Path, owner_pid: int) -> None:
    """Remove ``folder`` and what it holds, in the process that made it only (never in a forked child)."""
    if os.getpid() == owner_pid:
        shutil.rmtree(folder, ignore_errors=True)
