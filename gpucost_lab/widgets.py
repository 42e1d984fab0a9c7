"""The course's two interactive widgets: the memory ledger (chapter 04) and the cost predictor (chapter 03).

Each function returns an ``ipywidgets.VBox`` whose outputs redraw on every change of a control. The
pictures are small HTML/SVG strings (no matplotlib, so a slider drag redraws in well under the 30 ms
target, see ``benchmarks/widget_latency.py``), and every picture has a text twin beside it: the
per-block table for the ledger's bar, a sentence for the predictor's chart. Invalid inputs show a
message in the verdict area; the callback never raises.

The parts are attributes of the returned box, for tests and for notebooks that want to read them:

- ledger: ``slider``, ``inputs`` (dict), ``checkpointing``, ``verdict``, ``table``, ``bar``, ``result``
  (the latest :class:`~gpucost_lab.memory.LedgerResult`, ``None`` while an input is invalid);
- predictor: ``gain``, ``steps``, ``inputs`` (dict), ``verdict``, ``table``, ``chart``, ``prediction``
  (the latest :func:`~gpucost_lab.cost.predict` dict, ``None`` while an input is invalid).

Every part carries a stable CSS class (``gpucost-ledger-verdict``, ``gpucost-predictor-chart``, ...) so a
browser test can find it. State lives in the box and in closures, never in notebook globals.
"""
from __future__ import annotations

import html
import math

import ipywidgets as widgets

from . import cost
from ._validate import integer_at_least, non_negative, positive
from .memory import RECOMPUTE_STEP_TIME_FACTOR, LedgerResult, MemoryLedger

MICROBATCH_MIN, MICROBATCH_MAX = 1, 128
CHANGE_MIN, CHANGE_MAX = -0.5, 1.0  # the predictor's slider range (and chart axes), as fractions

_STYLE = {"description_width": "initial"}
_TABLE_STYLE = "border-collapse:collapse;font-variant-numeric:tabular-nums;"
_CELL = "padding:2px 10px;border-bottom:1px solid #ddd;text-align:right;"
_HEAD = "padding:2px 10px;border-bottom:2px solid #888;text-align:right;"
_OVER_ROW = "background:#fde2e2;color:#8b0000;font-weight:bold;"
_COLORS = {"static": "#555555", "activations": "#1f77b4", "over": "#d62728", "headroom": "#e8f5e9",
           "reserve": "#bdbdbd", "cheaper": "#e3f4e6", "dearer": "#fbe3e3"}


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
    return (f'<div role="alert" style="color:#8b0000;"><b>Invalid input</b>: {html.escape(str(err))}. '
            f"Change it to see the {what}.</div>")


def _th(text: str, scope: str = "col") -> str:
    return f'<th scope="{scope}" style="{_HEAD if scope == "col" else _CELL}">{text}</th>'


# --------------------------------------------------------------------------------------------------
# memory ledger (chapter 04)


def _ledger_from_inputs(inputs: dict, blocks: int) -> MemoryLedger:
    """Validate the text inputs under the labels the learner sees, then build the ledger."""
    static_gb = non_negative("static (GB)", inputs["static_gb"].value)
    per_sample_gb = positive("activations per sample (GB)", inputs["activation_gb_per_sample"].value)
    device_gb = positive("device (GB)", inputs["device_gb"].value)
    reserve_percent = non_negative("reserve (%)", inputs["reserve_percent"].value)
    if reserve_percent >= 100:
        raise ValueError(f"reserve (%) must be in [0, 100), got {inputs['reserve_percent'].value!r}")
    return MemoryLedger(static_gb=static_gb, activation_gb_per_sample=per_sample_gb, device_gb=device_gb,
                        reserve_fraction=reserve_percent / 100.0, blocks=blocks)


def _row_label(result: LedgerResult, index: int) -> str:
    if result.checkpointing and index == len(result.blocks):
        return f"recompute block {result.recompute.block}"
    return f"block {result.rows[index].block}"


def _ledger_verdict_html(ledger: MemoryLedger, result: LedgerResult) -> str:
    budget = (f"the {_gb(result.budget_gb)} budget ({_gb(ledger.device_gb)} device, "
              f"{_num(ledger.reserve_fraction * 100, 1)}% reserve)")
    if result.fits:
        head = (f"<b>fits</b>: peak {_gb(result.peak_gb)} of {budget}; "
                f"headroom {_gb(result.headroom_gb)}.")
    else:
        first = result.first_over_budget
        where = (f"while recomputing block {first.block} in backward" if first is result.recompute
                 else f"at block {first.block}")
        head = (f"<b>out of memory {where}</b>: {_gb(first.total_gb)} resident, "
                f"{_gb(first.total_gb - result.budget_gb)} over {budget}.")
        if not math.isclose(first.total_gb, result.peak_gb, rel_tol=1e-12, abs_tol=1e-12):
            head += (f" The whole step would need {_gb(result.peak_gb)}, "
                     f"{_gb(result.peak_gb - result.budget_gb)} over.")
    if result.max_microbatch == 0:
        largest = (f"largest microbatch that fits: none (static memory alone, {_gb(ledger.static_gb)}, "
                   f"leaves no room in the budget).")
    elif result.checkpointing:
        largest = (f"largest microbatch that fits with activation checkpointing: <b>{result.max_microbatch}</b> "
                   f"({ledger.max_microbatch()} without).")
    else:
        largest = f"largest microbatch that fits: <b>{result.max_microbatch}</b>."
    lines = [head, largest]
    if result.checkpointing:
        plain_peak_gb = result.peak_gb + result.checkpointing_saves_gb
        lines.append(
            f"activation checkpointing saves {_gb(result.checkpointing_saves_gb)} at microbatch {result.microbatch} "
            f"(peak {_gb(plain_peak_gb)} → {_gb(result.peak_gb)}) and costs a recompute of the forward pass: "
            f"step time × 4/3 (≈ {_num((RECOMPUTE_STEP_TIME_FACTOR - 1) * 100, 0)}% longer; assumption: a "
            f"forward is about 1/3 of a forward+backward step).")
    paragraphs = "".join(f"<p style='margin:2px 0'>{x}</p>" for x in lines)
    return f'<div role="status" aria-live="polite">{paragraphs}</div>'


def _ledger_table_html(result: LedgerResult) -> str:
    cp = result.checkpointing
    head = _th("block") + _th("activations (GB)") + _th("resident (GB)") + _th("state") + (_th("phase") if cp else "")
    body = []
    for i, row in enumerate(result.rows):
        style = _OVER_ROW if row.state != "fits" else ""
        phase = ""
        if cp:
            phase = ("backward: recompute (peak)" if i == len(result.blocks)
                     else f"forward: {row.block} kept input{'s' if row.block > 1 else ''}")
            phase = f'<td style="{_CELL}text-align:left">{phase}</td>'
        body.append(f'<tr style="{style}">{_th(_row_label(result, i), "row")}'
                    f'<td style="{_CELL}">{_num(row.activations_gb)}</td><td style="{_CELL}">{_num(row.total_gb)}</td>'
                    f'<td style="{_CELL}">{row.state}</td>{phase}</tr>')
    caption = (f"Memory resident at microbatch {result.microbatch} "
               f"({'with' if cp else 'without'} activation checkpointing; budget {_gb(result.budget_gb)})")
    return (f'<table style="{_TABLE_STYLE}"><caption style="text-align:left">{caption}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def _ledger_bar_html(ledger: MemoryLedger, result: LedgerResult) -> str:
    width, height, pad = 560.0, 28.0, 4.0
    static_gb, peak_gb, budget_gb, device_gb = ledger.static_gb, result.peak_gb, result.budget_gb, ledger.device_gb
    scale_gb = max(device_gb, peak_gb)

    def x(gb: float) -> float:
        return pad + (width - 2 * pad) * gb / scale_gb

    def rect(lo: float, hi: float, color: str, name: str, opacity: float = 1.0) -> str:
        if hi <= lo:
            return ""
        return (f'<rect x="{x(lo):.1f}" y="4" width="{x(hi) - x(lo):.1f}" height="{height}" fill="{color}" '
                f'fill-opacity="{opacity}"><title>{name}: {_gb(hi - lo)}</title></rect>')

    activations_gb = peak_gb - static_gb
    parts = [rect(budget_gb, device_gb, _COLORS["reserve"], "reserve"),
             rect(peak_gb, budget_gb, _COLORS["headroom"], "headroom"),
             rect(0, static_gb, _COLORS["static"], "static"),
             rect(static_gb, peak_gb, _COLORS["activations"], "peak activations"),
             rect(budget_gb, peak_gb, _COLORS["over"], "over budget", 0.85)]
    lines = (f'<line x1="{x(budget_gb):.1f}" x2="{x(budget_gb):.1f}" y1="0" y2="{height + 8}" stroke="#000" '
             f'stroke-dasharray="3,2"><title>budget {_gb(budget_gb)}</title></line>'
             f'<line x1="{x(device_gb):.1f}" x2="{x(device_gb):.1f}" y1="0" y2="{height + 8}" stroke="#000" '
             f'stroke-width="2"><title>device {_gb(device_gb)}</title></line>')
    if result.fits:
        tail = f"headroom {_gb(result.headroom_gb)} · reserve {_gb(device_gb - budget_gb)}"
    else:
        tail = f"OVER BUDGET by {_gb(peak_gb - budget_gb)}"
    legend = (f"static {_gb(static_gb)} · peak activations {_gb(activations_gb)} · {tail} "
              f"(budget {_gb(budget_gb)} dashed, device {_gb(device_gb)} solid)")
    label = html.escape(legend, quote=True)
    if not result.fits:
        legend = legend.replace(tail, f"<b style='color:{_COLORS['over']}'>{tail}</b>")
    svg = (f'<svg role="img" aria-label="{label}" width="{width:.0f}" height="{height + 8:.0f}" '
           f'viewBox="0 0 {width:.0f} {height + 8:.0f}" xmlns="http://www.w3.org/2000/svg">'
           f'<rect x="{pad}" y="4" width="{width - 2 * pad}" height="{height}" fill="#fff" stroke="#999"/>'
           f"{''.join(parts)}{lines}</svg>")
    swatches = "".join(
        f'<span style="display:inline-block;width:10px;height:10px;background:{_COLORS[k]};margin:0 3px 0 10px;'
        f'border:1px solid #999"></span>{name}'
        for k, name in (("static", "static"), ("activations", "activations"), ("headroom", "headroom"),
                        ("reserve", "reserve"), ("over", "over budget")))
    return f'<div>{svg}<div style="font-size:90%">{legend}</div><div style="font-size:85%">{swatches}</div></div>'



def _expose(box, prefix: str, inputs: dict, **parts) -> None:
    """Give the container and its parts stable CSS classes (for browser tests) and attributes (for Python)."""
    box.add_class(prefix)
    box.inputs = inputs
    for name, control in inputs.items():
        control.add_class(f"{prefix}-input-{name.replace('_', '-')}")
    for attribute, (suffix, part) in parts.items():
        part.add_class(f"{prefix}-{suffix}")
        setattr(box, attribute, part)


def memory_ledger_widget(static_gb: float = 3.2, activation_gb_per_sample: float = 0.34, device_gb: float = 24.0,
                         reserve_fraction: float = 0.10, blocks: int = 10, microbatch: int = 32) -> widgets.VBox:
    """The memory ledger of chapter 04 as a live widget.

    A microbatch slider (1..128), inputs for static memory, activations per sample, device memory and
    the reserve (entered in percent: 10 = 10% of the device kept free), and an activation-checkpointing
    checkbox. Outputs: a verdict ("fits" with headroom, or "out of memory at block k" and by how much;
    the largest microbatch that fits; with checkpointing, what it saves and its 4/3 step-time cost), a
    stacked bar against the device, and the per-block table (the bar's nonvisual twin).

    Bad construction arguments raise ``ValueError`` at once; bad values typed later show a message.
    """
    MemoryLedger(static_gb=static_gb, activation_gb_per_sample=activation_gb_per_sample, device_gb=device_gb,
                 reserve_fraction=reserve_fraction, blocks=blocks)  # validates every argument
    blocks = integer_at_least("blocks", blocks, 1)
    microbatch = integer_at_least("microbatch", microbatch, MICROBATCH_MIN)
    if microbatch > MICROBATCH_MAX:
        raise ValueError(f"microbatch must be an integer in [{MICROBATCH_MIN}, {MICROBATCH_MAX}], got {microbatch!r}")

    slider = widgets.IntSlider(value=microbatch, min=MICROBATCH_MIN, max=MICROBATCH_MAX, step=1,
                               description="microbatch", continuous_update=True, style=_STYLE)
    inputs = {
        "static_gb": widgets.FloatText(value=static_gb, description="static (GB)", style=_STYLE),
        "activation_gb_per_sample": widgets.FloatText(value=activation_gb_per_sample,
                                                      description="activations per sample (GB)", style=_STYLE),
        "device_gb": widgets.FloatText(value=device_gb, description="device (GB)", style=_STYLE),
        "reserve_percent": widgets.FloatText(value=round(reserve_fraction * 100, 10), description="reserve (%)",
                                             style=_STYLE),
    }
    checkpointing = widgets.Checkbox(value=False, description="activation checkpointing", indent=False)
    verdict, table, bar = widgets.HTML(), widgets.HTML(), widgets.HTML()

    box = widgets.VBox([slider, widgets.HBox(list(inputs.values()), layout=widgets.Layout(flex_flow="row wrap")),
                        checkpointing, verdict, bar, table])
    _expose(box, "gpucost-ledger", inputs, slider=("microbatch", slider), checkpointing=("checkpointing", checkpointing),
            verdict=("verdict", verdict), table=("table", table), bar=("bar", bar))
    box.result = None

    def update(_change=None) -> None:
        try:
            ledger = _ledger_from_inputs(inputs, blocks)
            result = ledger.at(slider.value, checkpointing=checkpointing.value)
        except ValueError as err:
            box.result = None
            verdict.value, table.value, bar.value = _message(err, "ledger"), "", ""
            return
        box.result = result
        verdict.value = _ledger_verdict_html(ledger, result)
        bar.value = _ledger_bar_html(ledger, result)
        table.value = _ledger_table_html(result)

    for control in (slider, checkpointing, *inputs.values()):
        control.observe(update, names="value")
    update()
    return box


# --------------------------------------------------------------------------------------------------
# cost predictor (chapter 03)


def _prediction_from_inputs(gain: float, steps: float, inputs: dict) -> dict:
    price = positive("price per hour (USD)", inputs["price_per_hour_usd"].value)
    baseline_hours = positive("baseline run (h)", inputs["baseline_hours"].value)
    window_hours = positive("nightly window (h)", inputs["window_hours"].value)
    return cost.predict(gain, steps, price, baseline_hours, window_hours)


def _one_plus(x: float) -> str:
    return f"1 {'+' if x >= 0 else '−'} {abs(x):.2f}"


def _predictor_verdict_html(p: dict) -> str:
    r, v = p["relative_cost"], p["verdict"]
    if v == "same cost":
        detail = "the candidate costs the same per run to the quality target"
    else:
        detail = (f"the candidate costs about {_num(abs(r - 1) * 100, 1)}% {'less' if r < 1 else 'more'} per run "
                  f"to the same quality target")
    color = {"cheaper": "#1b5e20", "more expensive": "#8b0000"}.get(v, "#000")
    return (f'<div role="status" aria-live="polite"><p style="margin:2px 0">relative cost '
            f'<b>{r:.3f}</b> = ({_one_plus(p["steps_change"])}) / ({_one_plus(p["throughput_gain"])}) → '
            f'<b style="color:{color}">{v}</b>: {detail}.</p></div>')


def _predictor_table_html(p: dict) -> str:
    window = _num(p["window_hours"], 2)
    head = _th("run") + _th("hours") + _th("cost (USD)") + _th(f"inside the {window} h window?")
    rows = []
    for name, hours, usd, fits in (("baseline", p["baseline_hours"], p["baseline_cost_usd"], p["baseline_fits_window"]),
                                   ("candidate", p["candidate_hours"], p["candidate_cost_usd"],
                                    p["candidate_fits_window"])):
        answer = "yes" if fits else f"no, {hours - p['window_hours']:.2f} h late"
        rows.append(f'<tr style="{"" if fits else _OVER_ROW}">{_th(name, "row")}<td style="{_CELL}">{hours:.2f}</td>'
                    f'<td style="{_CELL}">${usd:.2f}</td><td style="{_CELL}">{answer}</td></tr>')
    savings = p["savings_usd"]
    if math.isclose(savings, 0.0, abs_tol=0.005):
        note = "same cost per run"
    else:
        note = (f"the candidate saves ${savings:.2f} per run" if savings > 0
                else f"the candidate costs ${-savings:.2f} more per run")
    caption = f"One run at ${p['price_per_hour_usd']:.2f} per accelerator-hour (an assumption): {note}"
    return (f'<table style="{_TABLE_STYLE}"><caption style="text-align:left">{caption}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _chart_sentence(p: dict) -> str:
    g, s, v = p["throughput_gain"], p["steps_change"], p["verdict"]
    if v == "same cost":
        where = "on the line: same cost"
    else:
        side = "above" if s > g else "below"
        where = f"{side} the line, {abs(s - g) * 100:.0f} percentage points away: {v}"
    return (f"Break-even chart: the equal-cost line is steps change = throughput gain, since relative cost = "
            f"(1 + steps change) / (1 + throughput gain) = 1 there; above the line is more expensive, below it "
            f"cheaper. The current point (gain {_pct(g)}, steps {_pct(s)}) is {where} "
            f"(relative cost {p['relative_cost']:.3f}).")


def _predictor_chart_html(p: dict) -> str:
    size, left, bottom, top, right = 240.0, 58.0, 36.0, 8.0, 24.0  # right: room for the "+100%" tick label
    lo, hi = CHANGE_MIN, CHANGE_MAX

    def px(gain: float) -> float:
        return left + size * (gain - lo) / (hi - lo)

    def py(steps: float) -> float:
        return top + size * (hi - steps) / (hi - lo)

    x0, x1, y0, y1 = px(lo), px(hi), py(lo), py(hi)  # y0 is the bottom edge
    ticks = []
    for t in (-0.5, 0.0, 0.5, 1.0):
        ticks.append(f'<line x1="{px(t):.1f}" x2="{px(t):.1f}" y1="{y0:.1f}" y2="{y0 + 4:.1f}" stroke="#000"/>'
                     f'<text x="{px(t):.1f}" y="{y0 + 15:.1f}" font-size="10" text-anchor="middle">{_pct(t)}</text>'
                     f'<line x1="{x0 - 4:.1f}" x2="{x0:.1f}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#000"/>'
                     f'<text x="{x0 - 6:.1f}" y="{py(t) + 3:.1f}" font-size="10" text-anchor="end">{_pct(t)}</text>')
    g, s = p["throughput_gain"], p["steps_change"]
    sentence = _chart_sentence(p)
    w, h = left + size + right, top + size + bottom
    svg = (f'<svg role="img" aria-label="{html.escape(sentence, quote=True)}" width="{w:.0f}" height="{h:.0f}" '
           f'viewBox="0 0 {w:.0f} {h:.0f}" xmlns="http://www.w3.org/2000/svg">'
           f'<polygon points="{x0:.1f},{y0:.1f} {x0:.1f},{y1:.1f} {x1:.1f},{y1:.1f}" fill="{_COLORS["dearer"]}"/>'
           f'<polygon points="{x0:.1f},{y0:.1f} {x1:.1f},{y0:.1f} {x1:.1f},{y1:.1f}" fill="{_COLORS["cheaper"]}"/>'
           f'<rect x="{x0:.1f}" y="{y1:.1f}" width="{size}" height="{size}" fill="none" stroke="#999"/>'
           f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#000" stroke-width="1.5">'
           f"<title>equal cost: steps change = throughput gain</title></line>"
           f'<text x="{px(lo) + 8:.1f}" y="{py(hi) + 16:.1f}" font-size="11" fill="#8b0000">more expensive</text>'
           f'<text x="{px(hi) - 8:.1f}" y="{py(lo) - 8:.1f}" font-size="11" fill="#1b5e20" '
           f'text-anchor="end">cheaper</text>'
           f'<text x="{px(0.62):.1f}" y="{py(0.62) - 6:.1f}" font-size="10" text-anchor="end" '
           f'transform="rotate(-45 {px(0.62):.1f} {py(0.62) - 6:.1f})">equal cost</text>'
           f"{''.join(ticks)}"
           f'<circle cx="{px(g):.1f}" cy="{py(s):.1f}" r="5" fill="#000" stroke="#fff" stroke-width="1.5">'
           f"<title>current: gain {_pct(g)}, steps {_pct(s)}, relative cost {p['relative_cost']:.3f}</title></circle>"
           f'<text x="{(x0 + x1) / 2:.1f}" y="{h - 4:.1f}" font-size="11" text-anchor="middle">throughput gain</text>'
           f'<text x="12" y="{(y0 + y1) / 2:.1f}" font-size="11" text-anchor="middle" '
           f'transform="rotate(-90 12 {(y0 + y1) / 2:.1f})">change in steps to target</text></svg>')
    return f'<div>{svg}<p style="margin:2px 0;max-width:40em">{sentence}</p></div>'


def cost_predictor_widget(throughput_gain: float = 0.20, steps_change: float = 0.25, price_per_hour_usd: float = 2.10,
                          baseline_hours: float = 8.0, window_hours: float = 8.0) -> widgets.VBox:
    """The cost predictor of chapter 03 as a live widget: is a change that is faster per sample but
    needs more steps to the same quality cheaper?

    Sliders for the throughput gain and the change in steps to target (-50%..+100%, in steps of 1%),
    inputs for the price per accelerator-hour, the baseline run's hours and the nightly window.
    Outputs: the relative cost (1 + steps) / (1 + gain) with its verdict, the cost of one run for the
    baseline and the candidate and whether each finishes inside the window, and the break-even chart
    (equal-cost line steps = gain, current point marked) with a sentence saying the same thing.

    Bad construction arguments raise ``ValueError`` at once; bad values typed later show a message.
    """
    for name, value in (("throughput_gain", throughput_gain), ("steps_change", steps_change)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not CHANGE_MIN <= value <= CHANGE_MAX:
            raise ValueError(f"{name} must be a number in [{CHANGE_MIN}, {CHANGE_MAX}], got {value!r}")
    cost.predict(throughput_gain, steps_change, price_per_hour_usd, baseline_hours, window_hours)  # validates

    def slider(value: float, description: str) -> widgets.FloatSlider:
        return widgets.FloatSlider(value=value, min=CHANGE_MIN, max=CHANGE_MAX, step=0.01, description=description,
                                   readout_format="+.0%", continuous_update=True, style=_STYLE,
                                   layout=widgets.Layout(width="28em"))

    gain = slider(throughput_gain, "throughput gain")
    steps = slider(steps_change, "change in steps to target")
    inputs = {
        "price_per_hour_usd": widgets.FloatText(value=price_per_hour_usd, description="price per hour (USD)",
                                                style=_STYLE),
        "baseline_hours": widgets.FloatText(value=baseline_hours, description="baseline run (h)", style=_STYLE),
        "window_hours": widgets.FloatText(value=window_hours, description="nightly window (h)", style=_STYLE),
    }
    verdict, table, chart = widgets.HTML(), widgets.HTML(), widgets.HTML()

    box = widgets.VBox([gain, steps, widgets.HBox(list(inputs.values()), layout=widgets.Layout(flex_flow="row wrap")),
                        verdict, table, chart])
    _expose(box, "gpucost-predictor", inputs, gain=("gain", gain), steps=("steps", steps),
            verdict=("verdict", verdict), table=("table", table), chart=("chart", chart))
    box.prediction = None

    def update(_change=None) -> None:
        try:
            p = _prediction_from_inputs(gain.value, steps.value, inputs)
        except ValueError as err:
            box.prediction = None
            verdict.value, table.value, chart.value = _message(err, "prediction"), "", ""
            return
        box.prediction = p
        verdict.value = _predictor_verdict_html(p)
        table.value = _predictor_table_html(p)
        chart.value = _predictor_chart_html(p)

    for control in (gain, steps, *inputs.values()):
        control.observe(update, names="value")
    update()
    return box
