"""Price the verified result (chapter 03): cost per useful unit, cost to a quality target, and the
nightly window.

The price per accelerator-hour is an *assumption* you state, not a fact you measured. ``utilization``
is the share of paid accelerator time that runs the measured work (1.0 = every paid second is a
measured second); idle, queued or failed time raises the cost of each useful unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, cast

from gpucost_lab._validate import FLOAT_MAX, InputError, fraction, greater_than, positive, too_large
from gpucost_lab.stats import Estimate, Interval, combine

if TYPE_CHECKING:  # annotations only: measure sits above cost in the layers
    from gpucost_lab.measure.timing import Measurement

SECONDS_PER_HOUR = 3600.0
DEFAULT_PRICE_PER_HOUR_USD = 2.10  # the course's stated assumption


def cost_per_second_usd(price_per_hour_usd: float, utilization: float = 1.0) -> float:
    """What one second of useful work costs when only ``utilization`` of paid time is useful."""
    positive("price_per_hour_usd", price_per_hour_usd)
    fraction("utilization", utilization, include_zero=False, include_one=True)
    return price_per_hour_usd / SECONDS_PER_HOUR / utilization


def cost_per_unit_usd(units_per_s: float, price_per_hour_usd: float, utilization: float = 1.0) -> float:
    """Cost of one counted unit (a sample or a token) at ``units_per_s``."""
    return cost_per_second_usd(price_per_hour_usd, utilization) / positive("units_per_s", units_per_s)


def cost_per_million_tokens_usd(tokens_per_s: float, price_per_hour_usd: float, utilization: float = 1.0) -> float:
    """Cost of 1,000,000 tokens at ``tokens_per_s``."""
    return 1e6 * cost_per_unit_usd(tokens_per_s, price_per_hour_usd, utilization)


def cost_per_step_usd(step_time_s: float, price_per_hour_usd: float, utilization: float = 1.0) -> float:
    """Cost of one training step lasting ``step_time_s``."""
    return positive("step_time_s", step_time_s) * cost_per_second_usd(price_per_hour_usd, utilization)


def cost_to_target_usd(cost_per_step: float, steps_to_target: float) -> float:
    """Cost to reach the quality target: cost per step x steps to target."""
    return positive("cost_per_step_usd", cost_per_step) * positive("steps_to_target", steps_to_target)


def relative_cost(throughput_gain: float, steps_change: float) -> float:
    """Candidate cost over baseline cost at the same price: (1 + steps_change) / (1 + throughput_gain).

    +20% throughput with +25% steps to target: 1.25 / 1.20 = 1.042, about 4% *more* expensive.
    Count both in the same unit: with the batch unchanged, steps and samples to target change alike;
    when the batch changes, pass the change in *samples* to target beside a gain in samples/s.
    """
    gain = greater_than("throughput_gain", throughput_gain, -1.0)
    change = greater_than("steps_change", steps_change, -1.0)
    return (1.0 + change) / (1.0 + gain)


def verdict(relative: float) -> str:
    """ "cheaper", "more expensive", or "same cost" (within 1e-9) for a relative cost."""
    if math.isclose(relative, 1.0, rel_tol=0, abs_tol=1e-9):
        return "same cost"
    return "cheaper" if relative < 1.0 else "more expensive"


def measured_cost_per_unit(measurement: Measurement, price_per_hour_usd: float, utilization: float = 1.0) -> Estimate:
    """Cost per counted unit with its 95% interval across repeats.

    Computed per repeat (that repeat's seconds per unit x price per second), then summarised like every
    measured figure (:class:`~gpucost_lab.stats.Estimate`): the geometric mean, which is exactly the
    price per second / the geometric-mean throughput, so a cost table and a throughput table agree.
    """
    per_s_usd = cost_per_second_usd(price_per_hour_usd, utilization)
    return Estimate.of(t / measurement.units_per_repeat * per_s_usd for t in measurement.repeat_times_s)


def measured_cost_to_target(
    measurement: Measurement,
    steps_to_target: float | Sequence[int],
    price_per_hour_usd: float,
    utilization: float = 1.0,
) -> Interval:
    """Cost to reach the quality target, cost per step x steps to target, with its 95% interval.

    ``steps_to_target`` is one count, or one count per seed: then the spread across seeds is in the
    interval too, as an independent factor (:func:`gpucost_lab.stats.combine`), beside the spread of
    the step time across repeats.
    """
    per_s_usd = cost_per_second_usd(price_per_hour_usd, utilization)
    per_step = Estimate.of(t * per_s_usd for t in measurement.step_time_s.values)
    if isinstance(steps_to_target, (int, float)) and not isinstance(steps_to_target, bool):
        steps: Estimate | float = positive("steps_to_target", steps_to_target)
    else:
        counts = tuple(cast(Sequence[int], steps_to_target))  # a bool is no count: tuple() refuses it
        if not counts or not all(isinstance(c, (int, float)) and not isinstance(c, bool) and c > 0 for c in counts):
            raise InputError(
                "steps_to_target", f"steps_to_target must be a count > 0 or counts > 0, one per seed, got {counts!r}"
            )
        steps = Estimate.of(counts) if len(counts) >= 2 else float(counts[0])
    return combine((per_step, 1), (steps, 1))


@dataclass(frozen=True)
class WindowCheck:
    """Does a run of ``units`` finish inside the nightly window at the measured throughput?"""

    run_hours: float  # at the measured throughput (geometric mean across repeats)
    run_hours_ci95_high: float  # at the low end of the throughput interval
    window_hours: float
    fits: bool  # at the measured throughput
    fits_with_95_confidence: bool  # even at the low end of the interval
    margin_hours: float  # window - run_hours; negative when late

    def to_dict(self) -> dict:
        return asdict(self)


def nightly_window(units: float, units_per_s: float | Estimate, window_hours: float) -> WindowCheck:
    """Check a run of ``units`` (samples or tokens) against a window of ``window_hours``."""
    positive("units", units)
    positive("window_hours", window_hours)
    if isinstance(units_per_s, Estimate):
        mean, low = units_per_s.geomean, units_per_s.ci95_low
    else:
        mean = low = units_per_s
    run_hours = units / positive("units_per_s", mean) / SECONDS_PER_HOUR
    worst_hours = units / low / SECONDS_PER_HOUR
    return WindowCheck(
        run_hours,
        worst_hours,
        window_hours,
        run_hours <= window_hours,
        worst_hours <= window_hours,
        window_hours - run_hours,
    )


def _check_priced(baseline_hours: float, relative: float, price_per_hour_usd: float) -> None:
    """InputError naming the larger of the price and the hours when the candidate's hours or either cost overflow."""
    longest = baseline_hours * max(relative, 1.0)
    if math.isfinite(longest * price_per_hour_usd):
        return
    if math.isfinite(longest) and price_per_hour_usd >= baseline_hours:
        raise too_large(
            "price_per_hour_usd",
            price_per_hour_usd,
            FLOAT_MAX / longest,
            f"baseline_hours={baseline_hours!r} and a relative cost of {relative:.6g}",
            "the cost overflows",
        )
    raise too_large(
        "baseline_hours",
        baseline_hours,
        FLOAT_MAX / max(relative, 1.0) / max(price_per_hour_usd, 1.0),
        f"price_per_hour_usd={price_per_hour_usd!r} and a relative cost of {relative:.6g}",
        "the hours or the cost overflow",
    )


def predict(
    throughput_gain: float,
    steps_change: float,
    price_per_hour_usd: float = DEFAULT_PRICE_PER_HOUR_USD,
    baseline_hours: float | None = None,
    window_hours: float | None = None,
) -> dict:
    """The cost predictor (chapter 03): relative cost and verdict, and the priced run when a baseline
    run length is given (time scales like cost at a fixed price).

    Inputs whose results overflow (a relative cost, hours or dollars beyond the largest float) are refused with an
    InputError naming the input and the largest value it may take."""
    positive("price_per_hour_usd", price_per_hour_usd)
    r = relative_cost(throughput_gain, steps_change)
    if not math.isfinite(r):
        raise too_large(
            "steps_change",
            steps_change,
            FLOAT_MAX * (1.0 + throughput_gain) - 1.0,
            f"throughput_gain={throughput_gain!r}",
            "the relative cost overflows",
        )
    out = {
        "relative_cost": r,
        "verdict": verdict(r),
        "throughput_gain": float(throughput_gain),
        "steps_change": float(steps_change),
        "price_per_hour_usd": float(price_per_hour_usd),
    }
    if baseline_hours is not None:
        positive("baseline_hours", baseline_hours)
        candidate_hours = baseline_hours * r
        _check_priced(baseline_hours, r, price_per_hour_usd)
        out.update(
            baseline_hours=float(baseline_hours),
            candidate_hours=candidate_hours,
            baseline_cost_usd=baseline_hours * price_per_hour_usd,
            candidate_cost_usd=candidate_hours * price_per_hour_usd,
            savings_usd=(baseline_hours - candidate_hours) * price_per_hour_usd,
        )
    if window_hours is not None:
        positive("window_hours", window_hours)
        if baseline_hours is None:
            raise InputError("window_hours", "window_hours needs baseline_hours (the baseline run's length), got None")
        out.update(
            window_hours=float(window_hours),
            baseline_fits_window=baseline_hours <= window_hours,
            candidate_fits_window=baseline_hours * r <= window_hours,
        )
    return out
