"""Fixes for a global batch that runs out of memory, priced (chapter 04): :func:`plan_fixes` and ``gpucost-lab
fix-oom``.

Every combination of precision (the ledger's own, or a mixed precision with fewer activation bytes), activation
recomputation (none, selective, full) and gradient accumulation is tried at the same global batch; for each
precision and recomputation the fewest accumulation steps that fit are taken (more steps only add overhead).
Every fix that fits is listed with its peak memory, its step-time factor and its cost to target relative to the
baseline step on a device where the global batch had fitted, cheapest first.

The pricing model, stated:

- The global batch is unchanged, so the optimizer steps to the quality target are unchanged: the cost to target
  relative to the baseline is the step-time factor. Accumulation (each microbatch's loss divided by the number of
  microbatches) and recomputation compute the same update up to the order of floating-point sums, so they keep
  quality, except where a layer computes statistics over the batch: BatchNorm follows the microbatch
  (:mod:`gpucost_lab.memory.accumulation` measures both).
- Selective recomputation's saving and extra compute are the ledger's ``selective_saving_fraction`` and
  ``selective_extra_compute``, by default Korthikanti et al.'s figures for GPT-3 175B's attention core: a fix that
  uses it is marked ``assumes_transformer``, to be trusted only for a transformer whose attention holds that share
  of the activations (measured, or given to the ledger).
- A change of precision changes the arithmetic: it is marked ``needs_parity_check``, and priced as if parity held
  (same steps to target) until a parity check (:func:`gpucost_lab.quality.parity.check_parity`) confirms it. Its
  speed is ``mixed_precision_step_time_factor`` (default 1.0: no speed-up is credited until one is measured).
- The step-time factor is accumulation x recomputation x precision (:mod:`gpucost_lab.memory.figures`).
- The nightly run is ``samples_per_night`` samples at ``global_batch / (step_time_s x factor)`` samples per second,
  priced at ``price_per_hour_usd``; the window holds when it finishes within ``window_hours``
  (:func:`gpucost_lab.cost.nightly_window`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pandas as pd

from gpucost_lab._validate import FLOAT_MAX, InputError, integer_at_least, positive, too_large
from gpucost_lab.cost import DEFAULT_PRICE_PER_HOUR_USD, nightly_window
from gpucost_lab.formatting import Table, table
from gpucost_lab.memory.figures import ACTIVATION_BYTES, RECOMPUTE_MODES
from gpucost_lab.memory.ledger import MAX_MICROBATCH, MemoryLedger
from gpucost_lab.precision import PRECISIONS

# The course's case (chapter 04): the team's run at a global batch of 60 (the largest microbatch that fits the
# course ledger is 54), an assumed 0.1 s per optimizer step on a device where 60 fits (600 samples/s), 14.4
# million samples a night in an 8-hour window, at the course's assumed $2.10 per accelerator-hour.
COURSE_GLOBAL_BATCH = 60
COURSE_STEP_TIME_S = 0.1
COURSE_SAMPLES_PER_NIGHT = 14_400_000
COURSE_WINDOW_HOURS = 8.0
# the columns :meth:`FixPlan.shown` shows, the last one made from the flags
SHOWN_COLUMNS = [
    "name",
    "peak_gb",
    "step_time_factor",
    "relative_cost",
    "run_hours",
    "fits_window",
    "run_cost_usd",
    "notes",
]


@dataclass(frozen=True)
class Fix:
    """One way to run the global batch within the budget."""

    name: str  # the changes joined by " + ", or "as is"
    precision: str
    recomputation: str  # "none", "selective" or "full"
    accumulation_steps: int
    microbatch: int  # ceil(global batch / accumulation steps)
    peak_gb: float
    headroom_gb: float
    step_time_factor: float  # accumulation x recomputation x precision, over the baseline step
    relative_cost: float  # cost to target over the baseline's on a device where it fitted
    run_hours: float  # the nightly run
    run_cost_usd: float
    fits_window: bool
    window_margin_hours: float  # window - run hours; negative when late
    needs_parity_check: bool  # changes the arithmetic (precision): confirm quality parity before trusting it
    assumes_transformer: bool  # selective recomputation: its figures are a transformer's attention core's
    redundant: bool  # another listed fix makes a subset of these changes (and fits): this one adds cost, not room

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class FixPlan:
    """The fixes for one global batch, cheapest first, and the baseline they are priced against."""

    global_batch: int
    budget_gb: float
    baseline_peak_gb: float  # the global batch as one microbatch, at the ledger's precision, no recomputation
    baseline_fits: bool
    max_microbatch: int  # the largest microbatch that fits as is
    precision: str  # the baseline's
    step_time_s: float  # the baseline optimizer step, on a device where it fitted
    samples_per_s: float
    price_per_hour_usd: float
    window_hours: float
    samples_per_night: float
    baseline_run_hours: float
    baseline_run_cost_usd: float
    baseline_fits_window: bool
    fixes: tuple[Fix, ...]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["fixes"] = [f.to_dict() for f in self.fixes]
        return d

    def table(self) -> pd.DataFrame:
        """One row per fix, cheapest first, indexed by ``rank`` from 1 as :meth:`text` numbers them."""
        table = pd.DataFrame([f.to_dict() for f in self.fixes], columns=list(Fix.__dataclass_fields__))
        table.index = pd.RangeIndex(1, len(table) + 1, name="rank")
        return table

    def summary(self) -> str:
        """The baseline in three short lines: the global batch against the budget, its speed, its night."""
        return "\n".join(
            [
                f"global batch {self.global_batch}: peak {self.baseline_peak_gb:.2f} GB of a {self.budget_gb:.2f} GB "
                f"budget: {'fits as is' if self.baseline_fits else 'does NOT fit'} (largest microbatch "
                f"{self.max_microbatch})",
                f"baseline {self.step_time_s:.4g} s per step = {self.samples_per_s:,.0f} samples/s",
                f"a night of {self.samples_per_night:,.0f} samples takes {self.baseline_run_hours:.2f} h and costs "
                f"${self.baseline_run_cost_usd:.2f} at ${self.price_per_hour_usd:.2f}/h; the {self.window_hours:g} h "
                f"window {'holds' if self.baseline_fits_window else 'is missed'}",
            ]
        )

    def shown(self) -> Table:
        """The fixes as a chapter shows them (:func:`gpucost_lab.formatting.table`): a row per fix, ranked as
        :meth:`table`, under its column names (``fits_window`` as "in window" or "LATE"), and the notes."""
        data = self.table()[SHOWN_COLUMNS[:-1]].copy()
        data["fits_window"] = ["in window" if fits else "LATE" for fits in data["fits_window"]]
        data["notes"] = [_notes(f) for f in self.fixes]
        caption = f"{len(self.fixes)} fixes that fit, cheapest first" if self.fixes else "no fix fits"
        return table(data, caption=caption)

    def text(self) -> str:
        head = (
            f"global batch {self.global_batch}: peak {self.baseline_peak_gb:.2f} GB of a {self.budget_gb:.2f} GB "
            f"budget -> {'fits as is' if self.baseline_fits else 'does NOT fit'} (largest microbatch "
            f"{self.max_microbatch}); baseline {self.step_time_s:.4g} s/step = {self.samples_per_s:,.0f} samples/s, "
            f"night of {self.samples_per_night:,.0f} samples: {self.baseline_run_hours:.2f} h, "
            f"${self.baseline_run_cost_usd:.2f} at ${self.price_per_hour_usd:.2f}/h, "
            f"{self.window_hours:g} h window {'holds' if self.baseline_fits_window else 'missed'}"
        )
        if not self.fixes:
            return head + "\nno fix fits: static memory alone exceeds the budget in every precision"
        lines = [head, f"{len(self.fixes)} fixes that fit, cheapest first:"]
        width = max(len(f.name) for f in self.fixes)
        for i, f in enumerate(self.fixes, 1):
            notes = _notes(f)
            lines.append(
                f"{i:>2}. {f.name:<{width}}  peak {f.peak_gb:6.2f} GB  step x{f.step_time_factor:.3f}  "
                f"cost x{f.relative_cost:.3f}  {f.run_hours:5.2f} h "
                f"{'in window' if f.fits_window else 'LATE':<9}  ${f.run_cost_usd:.2f}"
                + (f"  ({notes})" if notes else "")
            )
        return "\n".join(lines)


def _notes(f: Fix) -> str:
    """What to know before trusting a fix: a parity check, a transformer's figures, a redundant change."""
    return "; ".join(
        n
        for n, on in (
            ("needs a parity check", f.needs_parity_check),
            ("assumes a transformer", f.assumes_transformer),
            ("redundant", f.redundant),
        )
        if on
    )


