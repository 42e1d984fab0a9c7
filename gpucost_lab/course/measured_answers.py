"""The 95% intervals this machine printed for the chapters' measured questions, kept between runs.

A measured figure (a ratio timed on the learner's machine) moves from one Run All to the next by more than one run's
interval when the machine's load changes in between, as a busy laptop's does. So a measured checkpoint accepts an
answer inside this run's interval or inside one this machine printed for the same question before: the number a
learner read on the first run stays right after a second Run All, and a mistake (a wrong formula, unit or side)
lies outside them all. The intervals go to ``$XDG_CACHE_HOME/gpucost-lab/measured-checkpoints.json`` (``~/.cache``
without it); a folder that cannot be written only means that this run's interval alone counts.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from gpucost_lab.atomic import atomic_write_text

#: How long and how many intervals per question are kept: a chapter re-run within the course's work on it, not the
#: figures of another machine or another month (a learner who changed machines measures again).
KEEP_S = 14 * 24 * 3600
KEEP_PER_QUESTION = 20


#: A file named here replaces the default store (the tests give each session its own).
STORE_ENV = "GPUCOST_LAB_MEASURED_STORE"


def store_path() -> Path:
    """Where the intervals are kept: ``$GPUCOST_LAB_MEASURED_STORE``, else
    ``$XDG_CACHE_HOME/gpucost-lab/measured-checkpoints.json`` (``~/.cache`` without it)."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpucost-lab" / "measured-checkpoints.json"


def _read(path: Path) -> dict[str, list[list[float]]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _recent(entries: object, now: float) -> list[list[float]]:
    """The well-formed ``[low, high, at]`` entries younger than :data:`KEEP_S`, newest last, at most the limit."""
    kept = [
        [float(x) for x in e]
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, list) and len(e) == 3 and all(isinstance(x, (int, float)) for x in e)
    ]
    return [e for e in kept if 0 <= now - e[2] <= KEEP_S and e[0] <= e[1]][-KEEP_PER_QUESTION:]


def earlier_intervals(key: str, path: Path | None = None) -> list[tuple[float, float]]:
    """The ``(low, high)`` intervals this machine printed recently for the question labelled ``key``, oldest first."""
    entries = _read(path or store_path()).get(key)
    return [(low, high) for low, high, _ in _recent(entries, time.time())]


def remember(key: str, low: float, high: float, path: Path | None = None) -> None:
    """Keep this run's interval for ``key``; nothing happens where the cache cannot be written."""
    target, now = path or store_path(), time.time()
    data = _read(target)
    data[key] = _recent([*_recent(data.get(key), now), [low, high, now]], now)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, json.dumps(data, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass
