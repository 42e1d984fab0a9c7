"""Auto-graded checkpoints in the chapters: one call per question, a clear verdict, no answer shown.

A checkpoint raises ``Miss`` (an ``AssertionError``, so nbgrader counts the test cell as failed, which IPython
shows as one line: a cross and the sentence, no traceback) when the answer is missing or wrong, and prints a tick
when it is right. ``checkpoint(question_id, answer)`` is the one call a check cell makes: the truth comes from
``course.questions`` by the question's id. A count or a seeded figure is compared to the digits the chapter displays
it with; a measured figure passes anywhere inside the 95% interval the chapter prints for it, or inside one this
machine printed before that holds none of the question's plausible mistakes, so a second Run All keeps the first
run's answer right and a busy run's wide interval admits no wrong one; a wrong one is told where to read it from.
Choice answers are compared with a salted hash from ``data/answer_keys.json``, so the key is not readable in the cell.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from numbers import Real
from typing import Any

from gpucost_lab._validate import InputError
from gpucost_lab.course import measured_answers, questions
from gpucost_lab.course.questions import Namespace, Question


class Miss(AssertionError):
    """A missed checkpoint: still an ``AssertionError`` for nbgrader, shown by IPython as one line, not a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"✗ {self}"]


def expect(condition: object, message: str) -> None:
    """Raise ``Miss(message)`` unless ``condition`` holds: a lab check's ``assert`` that IPython shows in one line."""
    if not condition:
        raise Miss(message)


def passed(label: str) -> None:
    """Print the tick a check cell ends with when every check in it held."""
    print(f"✓ {label}")


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
        raise Miss(f"{question}: not answered yet; replace the placeholder in the answer cell")


def _finite(name: str, value: object) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        x = math.nan
    if not math.isfinite(x):
        raise InputError(name, f"{name} must be a finite number, got {value!r}")
    return x


