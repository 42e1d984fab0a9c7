"""Auto-graded checkpoints in the chapters: one call per question, a clear verdict, no answer shown.

A checkpoint raises ``AssertionError`` when the answer is missing or wrong (so nbgrader counts the
test cell as failed) and prints a tick when it is right. Numeric answers are compared with an
explicit tolerance against a value the notebook computes from the same data; choice answers are
compared with a salted hash from ``data/answer_keys.json``, so the key is not readable in the cell.
"""
from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from importlib import resources
from numbers import Real


def _normalise(answer: object) -> str:
    return " ".join(str(answer).strip().lower().split())


def answer_digest(question_id: str, answer: object) -> str:
    """The salted SHA-256 under which ``answer`` to ``question_id`` is stored in the answer keys."""
    return hashlib.sha256(f"gpucost-lab:{question_id}:{_normalise(answer)}".encode()).hexdigest()


@lru_cache(maxsize=1)
def _keys() -> dict[str, str]:
    return json.loads((resources.files("gpucost_lab") / "data" / "answer_keys.json").read_text())


def _require_answer(question: str, answer: object) -> None:
    if answer is None or answer is Ellipsis or (isinstance(answer, str) and not answer.strip()):
        raise AssertionError(f"{question}: not answered yet; replace the placeholder in the answer cell")


def check_number(question: str, answer: object, expected: float, *, rel_tol: float = 0.0,
                 abs_tol: float = 0.0) -> None:
    """Pass when ``answer`` is a number within ``rel_tol`` (relative) or ``abs_tol`` of ``expected``."""
    _require_answer(question, answer)
    if isinstance(answer, bool) or not isinstance(answer, Real) or not math.isfinite(float(answer)):
        raise AssertionError(f"{question}: expected a finite number, got {answer!r}")
    if not math.isclose(float(answer), float(expected), rel_tol=rel_tol, abs_tol=abs_tol):
        raise AssertionError(f"{question}: {answer!r} is not it; recompute it from the table above")
    print(f"✓ {question}")


def check_equal(question: str, answer: object, expected: object) -> None:
    """Pass when ``answer`` equals ``expected``, a value the notebook computed (case and spacing ignored for text)."""
    _require_answer(question, answer)
    same = (_normalise(answer) == _normalise(expected)) if isinstance(expected, str) else answer == expected
    if not same:
        raise AssertionError(f"{question}: {answer!r} is not it; look again at the table above")
    print(f"✓ {question}")


def check_choice(question_id: str, answer: object) -> None:
    """Pass when ``answer`` (case and spacing ignored) is the keyed answer to ``question_id``."""
    _require_answer(question_id, answer)
    if question_id not in _keys():
        raise KeyError(f"question_id must be one of {sorted(_keys())}, got {question_id!r}")
    if answer_digest(question_id, answer) != _keys()[question_id]:
        raise AssertionError(f"{question_id}: {answer!r} is not it; reread the section above and try again")
    print(f"✓ {question_id}")
