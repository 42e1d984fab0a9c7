"""The memory ledger widget's outputs (chapter 04): the verdict text, the per-block table and the stacked bar,
as HTML/SVG strings for :mod:`gpucost_lab.widgets.ledger`.

Each takes the ledger in the chosen precision (``ledger``) and its :class:`~gpucost_lab.memory.result.LedgerResult`
at the slider's microbatch; the verdict also takes the ledger in the learner's inputs (``base``: activations per
sample as typed, in fp32).
"""

from __future__ import annotations

import html
import math

from gpucost_lab.memory.figures import RECOMPUTE_STEP_TIME_FACTOR, accumulation_step_time_factor
from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.memory.result import LedgerResult
from gpucost_lab.widgets.markup import CELL_STYLE, COLORS, OVER_ROW_STYLE, TABLE_STYLE, gb, num, th

# what each recomputation mode is called in a sentence ("largest microbatch that fits with ...")
_RECOMPUTE_NAMES = {"selective": "selective recomputation", "full": "activation checkpointing"}


def _p(text: str) -> str:
    return f"<p style='margin:2px 0'>{text}</p>"


def _row_label(result: LedgerResult, index: int) -> str:
    if result.recompute is not None and index == len(result.blocks):
        return f"recompute block {result.recompute.block}"
    return f"block {result.rows[index].block}"


def _head(ledger: MemoryLedger, result: LedgerResult) -> str:
    budget = (
        f"the {gb(result.budget_gb)} budget ({gb(ledger.device_gb)} device, "
        f"{num(ledger.reserve_fraction * 100, 1)}% reserve)"
    )
    if result.fits:
        return f"<b>fits</b>: peak {gb(result.peak_gb)} of {budget}; headroom {gb(result.headroom_gb)}."
    first = result.first_over_budget
    assert first is not None  # a step that does not fit has a row over the budget
    where = (
        f"while recomputing block {first.block} in backward" if first is result.recompute else f"at block {first.block}"
    )
    head = (
        f"<b>out of memory {where}</b>: {gb(first.total_gb)} resident, "
        f"{gb(first.total_gb - result.budget_gb)} over {budget}."
    )
    if not math.isclose(first.total_gb, result.peak_gb, rel_tol=1e-12, abs_tol=1e-12):
        head += f" The whole step would need {gb(result.peak_gb)}, {gb(result.peak_gb - result.budget_gb)} over."
    return head


def _largest(base: MemoryLedger, ledger: MemoryLedger, result: LedgerResult) -> str:
    if result.max_microbatch == 0:
        return (
            f"largest microbatch that fits: none (static memory alone, {gb(ledger.static_gb)}, "
            f"leaves no room in the budget)."
        )
    settings = [result.precision] if result.precision != base.precision else []
    if result.recomputation != "none":
        settings.append(_RECOMPUTE_NAMES[result.recomputation])
    if not settings:
        return f"largest microbatch that fits: <b>{result.max_microbatch}</b>."
    return (
        f"largest microbatch that fits with {' and '.join(settings)}: <b>{result.max_microbatch}</b> "
        f"({base.max_microbatch()} without)."
    )


def _recompute_line(ledger: MemoryLedger, result: LedgerResult) -> str:
    plain_peak_gb = result.peak_gb + result.checkpointing_saves_gb
    saves = (
        f"saves {gb(result.checkpointing_saves_gb)} at microbatch {result.microbatch}: the peak falls from "
        f"{gb(plain_peak_gb)} to {gb(result.peak_gb)}"
    )
    if result.recomputation == "full":
        return (
            f"activation checkpointing (full recomputation) {saves}. Backward recomputes the forward pass, so each "
            f"step takes 4/3 as long, about {num((RECOMPUTE_STEP_TIME_FACTOR - 1) * 100, 0)}% longer (an "
            f"assumption: a forward pass is about a third of a forward and backward step)."
        )
    extra = result.recompute_step_time_factor - 1.0
    return (
        f"selective recomputation {saves}. Each block drops its attention core's activations "
        f"({num(ledger.selective_saving_fraction * 100, 1)}% of what it saves) and backward recomputes them, "
        f"{num(extra * 100, 1)}% more compute per step (Korthikanti et al. 2022's figures for a GPT-3-sized "
        f"transformer, an assumption here)."
    )


def _precision_line(base: MemoryLedger, ledger: MemoryLedger, result: LedgerResult) -> str:
    scaling = " with a loss scale" if result.precision == "fp16-mixed" else ""
    return (
        f"{result.precision}{scaling} counts activations in 16 bits: "
        f"{gb(ledger.activation_gb_per_sample)} per sample instead of {gb(base.activation_gb_per_sample)} in "
        f"{base.precision}, the most it can save (under autocast, ops kept in float32 and 16-bit weight copies "
        f"keep more: measure it); static memory unchanged, the same bytes per parameter in every precision. "
        f"<b>It changes the arithmetic: confirm quality with a parity check (chapter 03) before trusting it</b>; "
        f"no speed-up is credited here until one is measured."
    )


def _step_line(ledger: MemoryLedger, result: LedgerResult) -> str:
    """The global batch and what one optimizer step costs against the plain run, each factor said once."""
    k, m, b = result.accumulation_steps, result.microbatch, result.global_batch
    split = f"{k} microbatches of {m}, accumulated" if k > 1 else f"one microbatch of {m}"
    batch = f"global batch <b>{b}</b>: {split}"
    if k == 1 and result.recomputation == "none":
        return f"{batch}, no recomputation. This is the plain run that cost to target is measured against."
    parts = []  # (what, its factor, how it comes about)
    if k > 1:
        overhead = ledger.microbatch_overhead_fraction
        each = "the extra microbatch" if k == 2 else f"each of the {k - 1} extra microbatches"
        parts.append(
            (
                "accumulation",
                accumulation_step_time_factor(k, overhead),
                f"{num(overhead)} more for {each}, the measured overhead",
            )
        )
    if result.recomputation != "none":
        parts.append((f"{result.recomputation} recomputation", result.recompute_step_time_factor, ""))
    if len(parts) == 1:
        what, _, how = parts[0]
        why = f"{what}: {how}" if how else what
    else:
        why = " times ".join(f"{what} {num(factor)}" + (f", {how}," if how else "") for what, factor, how in parts)
    one = ledger.max_microbatch()
    if b <= one:
        plain = f"Global batch {b} fits here as one microbatch without recomputation (the largest is {one}): these "
        plain += "settings only add time."
    else:
        plain = f"Global batch {b} does not fit here as one microbatch without recomputation (the largest is {one})."
    return (
        f"{batch}. Each optimizer step takes <b>{num(result.step_time_factor)} times</b> as long as the plain run's "
        f"({why}). Steps to target follow the global batch, so the cost to target rises by the same factor. (The "
        f"plain run is the global batch as one microbatch, without recomputation, on a device where it fits.) {plain}"
    )


def ledger_verdict_html(base: MemoryLedger, ledger: MemoryLedger, result: LedgerResult) -> str:
    """The verdict: fits or where it runs out, the largest microbatch, what recomputation and precision change,
    and the global batch with its step-time factor."""
    lines = [_head(ledger, result), _largest(base, ledger, result)]
    if result.recomputation != "none":
        lines.append(_recompute_line(ledger, result))
    if result.precision != base.precision:
        lines.append(_precision_line(base, ledger, result))
    lines.append(_step_line(ledger, result))
    return f'<div role="status" aria-live="polite">{"".join(_p(x) for x in lines)}</div>'


def _phase(result: LedgerResult, ledger: MemoryLedger, index: int, block: int) -> str:
    if index == len(result.blocks):
        return "backward: recompute (peak)"
    if result.recomputation == "full":
        return f"forward: {block} kept input{'s' if block > 1 else ''}"
    kept = num((1.0 - ledger.selective_saving_fraction) * 100, 1)
    return f"forward: {block} block{'s' if block > 1 else ''}, {kept}% kept each"


