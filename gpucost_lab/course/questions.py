"""The chapters' checkpoints by name: what each question compares the learner's answer with, and how to tell it.

A check cell shows only ``checkpoint("02.1", stall_idle_share)``: the truth is computed here, by the question's id,
from the chapter's own objects (the names the chapter defined, read from the namespace the check runs in), so the
expected value's formula is not one copy away from the answer. Three kinds of question:

- ``Exact``: a count, or a seeded, simulated figure a re-run reproduces: compared to the digits the chapter shows.
- ``Measured``: a figure timed on the learner's machine, which a re-run moves: any answer inside the 95% interval
  the chapter prints for it passes (its ends rounded outward to the digits asked), so the number read on the first
  run still passes after a second Run All, and a figure off by a formula, a unit or a side does not. Each names its
  plausible mistakes (``mistakes``: the inverse of a ratio, the wrong unit, the other side), computed from the same
  run: an interval printed before is accepted only where it excludes every one of them (``checkpoints``).
- ``Named``: a text the chapter computed (compared case and spacing ignored).

Choice questions are not here: their keys are salted hashes in ``data/answer_keys.json`` (``checkpoints``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Namespace = Mapping[str, Any]


@dataclass(frozen=True)
class Figure:
    """A numeric question: its label, its truth from the chapter's names, where to read it, the digits asked."""

    label: str
    truth: Callable[[Namespace], Any]
    where: str
    significant: int | None = None
    decimals: int | None = None
    #: What a learner plausibly writes instead, by what went wrong, computed from the chapter's names (Measured).
    mistakes: Mapping[str, Callable[[Namespace], float]] = field(default_factory=dict)


class Exact(Figure):
    """A figure the chapter reproduces exactly on every run: compared to the digits it is displayed with."""


class Measured(Figure):
    """A figure measured on this machine: ``truth`` gives ``(value, ci95_low, ci95_high)`` as the chapter prints it,
    ``mistakes`` what each plausible mistake gives in the same run."""


@dataclass(frozen=True)
class Named:
    """A text the chapter computed, such as the version a registry runs."""

    label: str
    truth: Callable[[Namespace], str]
    where: str


Question = Exact | Measured | Named


def _interval(estimate: Any) -> tuple[float, float, float]:
    """``(value, low, high)`` of a ``stats.Estimate`` or ``stats.Interval``."""
    return float(estimate.value), float(estimate.ci95_low), float(estimate.ci95_high)


def _item_sync_steps(ns: Namespace) -> float:
    from gpucost_lab.simulate.config import SCENARIOS

    return SCENARIOS["item_sync"].steps


def _straggler_wait_ms(ns: Namespace) -> float:
    """02.11: the wait per collective the other rank spends on the straggler of the sampled job (the estimate over
    its steps), from the shipped traces themselves."""
    from gpucost_lab.timeline import example_trace, load_ranks, straggler

    job = load_ranks([example_trace("sampled_rank0_gpu"), example_trace("sampled_rank1_gpu")], workers=1)
    return straggler(job).wait_us.value / 1e3  # type: ignore[union-attr]  # two ranks with collectives: one found


def _idle_share(ns: Namespace) -> float:
    from gpucost_lab.timeline import busy_idle

    split = busy_idle(ns["stall"])
    return split.idle_us / split.span_us


def _row(table: Any, key: str, value: str, column: str) -> float:
    return float(table.set_index(key).loc[value, column])


def _plan_ratio(ns: Namespace) -> tuple[float, float, float]:
    decision = ns["plans"]["batch128-lr-scaled"].decision
    return (decision.cost_ratio, *decision.cost_ratio_ci95)


def _night_share(ns: Namespace, phase: str, run: str = "before") -> float:
    return ns[run].seconds[phase] / ns[run].wall_s


def _course_device(ns: Namespace) -> str:
    from gpucost_lab.measure.device import resolve_device

    return str(resolve_device("auto"))


