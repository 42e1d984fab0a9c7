"""The release registry (chapter 06): what is in production, and every decision that put it there.

:class:`Registry` keeps the release history in a JSON file written atomically (:func:`gpucost_lab.atomic.atomic_write`:
temporary file in the same folder, flush, ``fsync``, ``os.replace``, ``fsync`` of the folder), so a crash mid-write
leaves the previous registry intact; a corrupt file raises ``ValueError`` naming it and is never silently reset.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from gpucost_lab._validate import InputError
from gpucost_lab.atomic import Pending, prepare
from gpucost_lab.release.gate import Decision

REGISTRY_FORMAT = "gpucost-lab release registry"
REGISTRY_VERSION = 1
# A recorded decision takes about 2 KB of JSON: 64 MiB hold some 30,000 of them, decades of nightly releases. A
# larger file is refused before it is read (it is not one this module wrote), as is one nested deeper than
# MAX_REGISTRY_DEPTH levels (the registry nests 6: document, history, entry, decision, reasons, a reason).
MAX_REGISTRY_BYTES = 64 * 2**20
MAX_REGISTRY_DEPTH = 32


# --------------------------------------------------------------------------------------------------
# the registry


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Registry:
    """The releases of one workload, in a JSON file: what is in production and what was decided.

    - ``current()``: the release in production now (``None`` before anything was recorded).
    - ``last_known_good()``: the newest promoted release that has not been rolled back (``None`` before
      the first promotion). Pass it as ``gate(..., fallback=registry.last_known_good())``.
    - ``record(decision)``: appends the decision with its time. A promotion makes the candidate both the
      current and the last known-good release; a fallback never makes its candidate either: production
      stays on, or returns to, the release the decision names in ``to`` (the fallback), and the last
      known-good release does not change.
    - ``rollback()``: production leaves the release it runs now for the last known-good release. If it
      runs the last known-good release itself (it misbehaved after promotion), that release is no longer
      known good and production returns to the known-good release before it (for the first promotion,
      the baseline it was measured against).

    The state is replayed from the history on every read, so several ``Registry`` objects on one file
    agree; writes are atomic (:func:`atomic_write`). There is no lock: one writer at a time.
    """

    def __init__(self, path: str | os.PathLike, clock: Callable[[], datetime] = _utc_now):
        self.path = Path(path)
        self.clock = clock

    def __repr__(self) -> str:
        return f"Registry({str(self.path)!r})"

    # reading

    def _load(self) -> list[dict]:
        """The history, validated; an absent file is an empty registry, anything unreadable raises."""
        text = self._text()
        if text is None:
            return []
        depth = _depth(text)
        if depth > MAX_REGISTRY_DEPTH:
            raise ValueError(
                f"release registry {str(self.path)!r} is nested {depth} levels deep; allowed: at most "
                f"{MAX_REGISTRY_DEPTH} (a registry nests 6), so it is not one this module wrote"
            )
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(
                f"release registry {str(self.path)!r} is not valid JSON ({e}); "
                f"it was left untouched, restore it from a backup",
            ) from None
        if not isinstance(data, dict) or data.get("format") != REGISTRY_FORMAT:
            raise ValueError(
                f"release registry {str(self.path)!r} must be a JSON object with "
                f"format {REGISTRY_FORMAT!r}, got {str(data)[:80]!r}",
            )
        if data.get("version") != REGISTRY_VERSION:
            raise ValueError(
                f"release registry {str(self.path)!r} must have version {REGISTRY_VERSION}, "
                f"got {data.get('version')!r}",
            )
        history = data.get("history")
        if not isinstance(history, list):
            raise ValueError(f"release registry {str(self.path)!r} must hold a history list, got {history!r}")
        try:
            state = _replay(history)
        except (ValueError, TypeError, KeyError) as e:
            raise ValueError(f"release registry {str(self.path)!r} has a broken history: {e}") from e
        stored = {k: data.get(k) for k in state}
        if stored != state:
            raise ValueError(
                f"release registry {str(self.path)!r} says {stored!r} but its history gives "
                f"{state!r}; it was edited by hand or is corrupt",
            )
        return history

    def _text(self) -> str | None:
        """The file's text; None when there is none yet. Refused: a special file (a FIFO's read may never end), a
        file over :data:`MAX_REGISTRY_BYTES`, anything unreadable."""
        where = f"release registry {str(self.path)!r}"
        try:
            status = os.stat(self.path)
            if not stat.S_ISREG(status.st_mode):
                kind = "a folder" if stat.S_ISDIR(status.st_mode) else "a FIFO, a socket or a device"
                raise ValueError(
                    f"{where} cannot be read: it is {kind}, not a regular file; allowed: a JSON file this module "
                    f"wrote (or none yet)"
                )
            if status.st_size > MAX_REGISTRY_BYTES:
                raise ValueError(
                    f"{where} holds {status.st_size:,} bytes; allowed: at most {MAX_REGISTRY_BYTES:,} (some 30,000 "
                    f"decisions), so it is not one this module wrote"
                )
            with open(self.path, "rb") as f:
                return f.read(MAX_REGISTRY_BYTES + 1).decode("utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"{where} cannot be read: {getattr(e, 'strerror', None) or e}") from None

    def current(self) -> str | None:
        return _replay(self._load())["current"]

    def last_known_good(self) -> str | None:
        return _replay(self._load())["last_known_good"]

    def history(self) -> list[dict]:
        """Every recorded event, oldest first: ``{"event": "decision", "recorded_at", "decision"}`` or
        ``{"event": "rollback", "recorded_at", "from", "to"}`` (copies; editing them changes nothing)."""
        return json.loads(json.dumps(self._load()))

    def decisions(self) -> list[Decision]:
        """The recorded decisions, oldest first."""
        return [Decision.from_dict(e["decision"]) for e in self._load() if e["event"] == "decision"]

    # writing

    def _timestamp(self, at: datetime | None) -> str:
        at = self.clock() if at is None else at
        if not isinstance(at, datetime) or at.tzinfo is None:
            raise InputError(
                "at", f"at must be a timezone-aware datetime (e.g. datetime.now(timezone.utc)), got {at!r}"
            )
        return at.isoformat()

    def _prepare(self, history: list[dict]) -> Pending:
        data = {"format": REGISTRY_FORMAT, "version": REGISTRY_VERSION, **_replay(history), "history": history}
        return prepare(
            self.path, lambda f: json.dump(data, f, indent=2, sort_keys=True), "x", encoding="utf-8", newline="\n"
        )

    def _save(self, history: list[dict]) -> None:
        self._prepare(history).commit()

    def prepare_record(self, decision: Decision, at: datetime | None = None) -> tuple[dict, Pending]:
        """The entry :meth:`record` would append, and the new file written to its temporary name but not yet in
        place (:class:`~gpucost_lab.atomic.Pending`: ``commit()`` records it, ``discard()`` leaves the registry as
        it was), for a decision recorded together with another file."""
        if not isinstance(decision, Decision):
            raise InputError("decision", f"decision must be a Decision, got {type(decision).__name__}")
        history = self._load()
        entry = {"event": "decision", "recorded_at": self._timestamp(at), "decision": decision.to_dict()}
        return entry, self._prepare(history + [entry])

    def record(self, decision: Decision, at: datetime | None = None) -> dict:
        """Append ``decision``, stamped ``at`` (default: the clock). Returns the entry written."""
        entry, pending = self.prepare_record(decision, at)
        pending.commit()
        return entry

    def rollback(self, at: datetime | None = None) -> str:
        """Return production to the last known-good release (see the class docstring); the name."""
        history = self._load()
        state = _replay(history)
        target = _rollback_target(state)
        if target is None:
            raise InputError(
                "rollback",
                f"rollback needs a known-good release other than the current "
                f"{state['current']!r}; release registry {str(self.path)!r} has known good "
                f"{state['known_good']!r}",
            )
        entry = {"event": "rollback", "recorded_at": self._timestamp(at), "from": state["current"], "to": target}
        self._save(history + [entry])
        return target


_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"', re.DOTALL)  # possessive: linear on any text
_BRACKETS = re.compile(r"[\[\]{}]")


def _depth(text: str) -> int:
    """The deepest nesting of arrays and objects in the JSON ``text`` (brackets inside strings do not count), found
    without parsing, so that a document nested thousands deep is refused rather than left to a RecursionError."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _rollback_target(state: dict) -> str | None:
    good = state["known_good"]
    if not good:
        return None
    if state["current"] != good[-1]:
        return good[-1]
    return good[-2] if len(good) >= 2 else None