def ledger_table_html(ledger: MemoryLedger, result: LedgerResult) -> str:
    """The per-block table: the memory resident after each block (and backward's peak row), the bar's text twin."""
    recomputing = result.recompute is not None
    head = (
        th("block") + th("activations (GB)") + th("resident (GB)") + th("state") + (th("phase") if recomputing else "")
    )
    body = []
    for i, row in enumerate(result.rows):
        style = OVER_ROW_STYLE if row.state != "fits" else ""
        phase = (
            f'<td style="{CELL_STYLE}text-align:left">{_phase(result, ledger, i, row.block)}</td>'
            if recomputing
            else ""
        )
        body.append(
            f'<tr style="{style}">{th(_row_label(result, i), "row")}'
            f'<td style="{CELL_STYLE}">{num(row.activations_gb)}</td><td style="{CELL_STYLE}">{num(row.total_gb)}</td>'
            f'<td style="{CELL_STYLE}">{row.state}</td>{phase}</tr>'
        )
    mode = result.recomputation
    settings = "without activation checkpointing" if mode == "none" else f"with {_RECOMPUTE_NAMES[mode]}"
    if result.precision != "fp32":
        settings = f"{result.precision}, {settings}"
    if result.accumulation_steps > 1:
        settings += (
            f"; one of {result.accumulation_steps} accumulation microbatches, global batch {result.global_batch}"
        )
    caption = f"Memory resident at microbatch {result.microbatch} ({settings}; budget {gb(result.budget_gb)})"
    return (
        f'<table style="{TABLE_STYLE}"><caption style="text-align:left">{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def ledger_bar_html(ledger: MemoryLedger, result: LedgerResult) -> str:
    """The stacked bar against the device: static, peak activations, headroom or the excess, and the reserve."""
    width, height, pad = 560.0, 28.0, 4.0
    static_gb, peak_gb, budget_gb, device_gb = ledger.static_gb, result.peak_gb, result.budget_gb, ledger.device_gb
    scale_gb = max(device_gb, peak_gb)

    def x(value_gb: float) -> float:
        return pad + (width - 2 * pad) * value_gb / scale_gb

    def rect(lo: float, hi: float, color: str, name: str, opacity: float = 1.0) -> str:
        if hi <= lo:
            return ""
        return (
            f'<rect x="{x(lo):.1f}" y="4" width="{x(hi) - x(lo):.1f}" height="{height}" fill="{color}" '
            f'fill-opacity="{opacity}"><title>{name}: {gb(hi - lo)}</title></rect>'
        )

    activations_gb = peak_gb - static_gb
    parts = [
        rect(budget_gb, device_gb, COLORS["reserve"], "reserve"),
        rect(peak_gb, budget_gb, COLORS["headroom"], "headroom"),
        rect(0, static_gb, COLORS["static"], "static"),
        rect(static_gb, peak_gb, COLORS["activations"], "peak activations"),
        rect(budget_gb, peak_gb, COLORS["over"], "over budget", 0.85),
    ]
    lines = (
        f'<line x1="{x(budget_gb):.1f}" x2="{x(budget_gb):.1f}" y1="0" y2="{height + 8}" stroke="#000" '
        f'stroke-dasharray="3,2"><title>budget {gb(budget_gb)}</title></line>'
        f'<line x1="{x(device_gb):.1f}" x2="{x(device_gb):.1f}" y1="0" y2="{height + 8}" stroke="#000" '
        f'stroke-width="2"><title>device {gb(device_gb)}</title></line>'
    )
    if result.fits:
        tail = f"headroom {gb(result.headroom_gb)} · reserve {gb(device_gb - budget_gb)}"
    else:
        tail = f"OVER BUDGET by {gb(peak_gb - budget_gb)}"
    legend = (
        f"static {gb(static_gb)} · peak activations {gb(activations_gb)} · {tail} "
        f"(budget {gb(budget_gb)} dashed, device {gb(device_gb)} solid)"
    )
    label = html.escape(legend, quote=True)
    if not result.fits:
        legend = legend.replace(tail, f"<b style='color:{COLORS['over']}'>{tail}</b>")
    svg = (
        f'<svg role="img" aria-label="{label}" width="{width:.0f}" height="{height + 8:.0f}" '
        f'viewBox="0 0 {width:.0f} {height + 8:.0f}" xmlns="http://www.w3.org/2000/svg">'
        f'<rect x="{pad}" y="4" width="{width - 2 * pad}" height="{height}" fill="#fff" stroke="#999"/>'
        f"{''.join(parts)}{lines}</svg>"
    )
    return f'<div>{svg}<div style="font-size:90%">{legend}</div><div style="font-size:85%">{_swatches()}</div></div>'


def _swatches() -> str:
    """The bar's colour key."""
    return "".join(
        f'<span style="display:inline-block;width:10px;height:10px;background:{COLORS[k]};margin:0 3px 0 10px;'
        f'border:1px solid #999"></span>{name}'
        for k, name in (
            ("static", "static"),
            ("activations", "activations"),
            ("headroom", "headroom"),
            ("reserve", "reserve"),
            ("over", "over budget"),
        )
    )
