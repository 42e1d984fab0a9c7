"""The pass mark: 80% of the maximum score, compared in exact fractions at nbgrader's precision."""

from __future__ import annotations

import math
from fractions import Fraction

#: The pass mark, in percent of the maximum score. The one place it is defined.
PASS_MARK_PERCENT = 80
#: nbgrader shows scores to 2 decimals (its feedback template rounds to 2); scores are compared at that precision.
SCORE_DECIMALS = 2


def exact_points(value: float | int | str) -> Fraction:
    """A score as an exact fraction, rounded to nbgrader's precision first."""
    return Fraction(str(round(float(value), SCORE_DECIMALS)))


def meets_pass_mark(score: float, max_score: float) -> bool:
    """True when ``score`` is at least ``PASS_MARK_PERCENT`` % of ``max_score`` (inclusive), in exact arithmetic."""
    maximum = exact_points(max_score)
    return maximum > 0 and exact_points(score) * 100 >= maximum * PASS_MARK_PERCENT


def points_to_pass(max_score: float) -> float:
    """The smallest score (at nbgrader's precision) that passes out of ``max_score``."""
    step = Fraction(1, 10**SCORE_DECIMALS)
    needed = exact_points(max_score) * PASS_MARK_PERCENT / 100
    return float(math.ceil(needed / step) * step)


def points_text(points: float) -> str:
    """``12.8 points (13 in whole points)``: nbgrader's precision, and what it means when points are whole."""
    if float(points).is_integer():
        return f"{points:g} points"
    return f"{points:g} points ({math.ceil(points)} in whole points)"


def percent_of(score: float, max_score: float) -> float:
    """``score`` in percent of ``max_score`` (2 decimals; 0 for a maximum of 0), from the exact scores."""
    maximum = exact_points(max_score)
    return round(float(exact_points(score) * 100 / maximum), 2) if maximum > 0 else 0.0
