"""What both course widgets share: number formats, table styles, the invalid-input message, CSS classes."""

from __future__ import annotations

import html

_STYLE = {"description_width": "initial"}
_TABLE_STYLE = "border-collapse:collapse;font-variant-numeric:tabular-nums;"
_CELL = "padding:2px 10px;border-bottom:1px solid #ddd;text-align:right;"
_HEAD = "padding:2px 10px;border-bottom:2px solid #888;text-align:right;"
_OVER_ROW = "background:#fde2e2;color:#8b0000;font-weight:bold;"
_COLORS = {
    "static": "#555555",
    "activations": "#1f77b4",
    "over": "#d62728",
    "headroom": "#e8f5e9",
    "reserve": "#bdbdbd",
    "cheaper": "#e3f4e6",
    "dearer": "#fbe3e3",
}


def _num(x: float, digits: int = 3) -> str:
    """A number with at most ``digits`` decimals and no trailing zeros: 14.08, 7.076, 21.6, 2."""
    s = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _gb(x: float) -> str:
    return f"{_num(x)} GB"


def _pct(fraction: float) -> str:
    s = f"{fraction * 100:+.0f}%"
    return "0%" if s in ("+0%", "-0%") else s


def _message(err: ValueError, what: str) -> str:
    return (
        f'<div role="alert" style="color:#8b0000;"><b>Invalid input</b>: {html.escape(str(err))}. '
        f"Change it to see the {what}.</div>"
    )


def _th(text: str, scope: str = "col") -> str:
    return f'<th scope="{scope}" style="{_HEAD if scope == "col" else _CELL}">{text}</th>'


def _expose(box, prefix: str, inputs: dict, **parts) -> None:
    """Give the container and its parts stable CSS classes (for browser tests) and attributes (for Python)."""
    box.add_class(prefix)
    box.inputs = inputs
    for name, control in inputs.items():
        control.add_class(f"{prefix}-input-{name.replace('_', '-')}")
    for attribute, (suffix, part) in parts.items():
        part.add_class(f"{prefix}-{suffix}")
        setattr(box, attribute, part)