def _value(truth: Callable[[Namespace], tuple[float, float, float]]) -> Callable[[Namespace], float]:
    """The figure itself of a measured question's ``(value, low, high)``."""
    return lambda ns: truth(ns)[0]


def _ratio_mistakes(
    truth: Callable[[Namespace], tuple[float, float, float]],
    others: Mapping[str, Callable[[Namespace], float]],
    inverted: str = "inverted: baseline over candidate",
) -> dict[str, Callable[[Namespace], float]]:
    """A measured ratio's plausible mistakes: ``inverted`` (its label), as a percentage, and ``others`` by what went
    wrong."""
    value = _value(truth)
    return {inverted: lambda ns: 1.0 / value(ns), "a percentage": lambda ns: 100.0 * value(ns), **others}


def _unit_cost_interval(ns: Namespace) -> tuple[float, float, float]:
    return _interval(ns["comparison"].unit_cost_interval)


def _first_batch_ms(ns: Namespace, setting: str) -> float:
    from gpucost_lab.pipeline.loader import settings_table

    return float(settings_table(ns["settings"]).loc[setting, "first_batch_ms"])


def _restart_first_batch_ms(ns: Namespace) -> tuple[float, float, float]:
    value, low, high = _interval(ns["settings"][1].first_batch_s)
    return 1e3 * value, 1e3 * low, 1e3 * high


def _persistent_ratio(ns: Namespace) -> tuple[float, float, float]:
    return _interval(ns["results"][1].comparison.interval)


def _compile_ratio(ns: Namespace) -> tuple[float, float, float]:
    return _interval(ns["compile_cmp"].interval)


def _p50_ratio(name: str) -> Callable[[Namespace], tuple[float, float, float]]:
    return lambda ns: _interval(ns[name].p50.interval)


def _candidate_p50_ms(name: str) -> Callable[[Namespace], float]:
    def p50(ns: Namespace) -> float:
        from gpucost_lab.serve.percentiles import percentile_of

        return percentile_of(ns[name].candidate_ms, 0.5).value

    return p50


def _p99_interval(ns: Namespace) -> tuple[float, float, float]:
    p99 = ns["poisson"].percentiles()["p99"]
    return p99.value, p99.ci95_low, p99.ci95_high


def _knee_two_instances(ns: Namespace) -> float:
    from gpucost_lab.serve.queueing import knee

    return knee(10.0, 2, 0.9, slo_ms=ns["SLO_MS"], model="M/D/c").rate_per_s


def _noisiest_phase(ns: Namespace) -> str:
    from gpucost_lab.serve.phase_table import noisiest_phase

    return noisiest_phase(ns["per_phase"])


