"""Auto-graded checkpoints in the chapters: one call per question, a clear verdict, no answer shown.

A checkpoint raises ``AssertionError`` when the answer is missing or wrong (so nbgrader counts the
test cell as failed) and prints a tick when it is right. Numeric answers are compared against a value
the notebook computes from the same data, to the digits the chapter displays it with (or an explicit
tolerance, or exactly for counts), and a wrong one is told where to recompute it from; choice answers
are compared with a salted hash from ``data/answer_keys.json``, so the key is not readable in the cell.
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import lru_cache
from importlib import resources
from numbers import Real

from gpucost_lab._validate import InputError


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


def _finite(name: str, value: object) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x):
        raise InputError(name, f"{name} must be a finite number, got {value!r}")
    return x


def _display_tolerance(expected: float, significant: int | None, decimals: int | None) -> float:
    """Half a unit of the last digit of ``expected`` as displayed, plus a float slack; 0.0 without a display."""
    for name, value, minimum in (("significant", significant, 1), ("decimals", decimals, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
            raise InputError(name, f"{name} must be None or an integer >= {minimum}, got {value!r}")
    if significant is not None and decimals is not None:
        raise ValueError(
            f"give significant or decimals, not both; got significant={significant!r}, decimals={decimals!r}"
        )
    if significant is not None:  # the exponent of the displayed value: 9.996 shown to 3 digits is 10.0
        unit = 10.0 ** (int(f"{expected:.{significant - 1}e}".split("e")[1]) - (significant - 1))
    elif decimals is not None:
        unit = 10.0**-decimals
    else:
        return 0.0
    return 0.5 * unit + 1e-9 * max(abs(expected), unit)


def _digits(significant: int | None, decimals: int | None) -> str:
    if significant is not None:
        return f" to {significant} significant digit{'s' * (significant != 1)}"
    if decimals == 0:
        return " to the nearest whole number"
    return "" if decimals is None else f" to {decimals} decimal place{'s' * (decimals != 1)}"


def _where(where: str | None) -> str:
    if where is not None and (not isinstance(where, str) or not where.strip()):
        raise InputError(
            "where", f"where must be None or a non-empty text naming a cell, table or variable, got {where!r}"
        )
    return where or "the chapter's figures"


def check_number(
    question: str,
    answer: object,
    expected: float,
    *,
    significant: int | None = None,
    decimals: int | None = None,
    rel_tol: float = 0.0,
    abs_tol: float = 0.0,
    where: str | None = None,
) -> None:
    """Pass when ``answer`` is a number that rounds like ``expected`` as the chapter displays it, or is close to it.

    ``significant=N`` (or ``decimals=N``) says the chapter displays ``expected`` with N significant digits (N
    decimal places): an answer within half a unit of the last displayed digit passes, so the displayed rounding
    and anything more precise do. ``rel_tol``/``abs_tol`` are explicit tolerances as in ``math.isclose``; with none
    of these the answer must equal ``expected`` (integers). ``where`` names what to recompute it from.
    """
    e = _finite("expected", expected)
    tolerance = _display_tolerance(e, significant, decimals)
    for name, value in (("rel_tol", rel_tol), ("abs_tol", abs_tol)):
        if _finite(name, value) < 0:
            raise InputError(name, f"{name} must be a finite number >= 0, got {value!r}")
    source = _where(where)
    _require_answer(question, answer)
    if isinstance(answer, bool) or not isinstance(answer, Real) or not math.isfinite(float(answer)):
        raise AssertionError(f"{question}: expected a finite number, got {answer!r}")
    a = float(answer)
    if not (math.isclose(a, e, rel_tol=rel_tol, abs_tol=abs_tol) or abs(a - e) <= tolerance):
        raise AssertionError(
            f"{question}: {answer!r} is not it{_digits(significant, decimals)}; recompute it from {source}"
        )
    print(f"✓ {question}")


def check_equal(question: str, answer: object, expected: object, *, where: str | None = None) -> None:
    """Pass when ``answer`` equals ``expected``, a value the notebook computed (case and spacing ignored for text)."""
    source = _where(where)
    _require_answer(question, answer)
    same = (_normalise(answer) == _normalise(expected)) if isinstance(expected, str) else answer == expected
    if not same:
        raise AssertionError(f"{question}: {answer!r} is not it; look again at {source}")
    print(f"✓ {question}")


def check_choice(question_id: str, answer: object) -> None:
    """Pass when ``answer`` (case and spacing ignored) is the keyed answer to ``question_id``."""
    _require_answer(question_id, answer)
    if question_id not in _keys():
        raise KeyError(f"question_id must be one of {sorted(_keys())}, got {question_id!r}")
    if answer_digest(question_id, answer) != _keys()[question_id]:
        raise AssertionError(f"{question_id}: {answer!r} is not it; reread the section above and try again")
    print(f"✓ {question_id}")
