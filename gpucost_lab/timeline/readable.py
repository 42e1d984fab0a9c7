"""Any table of the timeline views, made readable for a chapter: ``readable(table, trace)``.

The table goes through the chapters' one formatter (:func:`gpucost_lab.formatting.table`): times in a unit chosen
by magnitude, sizes in decimal units, shares as percentages, every column under its own name (``duration_us``
stays ``duration_us``, its values read ``10.03 s``). On top of that, absolute clock values (``start_us``, ``ts_us``,
``end_us``) become offsets from the trace's first event, and kernel and operator names lose their template and
function arguments (:func:`~gpucost_lab.timeline.text.short_name`). The original table, with full names and raw
microseconds, is left as it was: compute from it, read this.
"""

from __future__ import annotations

import pandas as pd

from gpucost_lab._validate import InputError
from gpucost_lab.formatting import Table
from gpucost_lab.formatting import table as format_table
from gpucost_lab.timeline.load import Trace
from gpucost_lab.timeline.text import NAME_WIDTH, short_name

_ABSOLUTE = ("start_us", "ts_us", "end_us")  # absolute clock values in the views' tables
_NAMES = ("name", "before", "after", "operator")


def _is_share(column: object) -> bool:
    return column == "share" or isinstance(column, str) and column.endswith("_share")


def readable(table: pd.DataFrame, trace: Trace | None = None, *, name_width: int = NAME_WIDTH) -> Table:
    """``table`` as the chapters show it (module doc): ``start_us``, ``ts_us`` and ``end_us`` measured from the
    trace's first event when ``trace`` is given and the values are absolute, name columns shortened to
    ``name_width`` characters, shares as percentages. ``.data`` is the table with those offsets and names."""
    if not isinstance(table, pd.DataFrame):
        raise InputError("table", f"table must be a pandas DataFrame from a timeline view, got {type(table).__name__}")
    origin = float(trace.events["ts_us"].min()) if trace is not None and len(trace.events) else None
    out = table.copy()
    for column in table.columns:
        if column in _NAMES:
            out[column] = [short_name(value, name_width) if isinstance(value, str) else value for value in out[column]]
        elif column in _ABSOLUTE and origin is not None:
            values = pd.to_numeric(out[column], errors="coerce")
            if values.min() >= origin:
                out[column] = values - origin
    return format_table(out, percent=[c for c in table.columns if _is_share(c)])


__all__ = ["readable"]
