"""One format per quantity, everywhere: the release gate's reasons and report (chapter 06), and every chapter's
tables and figures.

- bytes in decimal units (GB = 10^9 bytes), one decimal: memory with the exact bytes beside it;
- hours with two decimals, ratios with three;
- a quantity with an interval: 4 significant digits for its value, its bounds to the same decimals, and values shown
  side by side to the same decimals; a value without a unit below 0.001 or from 10^9 up in scientific notation,
  one with a unit (a price, a rate) always in fixed notation.

The chapters' tables: :func:`table` shows a DataFrame with every number in the unit its column's name carries
(``*_us``, ``*_ms``, ``*_s``, ``seconds``, ``*_hours``: a time; ``*_bytes``, ``*_gb``, ``*_mb``: a size;
``*usd*`` or a ``$`` heading: money; ``*_per_s``: a rate; a column without a unit takes its row's), in a unit
chosen by magnitude: one for the whole column when its values span at most 100x (so they compare), else each value's:

- times as ``ns``, ``µs``, ``ms``, ``s``, ``min`` or ``h`` (:func:`format_seconds`), sizes as ``B``, ``kB``,
  ``MB``, ``GB`` or ``TB`` (:func:`format_size`), 4 significant digits; never scientific notation;
- money in dollars (:func:`format_usd`): to the cent from a dollar up, else 4 significant digits;
- rates and other numbers to 4 significant digits with thousands separators (scientific notation only for a
  number without a unit below 10^-6: a relative difference), whole numbers exact, missing values as ``n/a``;
- a value below 10^-9 of its column's largest is shown as 0 (floating-point residue: an idle time of 6e-12 ms).

Its text (``repr``) is the table's text twin, never wrapped or truncated, under the DataFrame's own column names
(the names a hint points to), text aligned left and numbers right; its HTML the same cells. The DataFrame is left as
it was: compute from it, read this. :func:`tidy_tables` makes every DataFrame a notebook displays go
through :func:`table`. :func:`figure` shows a matplotlib figure as an image with its alt text (what it shows, in
one sentence; the plotting functions write theirs with :func:`describe`), the text twin of the picture.
"""

from __future__ import annotations

import base64
import html
import io
import math
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import TypeVar

import numpy as np
import pandas as pd

