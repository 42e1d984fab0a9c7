"""Which files a folder of rank traces holds, and the rank a file's name says (chapter 02, section 6):
:func:`trace_files` and :func:`rank_in_name`, used where the ranks are loaded (:mod:`gpucost_lab.timeline.ranks_load`)
and on each worker of a cluster (:mod:`gpucost_lab.timeline.ranks_cluster`), where a glob pattern is resolved too.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from gpucost_lab._validate import InputError

TRACE_SUFFIXES = (".json", ".json.gz")
_RANK_IN_NAME = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
_GLOB = re.compile(r"[*?[]")


def _folder_traces(folder: Path) -> list[Path]:
    """The trace files directly in ``folder`` (sorted), or ValueError naming it when there are none."""
    try:
        entries = sorted(folder.iterdir())
    except OSError as exc:
        raise ValueError(f"{folder}: cannot list the folder ({exc.strerror or exc})") from None
    traces = [p for p in entries if p.name.endswith(TRACE_SUFFIXES) and p.is_file()]
    if traces:
        return traces
    allowed = "allowed: a folder holding one trace per rank (*.json or *.json.gz)"
    if not entries:
        raise ValueError(f"{folder}: an empty folder; {allowed}")
    shown = ", ".join(p.name for p in entries[:3]) + (", ..." if len(entries) > 3 else "")
    raise ValueError(f"{folder}: no trace files in this folder ({len(entries)} other entries: {shown}); {allowed}")


def path_items(paths) -> list[str | os.PathLike]:
    """``paths`` as a list of folders, files and glob patterns; InputError for anything else or nothing."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else paths
    try:
        items = list(items)
    except TypeError:
        raise InputError("paths", f"paths must be a folder, a trace file or a list of them, got {paths!r}") from None
    if not items:
        raise InputError("paths", "paths must name at least one folder or trace file, got none")
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise InputError("paths", f"paths must hold folder or trace-file paths, got {item!r}")
    return items


def _matches(item, missing_ok: bool) -> list[Path]:
    """The paths one item names: itself, or a glob pattern's matches (sorted); ValueError when none exists, unless
    ``missing_ok`` (a cluster's worker, which may hold none of a job's files)."""
    found = [Path(m) for m in sorted(glob.glob(str(item)))] if _GLOB.search(str(item)) else [Path(item)]
    found = [f for f in found if f.exists()]
    if not found and not missing_ok:
        what = "no file or folder matches" if _GLOB.search(str(item)) else "no such trace file or folder"
        raise ValueError(f"{item}: {what}")
    return found


def trace_files(paths, *, missing_ok: bool = False) -> list[Path]:
    """The trace files ``paths`` names: a folder (its ``*.json`` / ``*.json.gz`` files, not its subfolders), a file,
    a glob pattern (``/traces/*/rank*.json``: each match a folder or a file), or a list of them, in that order (each
    folder's files sorted by name). ``missing_ok``: a path that does not exist names no file instead of failing."""
    files: list[Path] = []
    for item in path_items(paths):
        for path in _matches(item, missing_ok):
            files += _folder_traces(path) if path.is_dir() else [path]
    seen: dict[Path, Path] = {}
    for f in files:
        key = f.resolve()
        if key in seen:
            raise ValueError(f"{f}: named twice (also as {seen[key]}); each rank's trace once")
        seen[key] = f
    return files


def rank_in_name(path: str) -> int | None:
    """The last ``rank<N>`` (``rank_<N>``, ``rank-<N>``, any case) in the file's name, or None."""
    found = _RANK_IN_NAME.findall(Path(path).name)
    return int(found[-1]) if found else None
