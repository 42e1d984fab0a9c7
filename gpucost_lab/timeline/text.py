"""The text of ``gpucost-lab analyze``: readable names and durations, and :func:`render_analysis`, which lays out
:func:`~gpucost_lab.timeline.analyze`'s dict (whose ``--json`` keeps the full names and unrounded numbers).

- :func:`short_name`: a kernel or operator name with its template and function arguments elided
  (``void at::native::vectorized_elementwise_kernel<4, at::native::...>(int, ...)`` becomes
  ``at::native::vectorized_elementwise_kernel<…>(…)``), unprintable characters escaped, at most 100 characters.
- :func:`format_duration`: microseconds as ``µs``, ``ms`` or ``s`` by magnitude, never finer than the trace clock's
  1 µs resolution: ``0 µs``, ``<1 µs``, ``17 µs``, ``1.234 ms``, ``12.920 s``.
- :func:`detail_line`: a top operation's input shapes (the two that take the most time) and Python stack, shortened
  as names are, on one line; nothing when the trace recorded neither. The stack shows the three innermost frames
  outside torch's own code (frames in ``torch/`` files and ``<built-in ...>`` calls left out; ``nn.Module: Name``
  frames kept, they name the module), or the three innermost when there are none; ``--json`` keeps every frame.
"""

from __future__ import annotations

import math
import re

from gpucost_lab.timeline.limits import SKIP_RULES, describe_skipped

NAME_WIDTH = 100
_KEEP = re.compile(r"^(hip)?(Memcpy|Memset)")  # copies and fills: the parenthesis says which memories
_PAIRS = {"<": ">", "(": ")"}
_KEPT_GROUPS = ("(anonymous namespace)",)


