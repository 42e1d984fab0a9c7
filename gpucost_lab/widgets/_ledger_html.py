"""The memory ledger widget's outputs (chapter 04): the verdict text, the per-block table and the stacked bar.

Each takes the ledger in the learner's inputs (``base``: activations per sample as typed, in fp32), the ledger in
the chosen precision (``ledger``) and its :class:`~gpucost_lab.memory.ledger.LedgerResult` at the slider's microbatch.
"""

from __future__ import annotations

import html
import math

from gpucost_lab.memory.figures import RECOMPUTE_STEP_TIME_FACTOR, accumulation_step_time_factor
from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.memory.result import LedgerResult
from gpucost_lab.widgets._html import _CELL, _COLORS, _OVER_ROW, _TABLE_STYLE, _gb, _num, _th

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
        f"the {_gb(result.budget_gb)} budget ({_gb(ledger.device_gb)} device, "
        f"{_num(ledger.reserve_fraction * 100, 1)}% reserve)"
    )
    if result.fits:
        return f"<b>fits</b>: peak {_gb(result.peak_gb)} of {budget}; headroom {_gb(result.headroom_gb)}."
    first = result.first_over_budget
    where = (
        f"while recomputing block {first.block} in backward" if first is result.recompute else f"at block {first.block}"
    )
    head = (
        f"<b>out of memory {where}</b>: {_gb(first.total_gb)} resident, "
        f"{_gb(first.total_gb - result.budget_gb)} over {budget}."
    )
    if not math.isclose(first.total_gb, result.peak_gb, rel_tol=1e-12, abs_tol=1e-12):
        head += f" The whole step would need {_gb(result.peak_gb)}, {_gb(result.peak_gb - result.budget_gb)} over."
    return head


def _largest(base: MemoryLedger, ledger: MemoryLedger, result: LedgerResult) -> str:
    if result.max_microbatch == 0:
        return (
            f"largest microbatch that fits: none (static memory alone, {_gb(ledger.static_gb)}, "
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
        f"saves {_gb(result.checkpointing_saves_gb)} at microbatch {result.microbatch} "
        f"(peak {_gb(plain_peak_gb)} → {_gb(result.peak_gb)})"
    )
    if result.recomputation == "full":
        return (
            f"activation checkpointing (full recomputation) {saves} and costs a recompute of the forward pass: "
            f"step time × 4/3 (≈ {_num((RECOMPUTE_STEP_TIME_FACTOR - 1) * 100, 0)}% longer; assumption: a "
            f"forward is about 1/3 of a forward+backward step)."
        )
    extra = result.recompute_step_time_factor - 1.0
    return (
        f"selective recomputation {saves}: each block drops its attention core's activations "
        f"({_num(ledger.selective_saving_fraction * 100, 1)}% of what it saves) and backward recomputes them, "
        f"for step time × {_num(result.recompute_step_time_factor)} ({_num(extra * 100, 1)}% more compute; "
        f"Korthikanti et al. 2022's figures for a GPT-3-sized transformer, an assumption here)."
    )


def _precision_line(base: MemoryLedger, ledger: MemoryLedger, result: LedgerResult) -> str:
    scaling = " with a loss scale" if result.precision == "fp16-mixed" else ""
    return (
        f"{result.precision}{scaling} counts activations in 16 bits: "
        f"{_gb(ledger.activation_gb_per_sample)} per sample instead of {_gb(base.activation_gb_per_sample)} in "
        f"{base.precision}, the most it can save (under autocast, ops kept in float32 and 16-bit weight copies "
        f"keep more: measure it); static memory unchanged, the same bytes per parameter in every precision. "
        f"<b>It changes the arithmetic: confirm quality with a parity check (chapter 03) before trusting it</b>; "
        f"no speed-up is credited here until one is measured."
    )


def _step_line(ledger: MemoryLedger, result: LedgerResult) -> str:
    k, m, b = result.accumulation_steps, result.microbatch, result.global_batch
    batch = f"global batch <b>{b}</b> (microbatch {m} × {k} accumulation step{'s' if k > 1 else ''})"
    if k == 1 and result.recomputation == "none":
        return (
            f"{batch}; step-time factor ×1: this is the plain run (the global batch as one microbatch, no "
            f"recomputation) that cost to target is measured against."
        )
    f = result.step_time_factor
    parts = []
    if k > 1:
        overhead = ledger.microbatch_overhead_fraction
        parts.append(
            f"accumulation ×{_num(accumulation_step_time_factor(k, overhead))} "
            f"(1 + ({k} − 1) × {_num(overhead)}, the measured overhead per extra microbatch)"
        )
    if result.recomputation != "none":
        parts.append(f"{result.recomputation} recomputation ×{_num(result.recompute_step_time_factor)}")
    one = ledger.max_microbatch()
    if b <= one:
        plain = (
            f"Global batch {b} fits here as one microbatch without recomputation (largest {one}): "
            f"these settings only add time."
        )
    else:
        plain = f"As one microbatch without recomputation, global batch {b} does not fit here (largest {one})."
    return (
        f"{batch}; step-time factor <b>×{_num(f)}</b> = {' × '.join(parts)}: ×{_num(f)} time per optimizer "
        f"step, so <b>×{_num(f)} cost to target</b> at the same global batch (steps to target follow the global "
        f"batch, so against the plain run, the global batch as one microbatch without recomputation on a device "
        f"where it fits, only the time per step changes). {plain}"
    )