from gpucost_lab._validate import InputError, non_empty_text
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
    significant digits for the smallest value, and every value and bound to the same decimals (without a ``unit``,
    all in scientific notation when a value is below 0.001 or from 10^9 up)."""
    means = [e.value for e in estimates]
    if not means:  # nothing to line up
        return []
    if unit or all(_fixed(m) for m in means):  # a price or a rate a reader compares: never scientific
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


# ------------------------------------------------------------------------------------------- the chapters' tables
_SIGNIFICANT = 4
_RESIDUE = 1e-9  # below this fraction of its column's largest value, a value is floating-point residue: shown as 0
_TIME_UNITS = (("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_SIZE_UNITS = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0))
_SHARED_SPAN = 100.0  # a column's times or sizes share one unit when its largest is at most this times its smallest
_TIME_SUFFIXES = {"_ns": 1e-9, "_us": 1e-6, "_ms": 1e-3, "_s": 1.0, "_min": 60.0, "_hours": 3600.0, "_h": 3600.0}
_SIZE_SUFFIXES = {"_bytes": 1.0, "_kb": 1e3, "_mb": 1e6, "_gb": 1e9, "_tb": 1e12}
_SIZE_NAMES = {"bytes": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}
KINDS = ("time", "size", "money", "rate", "percent", "count", "number")  # how a column's numbers can be shown


def _sig(x: float) -> tuple[float, int]:
    """``x`` rounded to 4 significant digits, and the decimals that show them in fixed notation."""
    rounded = float(f"{x:.{_SIGNIFICANT - 1}e}")
    if rounded == 0:
        return 0.0, 0
    return rounded, max(0, _SIGNIFICANT - 1 - math.floor(math.log10(abs(rounded))))


def _missing(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _fixed4(x: float) -> str:
    """4 significant digits in fixed notation with thousands separators: ``10850.4`` -> ``"10,850"``."""
    rounded, decimals = _sig(x)
    return "0" if rounded == 0 else f"{rounded:,.{decimals}f}"


def _unit_for(x: float, units: tuple[tuple[str, float], ...]) -> tuple[str, float]:
    """The largest of ``units`` that ``x`` (in the base unit) reaches once rounded to 4 significant digits."""
    rounded = abs(_sig(x)[0])
    return next(((unit, scale) for unit, scale in units if rounded >= scale), units[-1])


def _in_unit(x: float, units: tuple[tuple[str, float], ...], unit: str | None) -> str:
    """``x`` (in the base unit) in ``unit``, or in the one its magnitude calls for, 4 significant digits."""
    scales = dict(units)
    if unit is not None and unit not in scales:
        raise InputError("unit", f"unit must be one of {', '.join(scales)}, got {unit!r}")
    name, scale = (unit, scales[unit]) if unit is not None else _unit_for(x, units)
    return f"{_fixed4(x / scale)} {name}"


def format_seconds(seconds: float | None, unit: str | None = None) -> str:
    """A time in ``unit`` or in the one its magnitude calls for, 4 significant digits: ``0.0164`` -> ``"16.40 ms"``,
    ``10580`` -> ``"2.939 h"``, ``0`` -> ``"0 s"``; ``None`` or NaN -> ``"n/a"``."""
    if _missing(seconds) or not math.isfinite(float(seconds)):  # type: ignore[arg-type]
        return "n/a"
    x = float(seconds)  # type: ignore[arg-type]
    return "0 s" if x == 0 and unit is None else _in_unit(x, _TIME_UNITS, unit)


def format_size(n_bytes: float | None, unit: str | None = None) -> str:
    """Bytes in decimal units, ``unit`` or the one their magnitude calls for, 4 significant digits: ``244403360``
    -> ``"244.4 MB"``, whole bytes exact (``256`` -> ``"256 B"``); ``None`` or NaN -> ``"n/a"``."""
    if _missing(n_bytes) or not math.isfinite(float(n_bytes)):  # type: ignore[arg-type]
        return "n/a"
    x = float(n_bytes)  # type: ignore[arg-type]
    if (unit or _unit_for(x, _SIZE_UNITS)[0]) == "B" and x.is_integer():
        return f"{int(x):,} B"
    return _in_unit(x, _SIZE_UNITS, unit)


def format_usd(usd: float | None) -> str:
    """Dollars: to the cent from a dollar up (``14`` -> ``"$14.00"``), else 4 significant digits (``4.133e-9`` ->
    ``"$0.000000004133"``); ``None`` or NaN -> ``"n/a"``."""
    if _missing(usd) or not math.isfinite(float(usd)):  # type: ignore[arg-type]
        return "n/a"
    x = float(usd)  # type: ignore[arg-type]
    sign, rounded = ("-" if x < 0 else ""), _sig(abs(x))[0]
    if rounded == 0:
        return "$0"
    return f"{sign}${abs(x):,.2f}" if rounded >= 1 else f"{sign}${_fixed4(rounded)}"


def _number(x: float) -> str:
    """A number without a unit: 4 significant digits, scientific only below 10^-6 (a relative difference)."""
    if x != 0 and abs(x) < 1e-6:
        return f"{x:.{_SIGNIFICANT - 1}e}"
    return _fixed4(x)


def column_kind(name: object) -> tuple[str, float]:
    """What a column holds, read from the unit in its name, and the factor to the base unit (seconds, bytes,
    dollars): ``"duration_us"`` -> ``("time", 1e-6)``; a name without a unit is ``("number", 1.0)``."""
    if not isinstance(name, str):
        return "number", 1.0
    n = name.strip().lower()
    words = [w for w in re.split(r"[_\s/]+", n) if w]
    if n.startswith("$") or "usd" in words:
        return "money", 1.0
    if "_per_s" in n or n.endswith("/s"):
        return "rate", 1.0
    if n == "seconds":
        return "time", 1.0
    for suffix, scale in _TIME_SUFFIXES.items():
        if n.endswith(suffix):
            return "time", scale
    if "bytes" in words or n in _SIZE_NAMES:
        return "size", _SIZE_NAMES.get(n, 1.0)
    for suffix, scale in _SIZE_SUFFIXES.items():
        if n.endswith(suffix):
            return "size", scale
    return "number", 1.0


def format_cell(value: object, kind: str = "number", scale: float = 1.0, unit: str | None = None) -> str:
    """One table cell as :func:`table` shows it: a number as its ``kind`` says (``scale`` takes it to seconds, bytes
    or dollars; ``unit``, if given, is the time's or size's unit), a whole number of a count or number exact with
    thousands separators, text and flags as they are, a missing value as ``n/a``."""
    if _missing(value):
        return "n/a"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.number)):
        return str(value)
    x = float(value)
    if not math.isfinite(x):
        return "n/a" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if kind == "time":
        return format_seconds(x * scale, unit)
    if kind == "size":
        return format_size(x * scale, unit)
    if kind == "money":
        return format_usd(x * scale)
    if kind == "percent":
        return f"{x:.1%}"
    if isinstance(value, (Integral, np.integer)) or kind == "count":
        return f"{int(round(x)):,}"
    return _number(x)


@dataclass(frozen=True)
class Table:
    """A DataFrame as a chapter shows it: ``data`` as given, ``cells`` every value as text. Its ``repr`` is the
    text twin (never wrapped or truncated); ``_repr_html_`` the same cells as an HTML table."""

    data: pd.DataFrame
    cells: pd.DataFrame
    caption: str = ""
    left: tuple[int, ...] = ()  # positions of the text columns, aligned left in the text twin (numbers right)

    def text(self) -> str:
        body = _render(self.cells, self.left)
        return f"{self.caption}\n{body}" if self.caption else body

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        return _render_html(self.cells, self.left, self.caption)


def _column_cells(values: pd.Series, kind: str, scale: float, rows: list[tuple[str, float]]) -> list[str]:
    """A column's cells: each in the column's kind, or, where the column's name carries no unit, in its row's. Its
    times or sizes share the unit of the largest when they span at most :data:`_SHARED_SPAN` (so they compare)."""
    numbers = [abs(float(v)) for v in values if isinstance(v, (Real, np.number)) and not isinstance(v, bool)]
    numbers = [v for v in numbers if math.isfinite(v)]
    floor = _RESIDUE * max(numbers, default=0.0)
    nonzero = [v * scale for v in numbers if v > floor]
    unit = None
    if kind in ("time", "size") and nonzero and max(nonzero) <= _SHARED_SPAN * min(nonzero):
        unit = _unit_for(max(nonzero), _TIME_UNITS if kind == "time" else _SIZE_UNITS)[0]
    out = []
    for v, (row_kind, row_scale) in zip(values, rows):
        if isinstance(v, (float, np.floating)) and abs(float(v)) <= floor:
            v = 0.0
        if kind != "number":
            out.append(format_cell(v, kind, scale, unit))
        else:
            out.append(format_cell(v, row_kind, row_scale))
    return out


def table(
    frame: pd.DataFrame | pd.Series,
    *,
    kinds: dict[object, str] | None = None,
    percent: Sequence[object] = (),
    caption: str = "",
) -> Table:
    """``frame`` as a chapter shows it (module doc): each column's numbers in the unit its name carries, chosen
    by magnitude; ``kinds`` overrides a column's kind (one of :data:`KINDS`: ``{"bytes": "count"}`` shows exact
    bytes), ``percent`` lists the columns shown as percentages, ``caption`` is a line above the table."""
    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    if not isinstance(frame, pd.DataFrame):
        raise InputError("frame", f"frame must be a pandas DataFrame or Series, got {type(frame).__name__}")
    kinds = dict(kinds or {})
    for column, kind in kinds.items():
        if kind not in KINDS:
            raise InputError("kinds", f"kinds[{column!r}] must be one of {', '.join(KINDS)}, got {kind!r}")
    kinds.update(dict.fromkeys(percent, "percent"))
    rows = [column_kind(label[-1] if isinstance(label, tuple) else label) for label in frame.index]
    cells = {}
    for position, column in enumerate(frame.columns):
        kind, scale = column_kind(column[-1] if isinstance(column, tuple) else column)
        if column in kinds:
            kind, scale = kinds[column], scale if kinds[column] == kind else 1.0
        cells[position] = _column_cells(frame.iloc[:, position], kind, scale, rows)
    shown = pd.DataFrame(cells, index=frame.index)
    shown.columns = frame.columns
    return Table(frame, shown, caption, _text_columns(frame))


def _label(value: object) -> str:
    return " / ".join(map(str, value)) if isinstance(value, tuple) else "" if _missing(value) else str(value)


def _grid(cells: pd.DataFrame, left: tuple[int, ...]) -> tuple[list[str], list[list[str]], set[int], int]:
    """The heading, the rows (index levels first), the columns aligned left, and how many index levels."""
    index = [list(row) if isinstance(row, tuple) else [row] for row in cells.index]
    levels = max((len(row) for row in index), default=cells.index.nlevels)
    names = [_label(n) for n in cells.index.names][:levels] + [""] * max(0, levels - cells.index.nlevels)
    head = names + [_label(c) for c in cells.columns]
    rows = [[_label(v) for v in row] + list(map(str, values)) for row, values in zip(index, cells.to_numpy())]
    return head, rows, set(range(levels)) | {levels + i for i in left}, levels


def _render(cells: pd.DataFrame, left: tuple[int, ...]) -> str:
    """The text twin: a heading line, then a line per row; the index (each level a column) and the text columns
    aligned left, the numbers right, two spaces between columns; nothing wrapped or cut."""
    head, rows, lefts, _ = _grid(cells, left)
    widths = [max([len(head[j]), *(len(r[j]) for r in rows)]) for j in range(len(head))]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) if j in lefts else v.rjust(w) for j, (v, w) in enumerate(zip(values, widths)))

    return "\n".join(line(values).rstrip() for values in [head, *rows])


def _render_html(cells: pd.DataFrame, left: tuple[int, ...], caption: str) -> str:
    """The same cells as an HTML table: the index as row headings, text left and numbers right, as in the text."""
    head, rows, lefts, levels = _grid(cells, left)

    def cell(tag: str, j: int, value: str, scope: str = "") -> str:
        align = "left" if j in lefts else "right"
        return f'<{tag}{scope} style="text-align:{align}">{html.escape(value)}</{tag}>'

    heading = "".join(cell("th", j, v, ' scope="col"') for j, v in enumerate(head))
    body = "".join(
        "<tr>"
        + "".join(cell("th", j, v, ' scope="row"') if j < levels else cell("td", j, v) for j, v in enumerate(row))
        + "</tr>"
        for row in rows
    )
    title = f'<caption style="text-align:left">{html.escape(caption)}</caption>' if caption else ""
    return f'<table class="gpucost-table">{title}<thead><tr>{heading}</tr></thead><tbody>{body}</tbody></table>'


def _text_columns(frame: pd.DataFrame) -> tuple[int, ...]:
    """The positions of the columns that hold text alone (names, verdicts), under a plain heading."""
    if isinstance(frame.columns, pd.MultiIndex):
        return ()
    return tuple(
        i
        for i in range(frame.shape[1])
        if any(isinstance(v, str) for v in frame.iloc[:, i])
        and all(isinstance(v, str) or _missing(v) for v in frame.iloc[:, i])
    )


def tidy_tables() -> None:
    """Show every DataFrame this notebook displays through :func:`table` (its text and its HTML), and set pandas'
    display options once for anything else: no wrapping, no truncated columns, no scientific notation."""
    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.max_columns", None)
    pd.set_option("display.expand_frame_repr", False)
    pd.set_option("display.float_format", _number)
    try:
        from IPython import get_ipython
    except ImportError:  # not in a notebook: the options alone
        return
    shell = get_ipython()
    if shell is None:
        return
    formatters = shell.display_formatter.formatters
    formatters["text/plain"].for_type(
        pd.DataFrame, lambda frame, printer, cycle: printer.text(_displayed(frame).text())
    )
    formatters["text/html"].for_type(pd.DataFrame, lambda frame: _displayed(frame)._repr_html_())


def _displayed(frame: pd.DataFrame) -> Table:
    """``frame`` as :func:`tidy_tables` shows it: whole up to pandas' ``display.max_rows``; a longer one as its first
    and last rows (``display.min_rows`` in all), with a caption that says so."""
    most, few = pd.get_option("display.max_rows"), pd.get_option("display.min_rows") or 10
    if most is None or len(frame) <= most:
        return table(frame)
    half = max(1, min(few, most or few) // 2)
    caption = f"{2 * half} of {len(frame):,} rows shown: the first {half} and the last {half}"
    return table(pd.concat([frame.head(half), frame.tail(half)]), caption=caption)


# ------------------------------------------------------------------------------------------------------- figures
_DESCRIPTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def describe(fig, alt: str):
    """Record ``alt``, what ``fig`` shows in one sentence, for :func:`figure`; returns ``fig``."""
    _DESCRIPTIONS[fig] = non_empty_text("alt", alt)
    return fig


def description(fig) -> str | None:
    """The sentence :func:`describe` recorded for ``fig`` (or an Axes' figure), if any."""
    return _DESCRIPTIONS.get(getattr(fig, "figure", fig) if not hasattr(fig, "savefig") else fig)


@dataclass(frozen=True)
class FigureImage:
    """A figure as a notebook shows it: a PNG with its alt text; the alt text is also its text twin (``repr``)."""

    png: bytes
    alt: str

    def __repr__(self) -> str:
        return f"figure: {self.alt}"

    def _repr_html_(self) -> str:
        data = base64.b64encode(self.png).decode("ascii")
        return f'<img src="data:image/png;base64,{data}" alt="{html.escape(self.alt, quote=True)}"/>'


def figure(fig, alt: str | None = None) -> FigureImage:
    """``fig`` (a matplotlib Figure or Axes) as an image whose alt text is ``alt``, or the sentence its plotting
    function recorded (:func:`describe`); the figure is closed, so the notebook shows it once."""
    fig = fig if hasattr(fig, "savefig") else getattr(fig, "figure", None)
    if fig is None or not hasattr(fig, "savefig"):
        raise InputError("fig", "fig must be a matplotlib Figure or Axes")
    text = non_empty_text("alt", alt if alt is not None else description(fig) or "")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return FigureImage(buffer.getvalue(), text)


__all__ = [
    "KINDS",
    "FigureImage",
    "Table",
    "column_kind",
    "describe",
    "description",
    "figure",
    "format_bytes",
    "format_cell",
    "format_estimate",
    "format_estimates",
    "format_hours",
    "format_memory",
    "format_number",
    "format_pair",
    "format_ratio",
    "format_seconds",
    "format_size",
    "format_steps",
    "format_usd",
    "table",
    "tidy_tables",
]