def printable(value: object) -> str:
    """``value`` as text safe to print on one line: control and other unprintable characters escaped."""
    text = str(value)
    return (
        text
        if text.isprintable()
        else "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    )


def _elide(name: str) -> str:
    """Top-level ``<...>`` and ``(...)`` groups as ``<…>`` and ``(…)``, except one that opens the name
    (``<built-in method ...>``) or holds only digits (``module.py(1501)``); the name unchanged when unbalanced."""
    out: list[str] = []
    stack: list[str] = []  # the closing brackets expected, innermost last
    i = 0
    while i < len(name):
        c = name[i]
        if not stack and any(name.startswith(g, i) for g in _KEPT_GROUPS):
            group = next(g for g in _KEPT_GROUPS if name.startswith(g, i))
            out.append(group)
            i += len(group)
            continue
        if c == ">" and i and name[i - 1] == "-":  # "->" is not a bracket
            if not stack:
                out.append(c)
        elif c in _PAIRS:
            if not stack:
                out.append(c)
                start = i
            stack.append(_PAIRS[c])
        elif c in (">", ")"):
            if not stack or stack.pop() != c:
                return name
            if not stack:
                inner = name[start + 1 : i]
                out.append((inner if start == 0 or inner.isdigit() or not inner else "…") + c)
        elif not stack:
            out.append(c)
        i += 1
    return name if stack else "".join(out)


def short_name(name: object, width: int = NAME_WIDTH) -> str:
    """A readable form of a kernel or operator name, at most ``width`` characters (module doc)."""
    text = str(name)
    if not _KEEP.match(text):
        text = _elide(text)
        text = text[len("void ") :] if text.startswith("void ") else text
    text = printable(text.strip())
    return text if len(text) <= width else text[: width - 1] + "…"


def format_duration(us: float | None) -> str:
    """Microseconds as text with a unit chosen by magnitude, at the clock's 1 µs resolution (module doc)."""
    if us is None or not math.isfinite(us):
        return "n/a"
    sign, us = ("-" if us < 0 else ""), abs(us)
    if us == 0:
        return "0 µs"
    if us < 1:
        return f"{sign}<1 µs"
    if round(us) < 1000:
        return f"{sign}{us:.0f} µs"
    if us < 999_999.5:
        return f"{sign}{us / 1e3:.3f} ms"
    return f"{sign}{us / 1e6:.3f} s"


def _ms(value: float | None) -> str:
    return format_duration(None if value is None else value * 1e3)


def _side(name: str | None, edge: str) -> str:
    """A gap's neighbour, or the edge of the span when no operation borders it there."""
    return f"({edge})" if name is None else short_name(name, 60)


def _wrapped(head: str, items: list[str], width: int = 150) -> list[str]:
    """``head`` and the items, comma separated, over as many lines as it takes to stay within ``width``."""
    lines, line = [], head
    for k, item in enumerate(items):
        piece = item + ("," if k < len(items) - 1 else "")
        if len(line) + 1 + len(piece) > width and line.strip():
            lines.append(line)
            line = "   "
        line += " " + piece
    return [*lines, line]


_TORCH_FRAMES = ("torch/", "<built-in")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _shape(dims) -> str:
    """One input-shape signature: ``[[128, 256], [512, 256], []]`` as ``(128x256, 512x256, -)``."""
    if not isinstance(dims, list):
        return printable(dims)
    parts = ["x".join(map(str, d)) if isinstance(d, list) and d else "-" if d == [] else printable(d) for d in dims]
    return "(" + ", ".join(parts) + ")"


def detail_line(op: dict, indent: str = "      ", width: int = 150) -> list[str]:
    """The shapes and stack line under one of ``analyze``'s ``top_ops`` (module doc); ``[]`` without either."""
    parts = []
    shapes = op.get("input_shapes") or []
    if shapes:
        shown = [f"{_shape(s['input_shapes'])} x{s['count']}" for s in shapes[:2]]
        more = f" (+{len(shapes) - 2} more, --json)" if len(shapes) > 2 else ""
        parts.append("shapes " + "; ".join(shown) + more)
    stack = [f for f in op.get("stack") or [] if not str(f).startswith(_TORCH_FRAMES)] or op.get("stack") or []
    if stack:
        parts.append(
            "stack " + " <- ".join(_clip(printable(f), 60) for f in stack[:3]) + (" <- …" if len(stack) > 3 else "")
        )
    if not parts:
        return []
    operator = op.get("operator")
    via = f"by {short_name(operator, 50)}: " if operator and operator != op.get("name") else ""
    text = printable(indent + via + " · ".join(parts))
    return [text if len(text) <= width else text[: width - 1] + "…"]


def _idle_lines(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    lines = ["idle time per stream, by cause (HTA's idle time breakdown; share of the stream's idle time):"]
    streams = dict.fromkeys(r["stream"] for r in rows)
    for stream in streams:
        parts = [
            f"{r['idle_category'].replace('_', ' ')} {_ms(r['idle_ms'])} ({r['share']:.1%})"
            for r in rows
            if r["stream"] == stream
        ]
        lines.append(f"  stream {stream:<6} " + ", ".join(parts))
    return lines


def _kernel_lines(kernels: dict, top_ops: list[dict] | None = None) -> list[str]:
    lines = []
    details = {o["name"]: detail_line(o, indent="      launched ") for o in top_ops or []}
    if kernels["by_type"]:
        lines.append("GPU time by kernel type (HTA's kernel breakdown):")
        lines += [f"  {r['kernel_type']:<58} {_ms(r['total_ms']):>11}  {r['share']:6.1%}" for r in kernels["by_type"]]
    if kernels["by_name"]:
        lines.append("top kernels (full names in --json):")
        for r in kernels["by_name"]:
            lines.append(
                f"  {short_name(r['name']):<100} {r['kernel_type']:<13} {r['count']:>6}  {_ms(r['total_ms']):>11}"
                f"  {r['share']:6.1%}"
            )
            lines += details.get(r["name"], [])
    return lines


def render_analysis(out: dict, source: object = "trace", top: int = 10) -> str:
    """The text of ``gpucost-lab analyze``: ``out`` is :func:`~gpucost_lab.timeline.analyze`'s dict, ``source`` the
    trace's name for the first line, ``top`` how many phases to list. Lines stay within 160 characters on the course's
    traces (names shortened, see :func:`short_name`); times are measured from the trace's first event."""
    name = printable(source)
    if out["span_ms"] is None:
        head = f"{name}: {out['device']} trace with nothing to measure busy time from"
    else:
        share = f"{out['busy_ms'] / out['span_ms']:.1%}" if out["span_ms"] > 0 else "of a zero span"
        head = (
            f"{name}: {out['device']} trace, span {_ms(out['span_ms'])}, busy {_ms(out['busy_ms'])} ({share}), "
            f"idle {_ms(out['idle_ms'])}, {out['steps']} steps"
        )
    lines = [head]
    if out["skipped_events"]:
        lines.append(f"skipped {describe_skipped(out['skipped_events'])}: {SKIP_RULES}")
    lines.append("widest gaps (start from the first event, width: the operation before -> the one after):")
    lines += [
        f"  at {_ms(g['start_ms']):>11}  {_ms(g['duration_ms']):>11}: {_side(g['before'], 'span start')} -> "
        f"{_side(g['after'], 'span end')}"
        for g in out["gaps"]
    ] or ["  none"]
    lines.append(f"sync points: {len(out['sync_points'])}")
    lines += [f"  {c['direction']}: {c['count']} copies, {_ms(c['total_ms'])}" for c in out["memcpy"]]
    lines += _idle_lines(out.get("idle_breakdown", []))
    kernels = out.get("kernels", {"by_type": [], "by_name": []})
    lines += _kernel_lines(kernels, out["top_ops"])
    if not kernels["by_name"]:
        lines.append("top operations:")
        for o in out["top_ops"]:
            lines.append(f"  {short_name(o['name']):<100} {o['count']:>6}  {_ms(o['total_ms']):>11}  {o['share']:6.1%}")
            lines += detail_line(o)
        if not out["top_ops"]:
            lines.append("  none")
    if out["phases"]:
        phases = list(out["phases"].items())
        items = [f"{short_name(k, 60)} {_ms(v)}" for k, v in phases[:top]]
        if len(phases) > top:
            items[-1] += f" and {len(phases) - top} more (--json)"
        lines += _wrapped("phases:", items)
    if out["peak_memory_bytes"] is not None:
        lines.append(f"peak memory allocated: {out['peak_memory_bytes'] / 1e6:.1f} MB")
    lines += _definitions_lines(out.get("definitions"))
    return "\n".join(lines)


def _definitions_lines(definitions: dict | None) -> list[str]:
    """Whose definitions the figures follow, and the names of the rules where the course's and HTA's differ (what
    each side does and why: ``--json``)."""
    if not definitions:
        return []
    used = definitions["used"]
    whose = "the course's (--definitions hta: HTA's)" if used == "course" else "HolisticTraceAnalysis 0.6.1's"
    names = ", ".join(r["name"] for r in definitions["rules"])
    return [f"definitions: {whose}; the two differ in:", f"  {names} (--json: each rule, both sides and why)"]
