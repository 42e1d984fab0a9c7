"""The 95% intervals this machine printed for the chapters' measured questions, kept between runs.

A measured figure (a ratio timed on the learner's machine) moves from one Run All to the next by more than one run's
interval when the machine's load changes in between, as a busy laptop's does. So a measured checkpoint accepts an
answer inside this run's interval or inside one this machine printed for the same question before: the number a
learner read on the first run stays right after a second Run All. A busy run prints a wide interval, which may hold a
plausible mistake (the inverse of a ratio near 1), so each interval is kept with the plausible mistakes its own run
computed, and the checkpoint uses an earlier interval only where it excludes those and this run's
(``checkpoints``). The intervals go to ``$XDG_CACHE_HOME/gpucost-lab/measured-checkpoints.json`` (``~/.cache``
without it); a folder that cannot be written only means that this run's interval alone counts. One record per
interval printed: the same interval printed again (a check cell run twice) refreshes its record.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

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


class Earlier(NamedTuple):
    """An interval printed before for a question, and the plausible mistakes its own run computed."""

    low: float
    high: float
    mistakes: tuple[float, ...] = ()


def _read(path: Path) -> dict[str, list[list]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _entry(e: object) -> list | None:
    """A well-formed ``[low, high, at]`` or ``[low, high, at, [mistake, ...]]`` record, else None."""
    if not isinstance(e, list) or len(e) not in (3, 4) or not all(_number(x) for x in e[:3]):
        return None
    mistakes = e[3] if len(e) == 4 else []
    if not isinstance(mistakes, list) or not all(_number(x) for x in mistakes):
        return None
    return [float(e[0]), float(e[1]), float(e[2]), [float(x) for x in mistakes]]


def _recent(entries: object, now: float) -> list[list]:
    """The well-formed records younger than :data:`KEEP_S`, one per interval (the newest), newest last, at most the
    limit."""
    kept = [e for e in map(_entry, entries if isinstance(entries, list) else []) if e is not None]
    kept = [e for e in kept if 0 <= now - e[2] <= KEEP_S and e[0] <= e[1]]
    newest = {(e[0], e[1]): e for e in sorted(kept, key=lambda e: e[2])}
    return sorted(newest.values(), key=lambda e: e[2])[-KEEP_PER_QUESTION:]


def earlier_intervals(key: str, path: Path | None = None) -> list[Earlier]:
    """The intervals this machine printed recently for the question labelled ``key``, oldest first, each with the
    plausible mistakes its run computed."""
    entries = _read(path or store_path()).get(key)
    return [Earlier(low, high, tuple(mistakes)) for low, high, _, mistakes in _recent(entries, time.time())]


def remember(key: str, low: float, high: float, mistakes: Iterable[float] = (), path: Path | None = None) -> None:
    """Keep this run's interval for ``key`` with this run's plausible mistakes (their finite values); nothing happens
    where the cache cannot be written."""
    target, now = path or store_path(), time.time()
    data = _read(target)
    finite = [float(m) for m in mistakes if math.isfinite(m)]
    data[key] = _recent([*_recent(data.get(key), now), [low, high, now, finite]], now)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, json.dumps(data, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass
