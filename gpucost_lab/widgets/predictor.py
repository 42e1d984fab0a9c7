"""The cost predictor of chapter 03 as a live widget (see :mod:`gpucost_lab.widgets`)."""

from __future__ import annotations

import html
import math
from collections.abc import Callable

import ipywidgets as widgets

from gpucost_lab import cost
from gpucost_lab._validate import InputError, positive
from gpucost_lab.widgets.markup import (
    CELL_STYLE,
    COLORS,
    DESCRIPTION_STYLE,
    OVER_ROW_STYLE,
    TABLE_STYLE,
    expose,
    invalid_input_html,
    num,
    pct,
    th,
)

CHANGE_MIN, CHANGE_MAX = -0.5, 1.0  # the predictor's slider range (and chart axes), as fractions


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
        detail = (
            f"the candidate costs about {num(abs(r - 1) * 100, 1)}% {'less' if r < 1 else 'more'} per run "
            f"to the same quality target"
        )
    color = {"cheaper": "#1b5e20", "more expensive": "#8b0000"}.get(v, "#000")
    return (
        f'<div role="status" aria-live="polite"><p style="margin:2px 0">relative cost '
        f"<b>{r:.3f}</b> = ({_one_plus(p['steps_change'])}) / ({_one_plus(p['throughput_gain'])}): "
        f'<b style="color:{color}">{v}</b>; {detail}.</p></div>'
    )


def _predictor_table_html(p: dict) -> str:
    window = num(p["window_hours"], 2)
    head = th("run") + th("hours") + th("cost (USD)") + th(f"inside the {window} h window?")
    rows = []
    for name, hours, usd, fits in (
        ("baseline", p["baseline_hours"], p["baseline_cost_usd"], p["baseline_fits_window"]),
        ("candidate", p["candidate_hours"], p["candidate_cost_usd"], p["candidate_fits_window"]),
    ):
        answer = "yes" if fits else f"no, {hours - p['window_hours']:.2f} h late"
        rows.append(
            f'<tr style="{"" if fits else OVER_ROW_STYLE}">{th(name, "row")}<td style="{CELL_STYLE}">{hours:.2f}</td>'
            f'<td style="{CELL_STYLE}">${usd:.2f}</td><td style="{CELL_STYLE}">{answer}</td></tr>'
        )
    savings = p["savings_usd"]
    if math.isclose(savings, 0.0, abs_tol=0.005):
        note = "same cost per run"
    else:
        note = (
            f"the candidate saves ${savings:.2f} per run"
            if savings > 0
            else f"the candidate costs ${-savings:.2f} more per run"
        )
    caption = f"One run at ${p['price_per_hour_usd']:.2f} per accelerator-hour (an assumption): {note}"
    return (
        f'<table style="{TABLE_STYLE}"><caption style="text-align:left">{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _chart_sentence(p: dict) -> str:
    g, s, v = p["throughput_gain"], p["steps_change"], p["verdict"]
    if v == "same cost":
        where = "on the line: same cost"
    else:
        side = "above" if s > g else "below"
        where = f"{side} the line, {abs(s - g) * 100:.0f} percentage points away: {v}"
    return (
        f"Break-even chart: the equal-cost line is steps change = throughput gain, since relative cost = "
        f"(1 + steps change) / (1 + throughput gain) = 1 there; above the line is more expensive, below it "
        f"cheaper. The current point (gain {pct(g)}, steps {pct(s)}) is {where} "
        f"(relative cost {p['relative_cost']:.3f})."
    )


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
        ticks.append(
            f'<line x1="{px(t):.1f}" x2="{px(t):.1f}" y1="{y0:.1f}" y2="{y0 + 4:.1f}" stroke="#000"/>'
            f'<text x="{px(t):.1f}" y="{y0 + 15:.1f}" font-size="10" text-anchor="middle">{pct(t)}</text>'
            f'<line x1="{x0 - 4:.1f}" x2="{x0:.1f}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#000"/>'
            f'<text x="{x0 - 6:.1f}" y="{py(t) + 3:.1f}" font-size="10" text-anchor="end">{pct(t)}</text>'
        )
    g, s = p["throughput_gain"], p["steps_change"]
    sentence = _chart_sentence(p)
    w, h = left + size + right, top + size + bottom
    svg = (
        f'<svg role="img" aria-label="{html.escape(sentence, quote=True)}" width="{w:.0f}" height="{h:.0f}" '
        f'viewBox="0 0 {w:.0f} {h:.0f}" xmlns="http://www.w3.org/2000/svg">'
        f'<polygon points="{x0:.1f},{y0:.1f} {x0:.1f},{y1:.1f} {x1:.1f},{y1:.1f}" fill="{COLORS["dearer"]}"/>'
        f'<polygon points="{x0:.1f},{y0:.1f} {x1:.1f},{y0:.1f} {x1:.1f},{y1:.1f}" fill="{COLORS["cheaper"]}"/>'
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
        f"<title>current: gain {pct(g)}, steps {pct(s)}, relative cost {p['relative_cost']:.3f}</title></circle>"
        f'<text x="{(x0 + x1) / 2:.1f}" y="{h - 4:.1f}" font-size="11" text-anchor="middle">throughput gain</text>'
        f'<text x="12" y="{(y0 + y1) / 2:.1f}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {(y0 + y1) / 2:.1f})">change in steps to target</text></svg>'
    )
    return f'<div>{svg}<p style="margin:2px 0;max-width:40em">{sentence}</p></div>'


def cost_predictor_widget(
    throughput_gain: float = 0.20,
    steps_change: float = 0.25,
    price_per_hour_usd: float = cost.DEFAULT_PRICE_PER_HOUR_USD,
    baseline_hours: float = 8.0,
    window_hours: float = 8.0,
) -> widgets.VBox:
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
            raise InputError(name, f"{name} must be a number in [{CHANGE_MIN}, {CHANGE_MAX}], got {value!r}")
    cost.predict(throughput_gain, steps_change, price_per_hour_usd, baseline_hours, window_hours)  # validates

    gain = _change_slider(throughput_gain, "throughput gain")
    steps = _change_slider(steps_change, "change in steps to target")
    inputs = {
        "price_per_hour_usd": widgets.FloatText(
            value=price_per_hour_usd, description="price per hour (USD)", style=DESCRIPTION_STYLE
        ),
        "baseline_hours": widgets.FloatText(
            value=baseline_hours, description="baseline run (h)", style=DESCRIPTION_STYLE
        ),
        "window_hours": widgets.FloatText(
            value=window_hours, description="nightly window (h)", style=DESCRIPTION_STYLE
        ),
    }
    box = _predictor_box(gain, steps, inputs)
    box.prediction = None
    update = _predictor_update(box)
    for control in (gain, steps, *inputs.values()):
        control.observe(update, names="value")
    update()
    return box


def _change_slider(value: float, description: str) -> widgets.FloatSlider:
    """A slider over a relative change, CHANGE_MIN..CHANGE_MAX in steps of 1%, read out as a percentage."""
    return widgets.FloatSlider(
        value=value,
        min=CHANGE_MIN,
        max=CHANGE_MAX,
        step=0.01,
        description=description,
        readout_format="+.0%",
        continuous_update=True,
        style=DESCRIPTION_STYLE,
        layout=widgets.Layout(width="28em"),
    )


def _predictor_box(
    gain: widgets.FloatSlider, steps: widgets.FloatSlider, inputs: dict[str, widgets.FloatText]
) -> widgets.VBox:
    """Lay out the controls and the three outputs, and expose each part as an attribute with its CSS class."""
    verdict, table, chart = widgets.HTML(), widgets.HTML(), widgets.HTML()
    box = widgets.VBox(
        [
            gain,
            steps,
            widgets.HBox(list(inputs.values()), layout=widgets.Layout(flex_flow="row wrap")),
            verdict,
            table,
            chart,
        ]
    )
    expose(
        box,
        "gpucost-predictor",
        inputs,
        gain=("gain", gain),
        steps=("steps", steps),
        verdict=("verdict", verdict),
        table=("table", table),
        chart=("chart", chart),
    )
    return box


def _predictor_update(box: widgets.VBox) -> Callable[..., None]:
    """The callback every control calls: predict from the controls and redraw, or show why an input is invalid."""

    def update(_change=None) -> None:
        try:
            p = _prediction_from_inputs(box.gain.value, box.steps.value, box.inputs)
        except ValueError as err:
            box.prediction = None
            box.verdict.value, box.table.value, box.chart.value = invalid_input_html(err, "prediction"), "", ""
            return
        box.prediction = p
        box.verdict.value = _predictor_verdict_html(p)
        box.table.value = _predictor_table_html(p)
        box.chart.value = _predictor_chart_html(p)

    return update