def _display_tolerance(expected: float, significant: int | None, decimals: int | None) -> float:
    """How far an answer written to the digits asked may lie from ``expected``; 0.0 without digits (a count)."""
    for name, value, minimum in (("significant", significant, 1), ("decimals", decimals, 0)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
            raise InputError(name, f"{name} must be None or an integer >= {minimum}, got {value!r}")
    if significant is not None and decimals is not None:
        raise ValueError(
            f"give significant or decimals, not both; got significant={significant!r}, decimals={decimals!r}"
        )
    unit = _unit(expected, significant, decimals)
    if unit == 0.0:
        return 0.0
    # Half a unit of the digit asked. A figure displayed with more digits than asked, then rounded by the learner, is
    # rounded twice (0.44246 shown 0.4425, asked to 3 places: 0.443, 0.00054 away): an exact figure's display is
    # probed for that by the chapter tests, and a measured one passes anywhere inside its interval instead.
    return 0.5 * unit + 1e-9 * max(abs(expected), unit)


def _unit(value: float, significant: int | None, decimals: int | None) -> float:
    """One unit of the last digit of ``value`` written to ``significant`` digits or ``decimals`` places; 0.0 else."""
    if significant is not None:  # the exponent of the displayed value: 9.996 shown to 3 digits is 10.0
        return 10.0 ** (int(f"{value:.{significant - 1}e}".split("e")[1]) - (significant - 1))
    return 0.0 if decimals is None else 10.0**-decimals


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
        raise Miss(f"{question}: expected a finite number, got {answer!r}")
    a = float(answer)
    if not (math.isclose(a, e, rel_tol=rel_tol, abs_tol=abs_tol) or abs(a - e) <= tolerance):
        raise Miss(f"{question}: {answer!r} is not it{_digits(significant, decimals)}; recompute it from {source}")
    print(f"✓ {question}")


def check_equal(question: str, answer: object, expected: object, *, where: str | None = None) -> None:
    """Pass when ``answer`` equals ``expected``, a value the notebook computed (case and spacing ignored for text)."""
    source = _where(where)
    _require_answer(question, answer)
    same = (_normalise(answer) == _normalise(expected)) if isinstance(expected, str) else answer == expected
    if not same:
        raise Miss(f"{question}: {answer!r} is not it; look again at {source}")
    print(f"✓ {question}")


def check_choice(question_id: str, answer: object) -> None:
    """Pass when ``answer`` (case and spacing ignored) is the keyed answer to ``question_id``."""
    _require_answer(question_id, answer)
    if question_id not in _keys():
        raise KeyError(f"question_id must be one of {sorted(_keys())}, got {question_id!r}")
    if answer_digest(question_id, answer) != _keys()[question_id]:
        raise Miss(f"{question_id}: {answer!r} is not it; reread the section above and try again")
    print(f"✓ {question_id}")


def _outward(low: float, high: float, significant: int | None, decimals: int | None) -> tuple[float, float]:
    """The interval with its ends rounded outward to the digits asked (so the ends as displayed lie inside it)."""
    lo_unit, hi_unit = _unit(low, significant, decimals), _unit(high, significant, decimals)
    slack = 1e-9 * max(abs(low), abs(high), lo_unit, hi_unit)
    return math.floor(low / lo_unit) * lo_unit - slack, math.ceil(high / hi_unit) * hi_unit + slack


def check_in_interval(
    question: str,
    answer: object,
    estimate: tuple[float, float, float],
    *,
    significant: int | None = None,
    decimals: int | None = None,
    where: str | None = None,
    earlier: Sequence[tuple[float, float]] = (),
    refused: str = "",
) -> None:
    """Pass when ``answer`` lies inside the 95% interval ``estimate = (value, low, high)`` of a measured figure, or
    inside one of the ``earlier`` intervals ``(low, high)`` this machine printed for it (``measured_answers``).

    The intervals' ends are rounded outward to the digits asked (``significant=N`` or ``decimals=N``), so an end as
    the chapter prints it passes too, and so does the figure a previous run displayed: it lay inside that run's
    interval. ``refused`` says, in a miss, which earlier intervals were not used and why.
    """
    value, low, high = (_finite(name, x) for name, x in zip(("value", "ci95_low", "ci95_high"), estimate))
    if not low <= value <= high:
        raise InputError("estimate", f"estimate must be (value, low, high) with low <= value <= high, got {estimate!r}")
    if significant is None and decimals is None:
        raise InputError("digits", "give significant=N or decimals=N: the digits the question asks for")
    _display_tolerance(value, significant, decimals)  # validates the digits
    source = _where(where)
    _require_answer(question, answer)
    if isinstance(answer, bool) or not isinstance(answer, Real) or not math.isfinite(float(answer)):
        raise Miss(f"{question}: expected a finite number, got {answer!r}")
    bounds = [_outward(lo, hi, significant, decimals) for lo, hi in ((low, high), *earlier)]
    if not any(lo <= float(answer) <= hi for lo, hi in bounds):
        before = f" (and the {len(earlier)} this machine printed before)" if earlier else ""
        raise Miss(
            f"{question}: {answer!r} lies outside this run's 95% interval{before}; read it from {source}{refused}"
        )
    print(f"✓ {question}")


def _mistakes(question: questions.Measured, namespace: Namespace) -> dict[str, float] | None:
    """The question's plausible mistakes as this run computes them, or None when one cannot be computed."""
    values = {}
    for label, mistake in question.mistakes.items():
        try:
            values[label] = float(mistake(namespace))
        except Exception:  # a name the chapter has not defined, a learner's rebinding: no earlier interval is safe
            return None
    return values


def usable_earlier(
    earlier: Sequence[measured_answers.Earlier],
    mistakes: dict[str, float] | None,
    significant: int | None,
    decimals: int | None,
) -> tuple[list[tuple[float, float]], list[str]]:
    """The earlier intervals that exclude every plausible mistake (this run's, and those of the run that printed
    each), rounded outward as the answer is; and for each refused one the mistake it holds."""
    usable, refused = [], []
    for interval in earlier:
        lo, hi = _outward(interval.low, interval.high, significant, decimals)
        if mistakes is None:
            refused.append("its mistakes could not be computed in this run")
            continue
        candidates = [*mistakes.items(), *(("one its own run computed", m) for m in interval.mistakes)]
        held = next((label for label, value in candidates if lo <= value <= hi), None)
        if held is None:
            usable.append((interval.low, interval.high))
        else:
            refused.append(held)
    return usable, refused


def _refused_text(refused: Sequence[str]) -> str:
    if not refused:
        return ""
    n = len(refused)
    return (
        f" ({n} earlier interval{'s' * (n != 1)} not used: {'they hold' if n != 1 else 'it holds'} a plausible "
        f"mistake, {refused[-1]!r})"
    )


def checkpoint(question_id: str, answer: object) -> None:
    """Check ``answer`` to the chapter question ``question_id`` ("02.1"): the one call a check cell makes.

    A choice question is compared with its salted key; any other question's truth is computed by
    ``gpucost_lab.course.questions`` from the objects the chapter defined, read from the namespace of the cell that
    calls this (a notebook's globals), so the check cell shows no formula.
    """
    if question_id in _keys():
        return check_choice(question_id, answer)
    if question_id not in questions.QUESTIONS:
        raise KeyError(f"question_id must be one of {sorted({*_keys(), *questions.QUESTIONS})}, got {question_id!r}")
    question, namespace = questions.QUESTIONS[question_id], sys._getframe(1).f_globals
    if isinstance(question, questions.Measured):
        return _check_measured(question, answer, namespace)
    _require_answer(question.label, answer)
    truth = _truth(question, namespace)
    if isinstance(question, questions.Named):
        return check_equal(question.label, answer, truth, where=question.where)
    return check_number(
        question.label,
        answer,
        truth,
        significant=question.significant,
        decimals=question.decimals,
        where=question.where,
    )


def _check_measured(question: questions.Measured, answer: object, namespace: Namespace) -> None:
    """This run's interval is kept first, answered or not, with this run's plausible mistakes; then the answer is
    checked against it and against the earlier intervals that exclude every plausible mistake."""
    truth = _truth(question, namespace)
    key = question.label  # a question whose meaning changes gets a new label, so its old intervals are not read
    mistakes = _mistakes(question, namespace)
    s, d = question.significant, question.decimals
    earlier, refused = usable_earlier(measured_answers.earlier_intervals(key), mistakes, s, d)
    measured_answers.remember(key, truth[1], truth[2], (mistakes or {}).values())
    check_in_interval(
        question.label,
        answer,
        truth,
        significant=s,
        decimals=d,
        where=question.where,
        earlier=earlier,
        refused=_refused_text(refused),
    )


def _truth(question: Question, namespace: Namespace) -> Any:
    """The question's truth from the chapter's objects, or a Miss naming what to run first."""
    try:
        return question.truth(namespace)
    except (KeyError, NameError) as missing:
        raise Miss(f"{question.label}: run the chapter's cells above first ({missing} is not defined yet)") from None