def _name(base_precision: str, precision: str, recompute: str, k: int, microbatch: int) -> str:
    changes = [precision] if precision != base_precision else []
    if recompute != "none":
        changes.append(f"{recompute} recomputation")
    if k > 1:
        changes.append(f"accumulation x{k} (microbatch {microbatch})")
    return " + ".join(changes) or "as is"


def _precision_factor(base: str, precision: str, mixed_factor: float) -> float:
    return 1.0 if precision == base or (base != "fp32" and precision != "fp32") else mixed_factor


def _check_finite(factors: list[float], baseline_hours: float, rate: float, samples: float, price: float) -> None:
    """ValueError naming the input when the longest run's hours or cost overflow."""
    longest = max(factors)
    hours = baseline_hours * longest
    if math.isfinite(hours * price):
        return
    given = f"samples_per_s={rate!r} and a step-time factor of {longest:.6g}"
    if not math.isfinite(hours):
        raise too_large("samples_per_night", samples, FLOAT_MAX / longest * rate, given, "the run's hours overflow")
    raise too_large(
        "price_per_hour_usd", price, FLOAT_MAX / hours, f"{hours:.6g} run hours", "the run's cost overflows"
    )


def _baseline_rate(global_batch: int, step_time_s: float | None, samples_per_s: float | None) -> tuple[float, float]:
    """(step time in s, samples per s) of the baseline, from exactly one of the two."""
    b = global_batch
    if (step_time_s is None) == (samples_per_s is None):
        raise InputError(
            "step_time_s",
            f"step_time_s or samples_per_s gives the baseline: give exactly one, got "
            f"step_time_s={step_time_s!r} and samples_per_s={samples_per_s!r}",
        )
    if step_time_s is not None:
        step_s = positive("step_time_s", step_time_s)
        rate = b / step_s
        if not math.isfinite(rate):  # a subnormal step time: samples/s overflows
            raise InputError(
                "step_time_s",
                f"step_time_s must be >= {b / FLOAT_MAX:.6g} with global_batch={b}: below it the samples per second "
                f"overflow, got {step_time_s!r}",
            )
        return step_s, rate
    rate = positive("samples_per_s", samples_per_s)
    step_s = b / rate
    if not math.isfinite(step_s):
        raise InputError(
            "samples_per_s",
            f"samples_per_s must be >= {b / FLOAT_MAX:.6g} with global_batch={b}: below it the step time "
            f"overflows, got {samples_per_s!r}",
        )
    return step_s, rate


