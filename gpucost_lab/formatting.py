"""One format per quantity, everywhere (chapter 06): the release gate's reasons and the release report.

- bytes in decimal units (GB = 10^9 bytes), one decimal; memory with the exact bytes beside it;
- hours with two decimals, ratios with three;
- a quantity with an interval: 4 significant digits for its value, its bounds to the same decimals, and values shown
  side by side to the same decimals; values below 0.001 or from 10^9 up in scientific notation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

from gpucost_lab.stats import Estimate, Interval

_Value = TypeVar("_Value", int, float)


def format_bytes(n_bytes: int) -> str:
    """Decimal units (GB = 10^9 bytes), one decimal: ``25_100_000_000`` -> ``"25.1 GB"``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n_bytes) >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{int(n_bytes)} B"


def format_hours(hours: float) -> str:
    """Two decimals: ``7.5`` -> ``"7.50 h"``."""
    return f"{hours:.2f} h"


def format_ratio(ratio: float) -> str:
    """Three decimals: ``0.8`` -> ``"0.800x"``."""
    return f"{ratio:.3f}x"


def format_pair(
    a: _Value, b: _Value, short: Callable[[_Value], str], exact: Callable[[_Value], str]
) -> tuple[str, str]:
    """Two values to compare, in their ``short`` format; in their ``exact`` one when the short forms would hide a
    difference (a peak one byte over its budget would otherwise read ``25.1 GB > 25.1 GB``)."""
    sa, sb = short(a), short(b)
    if a != b and sa == sb:
        return exact(a), exact(b)
    return sa, sb


def _fixed(x: float) -> bool:
    return x == 0 or 1e-3 <= abs(x) < 1e9


def _decimals(x: float) -> int:
    """Decimals that give 4 significant digits in fixed notation."""
    return 3 if x == 0 else max(0, 3 - math.floor(math.log10(abs(x))))


def format_number(x: float) -> str:
    """4 significant digits: ``12345.6`` -> ``"12,346"``, ``0.01234`` -> ``"0.01234"``,
    ``1.1e-7`` -> ``"1.100e-07"``."""
    return f"{x:,.{_decimals(x)}f}" if _fixed(x) else f"{x:.3e}"


def format_estimates(estimates: Sequence[Estimate | Interval], unit: str = "") -> list[str]:
    """Values (geometric means) and 95% intervals in one shared format, so a row's values line up: 4
    significant digits for the smallest value, and every value and bound to the same decimals (or all in
    scientific notation)."""
    means = [e.value for e in estimates]
    if not means:  # nothing to line up
        return []
    if all(_fixed(m) for m in means):
        d = max(_decimals(m) for m in means)
        number = lambda v: f"{v:,.{d}f}"  # noqa: E731
    else:
        number = lambda v: f"{v:.3e}"  # noqa: E731
    unit = f" {unit}" if unit else ""
    return [f"{number(e.value)}{unit} (95% CI {number(e.ci95_low)} to {number(e.ci95_high)})" for e in estimates]


def format_estimate(estimate: Estimate | Interval, unit: str = "") -> str:
    """Value and 95% interval: the bounds take the value's decimals."""
    return format_estimates([estimate], unit)[0]


def format_memory(n_bytes: int) -> str:
    """``"25.1 GB (25,100,000,000 bytes)"``."""
    return f"{format_bytes(n_bytes)} ({n_bytes:,} bytes)"


def format_steps(steps: float) -> str:
    """Whole steps with thousands separators (``"1,250"``), else 4 significant digits."""
    return f"{steps:,.0f}" if float(steps).is_integer() else format_number(steps)


__all__ = [
    "format_bytes",
    "format_estimate",
    "format_estimates",
    "format_hours",
    "format_memory",
    "format_number",
    "format_pair",
    "format_ratio",
    "format_steps",
]