def _replay(history: list) -> dict:
    """The registry's state after ``history``: current, last known good and the known-good stack."""
    current: str | None = None
    good: list[str] = []  # known-good releases, oldest first; the first promotion's baseline at the bottom
    for i, entry in enumerate(history):
        if not isinstance(entry, dict) or entry.get("event") not in ("decision", "rollback"):
            raise InputError("entry", f"entry {i} must be a decision or a rollback, got {str(entry)[:80]!r}")
        if not isinstance(entry.get("recorded_at"), str):
            raise InputError("entry", f"entry {i} must have a recorded_at time, got {entry.get('recorded_at')!r}")
        if entry["event"] == "decision":
            decision = Decision.from_dict(entry["decision"])
            if decision.promoted:
                if not good:
                    good.append(decision.baseline)
                good.append(decision.candidate)
            current = decision.to
        else:
            expected = _rollback_target({"current": current, "known_good": good})
            if entry.get("from") != current or entry.get("to") != expected or expected is None:
                raise InputError(
                    "entry",
                    f"entry {i} rolls back {entry.get('from')!r} -> {entry.get('to')!r}, "
                    f"but production was {current!r} with known good {good!r}",
                )
            if current == good[-1]:
                good.pop()
            current = expected
    return {"current": current, "last_known_good": good[-1] if good else None, "known_good": list(good)}


__all__ = ["MAX_REGISTRY_BYTES", "MAX_REGISTRY_DEPTH", "REGISTRY_FORMAT", "REGISTRY_VERSION", "Registry"]
