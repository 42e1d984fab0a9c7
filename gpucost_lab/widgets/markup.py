"""What both course widgets share: number formats, table styles, the invalid-input message and the CSS classes
that let a browser test find each part."""

from __future__ import annotations

import html

DESCRIPTION_STYLE = {"description_width": "initial"}  # ipywidgets style: show a control's whole description
TABLE_STYLE = "border-collapse:collapse;font-variant-numeric:tabular-nums;"
CELL_STYLE = "padding:2px 10px;border-bottom:1px solid #ddd;text-align:right;"
HEAD_STYLE = "padding:2px 10px;border-bottom:2px solid #888;text-align:right;"
OVER_ROW_STYLE = "background:#fde2e2;color:#8b0000;font-weight:bold;"
COLORS = {
    "static": "#555555",
    "activations": "#1f77b4",
    "over": "#d62728",
    "headroom": "#e8f5e9",
    "reserve": "#bdbdbd",
    "cheaper": "#e3f4e6",
    "dearer": "#fbe3e3",
}


def num(x: float, digits: int = 3) -> str:
    """A number with at most ``digits`` decimals and no trailing zeros: 14.08, 7.076, 21.6, 2."""
    s = f"{x:.{digits}f}"
    if "." in s:  # only decimals are trailing: 30 with no decimals stays 30
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def gb(x: float) -> str:
    """``x`` GB as :func:`num` writes it: "14.08 GB"."""
    return f"{num(x)} GB"


def pct(fraction: float) -> str:
    """A signed whole percentage: 0.2 -> "+20%", -0.5 -> "-50%", 0 -> "0%"."""
    s = f"{fraction * 100:+.0f}%"
    return "0%" if s in ("+0%", "-0%") else s


def invalid_input_html(err: ValueError, what: str) -> str:
    """The alert a widget shows instead of ``what`` while an input is invalid."""
    return (
        f'<div role="alert" style="color:#8b0000;"><b>Invalid input</b>: {html.escape(str(err))}. '
        f"Change it to see the {what}.</div>"
    )


def th(text: str, scope: str = "col") -> str:
    """A header cell: a column header, or with ``scope="row"`` a row's label."""
    return f'<th scope="{scope}" style="{HEAD_STYLE if scope == "col" else CELL_STYLE}">{text}</th>'


def expose(box, prefix: str, inputs: dict, **parts) -> None:
    """Give the container and its parts stable CSS classes (for browser tests) and attributes (for Python).

    Each part is ``attribute=(suffix, widget)``: the widget becomes ``box.attribute`` with the class
    ``{prefix}-{suffix}``; each input ``name`` gets ``{prefix}-input-{name}`` (underscores as hyphens).
    """
    box.add_class(prefix)
    box.inputs = inputs
    for name, control in inputs.items():
        control.add_class(f"{prefix}-input-{name.replace('_', '-')}")
    for attribute, (suffix, part) in parts.items():
        part.add_class(f"{prefix}-{suffix}")
        setattr(box, attribute, part)