def _ledger_verdict_html(base: MemoryLedger, ledger: MemoryLedger, result: LedgerResult) -> str:
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
    kept = _num((1.0 - ledger.selective_saving_fraction) * 100, 1)
    return f"forward: {block} block{'s' if block > 1 else ''}, {kept}% kept each"


def _ledger_table_html(ledger: MemoryLedger, result: LedgerResult) -> str:
    recomputing = result.recompute is not None
    head = (
        _th("block")
        + _th("activations (GB)")
        + _th("resident (GB)")
        + _th("state")
        + (_th("phase") if recomputing else "")
    )
    body = []
    for i, row in enumerate(result.rows):
        style = _OVER_ROW if row.state != "fits" else ""
        phase = f'<td style="{_CELL}text-align:left">{_phase(result, ledger, i, row.block)}</td>' if recomputing else ""
        body.append(
            f'<tr style="{style}">{_th(_row_label(result, i), "row")}'
            f'<td style="{_CELL}">{_num(row.activations_gb)}</td><td style="{_CELL}">{_num(row.total_gb)}</td>'
            f'<td style="{_CELL}">{row.state}</td>{phase}</tr>'
        )
    mode = result.recomputation
    settings = "without activation checkpointing" if mode == "none" else f"with {_RECOMPUTE_NAMES[mode]}"
    if result.precision != "fp32":
        settings = f"{result.precision}, {settings}"
    if result.accumulation_steps > 1:
        settings += (
            f"; one of {result.accumulation_steps} accumulation microbatches, global batch {result.global_batch}"
        )
    caption = f"Memory resident at microbatch {result.microbatch} ({settings}; budget {_gb(result.budget_gb)})"
    return (
        f'<table style="{_TABLE_STYLE}"><caption style="text-align:left">{caption}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _ledger_bar_html(ledger: MemoryLedger, result: LedgerResult) -> str:
    width, height, pad = 560.0, 28.0, 4.0
    static_gb, peak_gb, budget_gb, device_gb = ledger.static_gb, result.peak_gb, result.budget_gb, ledger.device_gb
    scale_gb = max(device_gb, peak_gb)

    def x(gb: float) -> float:
        return pad + (width - 2 * pad) * gb / scale_gb

    def rect(lo: float, hi: float, color: str, name: str, opacity: float = 1.0) -> str:
        if hi <= lo:
            return ""
        return (
            f'<rect x="{x(lo):.1f}" y="4" width="{x(hi) - x(lo):.1f}" height="{height}" fill="{color}" '
            f'fill-opacity="{opacity}"><title>{name}: {_gb(hi - lo)}</title></rect>'
        )

    activations_gb = peak_gb - static_gb
    parts = [
        rect(budget_gb, device_gb, _COLORS["reserve"], "reserve"),
        rect(peak_gb, budget_gb, _COLORS["headroom"], "headroom"),
        rect(0, static_gb, _COLORS["static"], "static"),
        rect(static_gb, peak_gb, _COLORS["activations"], "peak activations"),
        rect(budget_gb, peak_gb, _COLORS["over"], "over budget", 0.85),
    ]
    lines = (
        f'<line x1="{x(budget_gb):.1f}" x2="{x(budget_gb):.1f}" y1="0" y2="{height + 8}" stroke="#000" '
        f'stroke-dasharray="3,2"><title>budget {_gb(budget_gb)}</title></line>'
        f'<line x1="{x(device_gb):.1f}" x2="{x(device_gb):.1f}" y1="0" y2="{height + 8}" stroke="#000" '
        f'stroke-width="2"><title>device {_gb(device_gb)}</title></line>'
    )
    if result.fits:
        tail = f"headroom {_gb(result.headroom_gb)} · reserve {_gb(device_gb - budget_gb)}"
    else:
        tail = f"OVER BUDGET by {_gb(peak_gb - budget_gb)}"
    legend = (
        f"static {_gb(static_gb)} · peak activations {_gb(activations_gb)} · {tail} "
        f"(budget {_gb(budget_gb)} dashed, device {_gb(device_gb)} solid)"
    )
    label = html.escape(legend, quote=True)
    if not result.fits:
        legend = legend.replace(tail, f"<b style='color:{_COLORS['over']}'>{tail}</b>")
    svg = (
        f'<svg role="img" aria-label="{label}" width="{width:.0f}" height="{height + 8:.0f}" '
        f'viewBox="0 0 {width:.0f} {height + 8:.0f}" xmlns="http://www.w3.org/2000/svg">'
        f'<rect x="{pad}" y="4" width="{width - 2 * pad}" height="{height}" fill="#fff" stroke="#999"/>'
        f"{''.join(parts)}{lines}</svg>"
    )
    swatches = "".join(
        f'<span style="display:inline-block;width:10px;height:10px;background:{_COLORS[k]};margin:0 3px 0 10px;'
        f'border:1px solid #999"></span>{name}'
        for k, name in (
            ("static", "static"),
            ("activations", "activations"),
            ("headroom", "headroom"),
            ("reserve", "reserve"),
            ("over", "over budget"),
        )
    )
    return f'<div>{svg}<div style="font-size:90%">{legend}</div><div style="font-size:85%">{swatches}</div></div>'
