"""Any table of the timeline views, made readable for a chapter: ``readable(table, trace)``.

Times become text in a unit chosen by magnitude, shares percentages
(:func:`~gpucost_lab.timeline.text.format_duration`), absolute
clock values become offsets from the trace's first event, and kernel and operator names lose their template and
function arguments (:func:`~gpucost_lab.timeline.text.short_name`). The original table, with full names and raw
microseconds, is left as it was: compute from it, read this.
"""

from __future__ import annotations

import pandas as pd

from gpucost_lab._validate import InputError
from gpucost_lab.timeline.load import Trace
from gpucost_lab.timeline.text import format_duration, short_name

_ABSOLUTE = ("start_us", "ts_us", "end_us")  # absolute clock values in the views' tables
_NAMES = ("name", "before", "after")


def readable(table: pd.DataFrame, trace: Trace | None = None, *, name_width: int = 60) -> pd.DataFrame:
    """``table`` with every ``*_us`` column as text (``start_us``, ``ts_us`` and ``end_us`` measured from the
    trace's first event when ``trace`` is given and the values are absolute), renamed without ``_us``, and name
    columns shortened to ``name_width`` characters."""
    if not isinstance(table, pd.DataFrame):
        raise InputError("table", f"table must be a pandas DataFrame from a timeline view, got {type(table).__name__}")
    origin = float(trace.events["ts_us"].min()) if trace is not None and len(trace.events) else None
    out = table.copy()
    for column in table.columns:
        if column in _NAMES:
            out[column] = [short_name(value, name_width) if isinstance(value, str) else value for value in out[column]]
        elif column == "share" or isinstance(column, str) and column.endswith("_share"):
            out[column] = [f"{v:.1%}" if pd.notna(v) else None for v in pd.to_numeric(out[column], errors="coerce")]
        elif isinstance(column, str) and column.endswith("_us"):
            values = pd.to_numeric(out[column], errors="coerce")
            if column in _ABSOLUTE and origin is not None and values.min() >= origin:
                values = values - origin
            out[column] = [format_duration(None if pd.isna(v) else float(v)) for v in values]
            out = out.rename(columns={column: column[:-3]})
    return out


__all__ = ["readable"]