@dataclass(frozen=True)
class _Pricing:
    """What every fix of one plan is priced against: the baseline's rate and the nightly run."""

    rate: float  # the baseline's samples per second
    samples_per_night: float
    window_hours: float
    price_per_hour_usd: float
    mixed_precision_step_time_factor: float


def _fix(ledger: MemoryLedger, base: str, global_batch: int, recompute: str, pricing: _Pricing) -> Fix | None:
    """The fix that runs ``global_batch`` on ``ledger`` (in its precision) with ``recompute`` and the fewest
    accumulation steps that fit; None when no number of steps does."""
    k = ledger.smallest_accumulation(global_batch, recompute=recompute)
    if k is None:
        return None
    r = ledger.at_global_batch(global_batch, accumulation_steps=k, recompute=recompute)
    precision = ledger.precision
    factor = r.step_time_factor * _precision_factor(base, precision, pricing.mixed_precision_step_time_factor)
    w = nightly_window(pricing.samples_per_night, pricing.rate / factor, pricing.window_hours)
    return Fix(
        _name(base, precision, recompute, k, r.microbatch),
        precision,
        recompute,
        k,
        r.microbatch,
        r.peak_gb,
        r.headroom_gb,
        factor,
        factor,
        w.run_hours,
        w.run_hours * pricing.price_per_hour_usd,
        w.fits,
        w.margin_hours,
        precision != base,
        recompute == "selective",
        False,
    )


