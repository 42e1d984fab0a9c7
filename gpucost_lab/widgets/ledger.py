"""The memory ledger of chapter 04 as a live widget (see :mod:`gpucost_lab.widgets`)."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from gpucost_lab._validate import InputError, integer_at_least, non_negative, positive
from gpucost_lab.memory.figures import (
    COURSE_ACTIVATION_GB_PER_SAMPLE,
    COURSE_STATIC_GB,
    DEFAULT_DEVICE_GB,
    DEFAULT_RESERVE_FRACTION,
    check_recompute,
)
from gpucost_lab.memory.ledger import MemoryLedger
from gpucost_lab.precision import PRECISIONS, check_precision
from gpucost_lab.widgets.ledger_markup import ledger_bar_html, ledger_table_html, ledger_verdict_html
from gpucost_lab.widgets.markup import DESCRIPTION_STYLE, expose, invalid_input_html

# The microbatch slider runs from 1 to at least 128; past that, to one above the largest microbatch that fits the
# chosen settings (284 with full recomputation), so its top end always shows the edge and the first step over it.
MICROBATCH_MIN, MICROBATCH_MAX = 1, 128
ACCUMULATION_MIN, ACCUMULATION_MAX = 1, 16
# the recomputation choices as (label, value); "full" is what the activation-checkpointing checkbox used to switch on
RECOMPUTE_CHOICES = (("none", "none"), ("selective", "selective"), ("full (activation checkpointing)", "full"))


def microbatch_slider_max(largest: int) -> int:
    """The slider's top for ``largest``, the largest microbatch that fits: 128, or ``largest + 1`` when that is
    higher."""
    return max(MICROBATCH_MAX, largest + 1)


def _ledger_from_inputs(inputs: dict, blocks: int) -> MemoryLedger:
    """Validate the text inputs under the labels the learner sees, then build the ledger."""
    static_gb = non_negative("static (GB)", inputs["static_gb"].value)
    per_sample_gb = positive("activations per sample (GB)", inputs["activation_gb_per_sample"].value)
    device_gb = positive("device (GB)", inputs["device_gb"].value)
    reserve_percent = non_negative("reserve (%)", inputs["reserve_percent"].value)
    if reserve_percent >= 100:
        raise InputError("reserve (%)", f"reserve (%) must be in [0, 100), got {inputs['reserve_percent'].value!r}")
    return MemoryLedger(
        static_gb=static_gb,
        activation_gb_per_sample=per_sample_gb,
        device_gb=device_gb,
        reserve_fraction=reserve_percent / 100.0,
        blocks=blocks,
    )


def _link_checkpointing(checkpointing: widgets.Checkbox, recompute: widgets.RadioButtons) -> None:
    """Keep the (undisplayed) checkbox and the recomputation choice in step: ticked is "full"."""

    def from_checkbox(change) -> None:
        if change["new"]:
            recompute.value = "full"
        elif recompute.value == "full":
            recompute.value = "none"

    def from_choice(change) -> None:
        checkpointing.value = change["new"] == "full"

    checkpointing.observe(from_checkbox, names="value")
    recompute.observe(from_choice, names="value")


def memory_ledger_widget(
    static_gb: float = COURSE_STATIC_GB,
    activation_gb_per_sample: float = COURSE_ACTIVATION_GB_PER_SAMPLE,
    device_gb: float = DEFAULT_DEVICE_GB,
    reserve_fraction: float = DEFAULT_RESERVE_FRACTION,
    blocks: int = 10,
    microbatch: int = 32,
    *,
    precision: str = "fp32",
    recompute: str = "none",
    accumulation_steps: int = 1,
) -> widgets.VBox:
    """The memory ledger of chapter 04 as a live widget.

    Controls: a microbatch slider; inputs for static memory, activations per sample (in fp32), device memory and
    the reserve (entered in percent: 10 = 10% of the device kept free); the precision (fp32, bf16-mixed or
    fp16-mixed: 16-bit activations, counted as half the bytes per sample, an upper bound); the recomputation
    (none, selective, or full, which is activation checkpointing); and the gradient accumulation steps K (1..16).
    The slider runs from 1 to 128, or to one past the largest microbatch that fits the chosen settings when that
    is more; a change of any control moves that end (the microbatch stays where it was while it is in range, else
    it drops to the new end).

    Outputs: a verdict ("fits" with headroom, or "out of memory at block k" and by how much; the largest
    microbatch that fits; what recomputation saves and costs; the parity check a mixed precision needs; the global
    batch, microbatch x K, with the step-time factor, accumulation x recomputation, and the cost to target it
    means at the same global batch), a stacked bar against the device, and the per-block table (the bar's
    nonvisual twin).

    Bad construction arguments raise ``ValueError`` at once; bad values typed later show a message.
    """
    ledger = MemoryLedger(
        static_gb=static_gb,
        activation_gb_per_sample=activation_gb_per_sample,
        device_gb=device_gb,
        reserve_fraction=reserve_fraction,
        blocks=blocks,
    )  # validates every argument
    blocks = integer_at_least("blocks", blocks, 1)
    precision, recompute = check_precision(precision), check_recompute(recompute)
    accumulation_steps = integer_at_least("accumulation_steps", accumulation_steps, ACCUMULATION_MIN, ACCUMULATION_MAX)
    top = microbatch_slider_max(ledger.with_precision(precision).max_microbatch(recompute=recompute))
    microbatch = _check_microbatch(microbatch, top)

    box = _ledger_box(
        widgets.IntSlider(
            value=microbatch,
            min=MICROBATCH_MIN,
            max=top,
            step=1,
            description="microbatch",
            continuous_update=True,
            style=DESCRIPTION_STYLE,
        ),
        _ledger_inputs(static_gb, activation_gb_per_sample, device_gb, reserve_fraction),
        *_setting_controls(precision, recompute, accumulation_steps),
    )
    box.result = None
    update = _ledger_update(box, blocks)
    for control in (box.slider, box.precision, box.recompute, box.accumulation, *box.inputs.values()):
        control.observe(update, names="value")
    update()
    return box


def _check_microbatch(microbatch: int, top: int) -> int:
    """The starting microbatch, an integer on the slider: 1 to ``top``, its end with these settings."""
    microbatch = integer_at_least("microbatch", microbatch, MICROBATCH_MIN)
    if microbatch > top:
        raise InputError(
            "microbatch",
            f"microbatch must be an integer in [{MICROBATCH_MIN}, {top}] (the slider's range with "
            f"these settings), got {microbatch!r}",
        )
    return microbatch


def _ledger_inputs(
    static_gb: float, activation_gb_per_sample: float, device_gb: float, reserve_fraction: float
) -> dict[str, widgets.FloatText]:
    """The text inputs, by name; the reserve is typed in percent."""
    return {
        "static_gb": widgets.FloatText(value=static_gb, description="static (GB)", style=DESCRIPTION_STYLE),
        "activation_gb_per_sample": widgets.FloatText(
            value=activation_gb_per_sample, description="activations per sample (GB)", style=DESCRIPTION_STYLE
        ),
        "device_gb": widgets.FloatText(value=device_gb, description="device (GB)", style=DESCRIPTION_STYLE),
        "reserve_percent": widgets.FloatText(
            value=round(reserve_fraction * 100, 10), description="reserve (%)", style=DESCRIPTION_STYLE
        ),
    }


def _setting_controls(
    precision: str, recompute: str, accumulation_steps: int
) -> tuple[widgets.RadioButtons, widgets.RadioButtons, widgets.IntSlider, widgets.Checkbox]:
    """The precision and recomputation choices, the accumulation slider, and the undisplayed checkbox linked to
    the recomputation choice."""
    precision_choice = widgets.RadioButtons(
        options=PRECISIONS, value=precision, description="precision", style=DESCRIPTION_STYLE
    )
    recompute_choice = widgets.RadioButtons(
        options=RECOMPUTE_CHOICES, value=recompute, description="recomputation", style=DESCRIPTION_STYLE
    )
    accumulation = widgets.IntSlider(
        value=accumulation_steps,
        min=ACCUMULATION_MIN,
        max=ACCUMULATION_MAX,
        step=1,
        description="accumulation steps (K)",
        continuous_update=True,
        style=DESCRIPTION_STYLE,
        layout=widgets.Layout(width="24em"),
    )
    # not displayed: the checkbox the recomputation choice replaced, kept so `w.checkpointing.value = True` still works
    checkpointing = widgets.Checkbox(value=recompute == "full", description="activation checkpointing", indent=False)
    _link_checkpointing(checkpointing, recompute_choice)
    return precision_choice, recompute_choice, accumulation, checkpointing


def _ledger_box(
    slider: widgets.IntSlider,
    inputs: dict[str, widgets.FloatText],
    precision_choice: widgets.RadioButtons,
    recompute_choice: widgets.RadioButtons,
    accumulation: widgets.IntSlider,
    checkpointing: widgets.Checkbox,
) -> widgets.VBox:
    """Lay out the controls and the three outputs, and expose each part as an attribute with its CSS class."""
    verdict, table, bar = widgets.HTML(), widgets.HTML(), widgets.HTML()
    wrap = widgets.Layout(flex_flow="row wrap")
    box = widgets.VBox(
        [
            slider,
            widgets.HBox(list(inputs.values()), layout=wrap),
            widgets.HBox([precision_choice, recompute_choice, accumulation], layout=wrap),
            verdict,
            bar,
            table,
        ]
    )
    expose(
        box,
        "gpucost-ledger",
        inputs,
        slider=("microbatch", slider),
        precision=("precision", precision_choice),
        recompute=("recompute", recompute_choice),
        accumulation=("accumulation", accumulation),
        checkpointing=("checkpointing", checkpointing),
        verdict=("verdict", verdict),
        table=("table", table),
        bar=("bar", bar),
    )
    return box


def _ledger_update(box: widgets.VBox, blocks: int) -> Callable[..., None]:
    """The callback every control calls: rebuild the ledger from the controls, move the slider's end, redraw."""
    moving_the_end = [False]  # the slider's value clipped by a new end calls update; that call has nothing to do
    slider = box.slider

    def update(_change=None) -> None:
        if moving_the_end[0]:
            return
        try:
            base = _ledger_from_inputs(box.inputs, blocks)
            ledger = base.with_precision(box.precision.value)
            mode = box.recompute.value
            top = microbatch_slider_max(ledger.max_microbatch(recompute=mode))
            if slider.max != top:
                moving_the_end[0] = True
                try:
                    slider.max = top  # ipywidgets clips the value to the new end
                finally:
                    moving_the_end[0] = False
            result = ledger.at(slider.value, recompute=mode, accumulation_steps=box.accumulation.value)
        except ValueError as err:
            box.result = None
            box.verdict.value, box.table.value, box.bar.value = invalid_input_html(err, "ledger"), "", ""
            return
        box.result = result
        box.verdict.value = ledger_verdict_html(base, ledger, result)
        box.bar.value = ledger_bar_html(ledger, result)
        box.table.value = ledger_table_html(ledger, result)

    return update