QUESTIONS: dict[str, Question] = {
    "00.1": Named("00.1 course device", _course_device, "the `device` row of the set-up table"),
    "01.2": Exact(
        "01.2 fields named",
        lambda ns: len(ns["contract"].diff(ns["drifted"])),
        "the `ContractMismatch` message printed in section 5",
    ),
    "02.1": Exact(
        "02.1 idle share", _idle_share, "`stall_busy` in section 2 (its idle time over its span)", decimals=2
    ),
    "02.3": Exact(
        "02.3 sync points",
        _item_sync_steps,
        "`sync_points(item_trace)` in section 4, or the `sync_points` column of its comparison",
    ),
    "02.6": Exact(
        "02.6 widest real gap",
        lambda ns: ns["alex_gaps"]["duration_us"].max() / 1e6,
        "the `duration_us` column of `alex_gaps` in section 5 (shown in seconds)",
        decimals=1,
    ),
    "02.7": Exact(
        "02.7 communication share",
        lambda ns: _row(ns["rank0_types"], "kernel_type", "communication", "share"),
        "`rank0_types` in section 5 (the communication row's share)",
        decimals=2,
    ),
    "02.10": Exact(
        "02.10 addmm input shapes",
        lambda ns: int((ns["by_shape"]["name"] == "aten::addmm").sum()),
        "`by_shape` in section 1: the rows named aten::addmm",
    ),
    "02.11": Exact(
        "02.11 wait per collective for the straggler",
        _straggler_wait_ms,
        "the line 'straggler: rank ..., arriving ...; the other rank waits ... ms per collective for it' printed in "
        "section 6",
        decimals=1,
    ),
    "03.1": Measured(
        "03.1 cost-per-sample ratio",
        _unit_cost_interval,
        "the line 'cost per sample, candidate over baseline: ...x (95% interval ...)' printed in section 2",
        decimals=2,
        mistakes=_ratio_mistakes(
            _unit_cost_interval,
            {
                "the step-time ratio, the batch ignored": lambda ns: ns["comparison"].time_ratio,
                "the baseline's dollars per sample": lambda ns: ns["cost_per_sample"]["baseline"].geomean,
                "the throughput gain": lambda ns: ns["gain"],
            },
        ),
    ),
    "03.2": Exact(
        "03.2 samples to target, candidate over baseline",
        lambda ns: ns["samples"]["candidate"] / ns["samples"]["baseline"],
        "the line 'samples to target, candidate over baseline: ...x' printed in section 4",
        decimals=2,
    ),
    "04.1": Exact(
        "04.1 largest microbatch",
        lambda ns: ns["ledger"].max_microbatch(),
        "`ledger` in section 1 (the line it prints)",
    ),
    "04.2": Exact(
        "04.2 first block over budget",
        lambda ns: ns["ledger"].at(100).first_over_budget.block,
        "`ledger` of section 1: `ledger.at(100).table()` lists the running total after each block",
    ),
    "04.3": Exact(
        "04.3 largest microbatch with checkpointing",
        lambda ns: ns["ledger"].max_microbatch(checkpointing=True),
        "the line printed under the widget in section 2",
    ),
    "04.4": Exact(
        "04.4 activation bytes per sample",
        lambda ns: ns["measured"].activation_bytes_per_sample,
        "`measured` in section 4 (the activations-per-sample line it prints)",
        decimals=0,
    ),
    "04.6": Exact(
        "04.6 shortest bf16 forward (us)",
        lambda ns: ns["linear_bf16"].bytes_moved / ns["a10"].memory_bandwidth_bytes_per_s * 1e6,
        "the `min_time_us` column of the `roofline` table in section 5",
        significant=3,
    ),
    "04.7": Exact(
        "04.7 fixes inside the window",
        lambda ns: int(ns["fix_table"]["fits_window"].sum()),
        "section 3's table: count the fixes marked `in window`",
    ),
    "04.9": Exact(
        "04.9 full recomputation step factor",
        lambda ns: _row(ns["fix_table"], "name", "full recomputation", "step_time_factor"),
        "the `step_time_factor` column of section 3's table, on the full recomputation row",
        significant=3,
    ),
    "05.1": Exact(
        "05.1 data share",
        lambda ns: _night_share(ns, "data"),
        "the `share` column of `before_balance` in section 2",
        significant=4,
    ),
    "05.3": Exact(
        "05.3 logging bound",
        lambda ns: _night_share(ns, "logging"),
        "the `share` column of `before_balance` in section 2",
        significant=4,
    ),
    "05.6": Exact(
        "05.6 dollars saved",
        lambda ns: (ns["before"].wall_s - ns["after"].wall_s) * 2.10 / 3600,
        "the wall times of `before` and `after` (section 5 prints the saving)",
        decimals=2,
    ),
    "05.8": Exact(
        "05.8 blamed phase's share of the night",
        lambda ns: _night_share(ns, ns["alarm_window"]["phase"].iloc[0], "after"),
        "the `whole night` column of section 6's table, on the row of the phase the alarm window blames",
        significant=4,
    ),
    "06.1": Exact(
        "06.1 promoted",
        lambda ns: sum(p.decision.action == "promote" for p in ns["plans"].values()),
        "the 'action' column of the table in section 2",
    ),
    "06.3": Measured(
        "06.3 batch128 cost ratio",
        _plan_ratio,
        "the 'cost ratio' and 'ratio 95% CI' columns of the table in section 2 (row batch128-lr-scaled)",
        decimals=2,
        mistakes=_ratio_mistakes(
            _plan_ratio,
            {
                "the step-time ratio, steps to target ignored": lambda ns: (
                    ns["plans"]["batch128-lr-scaled"].comparison.time_ratio
                ),
                "the other candidate's": lambda ns: ns["plans"]["bf16-autocast"].decision.cost_ratio,
            },
        ),
    ),
    "06.4": Named("06.4 in production", lambda ns: ns["registry"].current(), "the registry line printed in section 4"),
    "07.1": Measured(
        "07.1 first batch of an epoch with a restarted worker, ms",
        _restart_first_batch_ms,
        "the workers=1 line printed under the table of section 3 (an epoch's first batch, with its 95% interval)",
        significant=2,
        mistakes={
            "the persistent worker's": lambda ns: _first_batch_ms(ns, "workers=1, persistent"),
            "no workers": lambda ns: _first_batch_ms(ns, "workers=0"),
            "in seconds": lambda ns: _restart_first_batch_ms(ns)[0] / 1e3,
        },
    ),
    "07.2": Measured(
        "07.2 persistent workers' cost ratio",
        _persistent_ratio,
        "the `persistent_workers False -> True` row of `changes` in section 4 (`time_ratio`, `ci95_low`, `ci95_high`)",
        decimals=2,
        mistakes=_ratio_mistakes(
            _persistent_ratio, {"the first change's ratio": lambda ns: ns["results"][0].comparison.time_ratio}
        ),
    ),
    "07.3": Measured(
        "07.3 compiled step-time ratio",
        _compile_ratio,
        "the line 'step time ...x (95% interval ...)' printed in section 5",
        decimals=2,
        mistakes=_ratio_mistakes(
            _compile_ratio,
            {
                "the compiled step's time in microseconds": lambda ns: ns["compile_price"].compiled_step_s * 1e6,
                "the break-even steps": lambda ns: ns["compile_price"].break_even_steps.value,
            },
            inverted="inverted: eager over compiled",
        ),
    ),
    "08.1": Measured(
        "08.1 Poisson p99 with the pause, at 40% of the closed loop's rate",
        _p99_interval,
        "the line 'Poisson arrivals: p99 ...' printed in section 2 (with its 95% interval)",
        significant=2,
        mistakes={
            "the closed loop's p99": lambda ns: ns["closed"].percentiles()["p99"].value,
            "the p50": lambda ns: ns["poisson"].percentiles()["p50"].value,
            "in seconds": lambda ns: _p99_interval(ns)[0] / 1e3,
        },
    ),
    "08.2": Exact(
        "08.2 M/D/c knee for two instances",
        _knee_two_instances,
        "the prediction lines printed at the start of section 3 (M/D/c, 2 instances)",
        significant=3,
    ),
    "08.3": Measured(
        "08.3 the serialization fix's p50 ratio",
        _p50_ratio("fix"),
        "the `p50` row of section 4's table (`ratio`, `ci95_low`, `ci95_high`)",
        decimals=2,
        mistakes=_ratio_mistakes(
            _p50_ratio("fix"),
            {"the fixed p50 in ms, not the ratio": _candidate_p50_ms("fix")},
            inverted="inverted: stalled over fixed",
        ),
    ),
    "08.4": Named("08.4 the noisy phase", _noisiest_phase, "the table of section 5 (a phase's p99 against its p50)"),
    "08.5": Measured(
        "08.5 batching's p50 ratio",
        _p50_ratio("batching"),
        "the `p50` row of section 6's table (`ratio`, `ci95_low`, `ci95_high`)",
        decimals=2,
        mistakes=_ratio_mistakes(
            _p50_ratio("batching"),
            {"the batched p50 in ms, not the ratio": _candidate_p50_ms("batching")},
            inverted="inverted: no batching over batching",
        ),
    ),
    "08.6": Named("08.6 the smaller box", lambda ns: ns["fit"].smallest.name, "the memory line printed in section 7"),
}