def _ranked(found: list[Fix], base: str) -> tuple[Fix, ...]:
    """The fixes cheapest first, each marked redundant when another makes a subset of its changes."""

    def smaller(g: Fix, f: Fix) -> bool:  # g makes a subset of f's changes
        return (
            g is not f
            and g.precision in (base, f.precision)
            and g.recomputation in ("none", f.recomputation)
            and g.accumulation_steps <= f.accumulation_steps
        )

    fixes = [Fix(**{**f.to_dict(), "redundant": any(smaller(g, f) for g in found)}) for f in found]
    fixes.sort(key=lambda f: (f.relative_cost, f.needs_parity_check, f.name.count("+"), f.peak_gb, f.name))
    return tuple(fixes)


def plan_fixes(
    ledger: MemoryLedger,
    global_batch: int,
    *,
    step_time_s: float | None = None,
    samples_per_s: float | None = None,
    price_per_hour_usd: float = DEFAULT_PRICE_PER_HOUR_USD,
    window_hours: float,
    samples_per_night: float,
    mixed_precision_step_time_factor: float = 1.0,
) -> FixPlan:
    """Every fix that runs ``global_batch`` within ``ledger``'s budget, cheapest first (module doc).

    Give the baseline as ``step_time_s`` (one optimizer step at ``global_batch`` on a device where it fitted) or
    ``samples_per_s``. ``plan_fixes(MemoryLedger(3.2, 0.34), 60, step_time_s=0.1, window_hours=8,
    samples_per_night=14_400_000)`` is the course's case.
    """
    b = integer_at_least("global_batch", global_batch, 1, MAX_MICROBATCH)
    step_s, rate = _baseline_rate(b, step_time_s, samples_per_s)
    positive("price_per_hour_usd", price_per_hour_usd)
    positive("samples_per_night", samples_per_night)
    positive("mixed_precision_step_time_factor", mixed_precision_step_time_factor)
    base = ledger.precision
    baseline = ledger.at(b)
    window = nightly_window(samples_per_night, rate, window_hours)
    pricing = _Pricing(rate, samples_per_night, window_hours, price_per_hour_usd, mixed_precision_step_time_factor)
    cheaper = (p for p in PRECISIONS if p == base or ACTIVATION_BYTES[p] < ACTIVATION_BYTES[base])
    runs = [ledger.with_precision(precision) for precision in cheaper]
    tried = (_fix(run, base, b, mode, pricing) for run in runs for mode in RECOMPUTE_MODES)
    found = [f for f in tried if f is not None]
    _check_finite(
        [1.0] + [f.step_time_factor for f in found], window.run_hours, rate, samples_per_night, price_per_hour_usd
    )
    return FixPlan(
        b,
        baseline.budget_gb,
        baseline.peak_gb,
        baseline.fits,
        baseline.max_microbatch,
        base,
        step_s,
        rate,
        float(price_per_hour_usd),
        window.window_hours,
        float(samples_per_night),
        window.run_hours,
        window.run_hours * price_per_hour_usd,
        window.fits,
        _ranked(found, base),
    )


__all__ = [
    "Fix",
    "FixPlan",
    "plan_fixes",
    "COURSE_GLOBAL_BATCH",
    "COURSE_STEP_TIME_S",
    "COURSE_SAMPLES_PER_NIGHT",
    "COURSE_WINDOW_HOURS",
]
