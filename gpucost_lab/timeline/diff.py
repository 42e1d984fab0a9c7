"""Before vs after, per step, with a verdict on each line: ``diff(before, after)``.

Every figure is **milliseconds per step**, so traces of different lengths compare. The steps are the host's
``ProfilerStep#N`` annotations (a trace without them is refused). On a CUDA trace the GPU may run steps behind the
host, so its figures follow the work each step launched, not the host's window:

- ``step_time``: the ``ProfilerStep#N`` duration;
- ``busy``: the busy basis of :func:`~gpucost_lab.timeline.busy_idle` (the union of kernels, copies and memsets on
  every stream; on a CPU-only trace the main thread's operators) inside the step's window. A CUDA step's window
  runs from the end of the GPU work launched before it (the first step's: from its host start) to the end of the
  work it launched, so the windows tile the GPU's time; a CPU step's window is the step itself;
- ``idle``: window - busy (on a CPU trace: step time - busy);
- ``phase``: each ``record_function`` label of :func:`~gpucost_lab.timeline.phases`, its time inside the step;
- ``kernel``: each kernel's time launched by the step (its ``cudaLaunchKernel`` inside the step); on a CPU-only
  trace ``cpu_op``: each operator's time inside the step. The ``top`` names by the two sides' means added up.

Each trace's figures per step come from :mod:`gpucost_lab.timeline.step_figures`.

Each side gives **samples** of every figure: one per trace (the trace's mean per step) when it holds two or more
traces, otherwise one per step of its single trace; rounded to the nanosecond, a Kineto trace's finest tick. A side's
value is the geometric mean of its samples and the ratio after / before carries a 95% Student-t interval on the log
scale (:func:`gpucost_lab.stats.ratio_interval`, Welch-Satterthwaite degrees of freedom), so the ratio is exactly
the after value over the before value. Across traces is the interval to trust: it holds run-to-run spread, which
the steps of one trace cannot show.

Lower is better for every line (each is a time per step for the same work). The verdict follows the course's one
decision rule (:func:`gpucost_lab.stats.decide`): "better" when the interval lies wholly below 1, "worse" when
wholly above, "same" when it lies within the equivalence margin of 1 (``margin``, :data:`~gpucost_lab.stats.
EQUIVALENCE_MARGIN`), else "inconclusive", whose reason says about how many more samples per side the observed
spread would need (:func:`~gpucost_lab.stats.rounds_to_decide`). How wide the interval is never decides: it is the
precision of the size. Where the log scale cannot go, the line has no interval and its values are arithmetic means of
the samples: with a single sample on a side (one trace of one step), "inconclusive"; with a 0 ms sample (a phase
or kernel absent from some steps, a step whose GPU never waited), "inconclusive", except that a line at 0 ms in
every sample of one side and above 0 in every sample of the other (a phase removed, a kernel added) is "better"
(ratio 0) or "worse" (no finite ratio).
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gpucost_lab._validate import InputError, greater_than, integer_at_least
from gpucost_lab.stats import EQUIVALENCE_MARGIN, Estimate, RatioVerdict, ratio_interval, rounds_to_decide
from gpucost_lab.timeline.load import Trace, load_trace
from gpucost_lab.timeline.step_figures import per_step

DIFF_VERDICTS = ("better", "worse", "same", "inconclusive")
LABEL_WIDTH = 32  # the text's label column; a longer label stands on its own line above its figures
REASON_WIDTH = 110  # a reason's lines wrap between words at this width
_LABELS = {"step_time": "step time", "busy": "busy", "idle": "idle"}


@dataclass(frozen=True)
class Side:
    """One side of a diff: its traces, each one's step count, and what its samples are ("traces" or "steps")."""

    traces: tuple[str, ...]
    steps: tuple[int, ...]

    @property
    def interval_across(self) -> str:
        return "traces" if len(self.traces) >= 2 else "steps"

    @property
    def n(self) -> int:
        """Samples per figure: the traces, or the single trace's steps."""
        return len(self.traces) if len(self.traces) >= 2 else self.steps[0]

    def to_dict(self) -> dict:
        return {
            "traces": list(self.traces),
            "steps": list(self.steps),
            "interval_across": self.interval_across,
            "n": self.n,
        }


@dataclass(frozen=True)
class DiffLine:
    """One figure before and after, in ms per step; ``ratio`` = after / before with its 95% interval (None when
    there is none), and the verdict ("better", "worse" or "inconclusive"; lower is better)."""

    metric: str  # "step_time", "busy", "idle", "phase", "kernel" or "cpu_op"
    name: str | None  # the phase's or kernel's name; None for step_time, busy and idle
    before_ms: float
    after_ms: float
    ratio: float | None
    ci95_low: float | None
    ci95_high: float | None
    verdict: str
    reason: str
    better_when: str = "lower"

    @property
    def label(self) -> str:
        return _LABELS[self.metric] if self.name is None else f"{self.metric} {self.name}"

    def to_dict(self) -> dict:
        return {
            "metric": self.metric,
            "name": self.name,
            "before_ms": self.before_ms,
            "after_ms": self.after_ms,
            "ratio": self.ratio,
            "ci95_low": self.ci95_low,
            "ci95_high": self.ci95_high,
            "verdict": self.verdict,
            "reason": self.reason,
            "better_when": self.better_when,
        }


@dataclass(frozen=True)
class TraceDiff:
    """The result of :func:`diff`: ``lines`` in order step time, busy, idle, phases, top kernels."""

    device: str
    before: Side
    after: Side
    lines: tuple[DiffLine, ...]
    margin: float = EQUIVALENCE_MARGIN

    def line(self, metric: str, name: str | None = None) -> DiffLine:
        """The line of ``metric`` (and ``name`` for a phase or kernel); KeyError when there is none."""
        for ln in self.lines:
            if ln.metric == metric and ln.name == name:
                return ln
        raise KeyError((metric, name))

    def to_dict(self) -> dict:
        return {
            "device": self.device,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "equivalence_margin": self.margin,
            "lines": [ln.to_dict() for ln in self.lines],
        }

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([ln.to_dict() for ln in self.lines])

    def text(self) -> str:
        """The diff as a table, one row per line, then the reason of each line without an interval. Nothing is cut:
        each trace is on a line of its own, a name too long for the label column stands on its own line above its
        figures, and a reason wraps between words."""
        labels = [_printable(ln.label) for ln in self.lines]
        width = min(max(map(len, labels), default=0), LABEL_WIDTH)
        rows = [
            *_side_lines("before", self.before),
            *_side_lines("after", self.after),
            f"{self.device} traces; ms per step, ratio after / before with its 95% interval; lower is better "
            "for every line",
            f"  {'':<{width}} {'before':>10} {'after':>10} {'ratio':>7} {'95% CI':>17}  verdict",
        ]
        for label, ln in zip(labels, self.lines):
            ci = "-" if ln.ci95_low is None else f"{ln.ci95_low:.3f} to {ln.ci95_high:.3f}"
            ratio = "-" if ln.ratio is None else f"{ln.ratio:7.3f}"
            if len(label) > width:  # on its own line, whole
                rows.append(f"  {label}")
                label = ""
            rows.append(
                f"  {label:<{width}} {ln.before_ms:10.3f} {ln.after_ms:10.3f} {ratio:>7} {ci:>17}  {ln.verdict}"
            )
        notes = [ln for ln in self.lines if ln.ci95_low is None]
        if notes:
            rows.append("without an interval:")
            rows += [
                textwrap.fill(
                    _printable(ln.reason),
                    REASON_WIDTH,
                    initial_indent="  ",
                    subsequent_indent="    ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
                for ln in notes
            ]
        return "\n".join(rows)


def _side_lines(name: str, s: Side) -> list[str]:
    """A side's heading (its traces and what its interval is across), then each trace on a line of its own."""
    head = f"{name:<6} {_count(len(s.traces), 'trace')}; interval across {_count(s.n, s.interval_across[:-1])}:"
    return [head, *(f"  {_printable(path)} ({_count(n, 'step')})" for path, n in zip(s.traces, s.steps))]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _printable(text: str) -> str:
    """Control and other unprintable characters escaped (a name from a trace stays on its line)."""
    return (
        text
        if text.isprintable()
        else "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    )


# ----------------------------------------------------------------------------------------------- comparing
def _samples(per_trace: list[pd.Series]) -> np.ndarray:
    """A side's samples of one figure: each trace's mean per step (two or more traces), else each step's; rounded
    to the nanosecond, a Kineto trace's finest tick, so that equal times compare equal."""
    if len(per_trace) >= 2:
        values = np.array([float(s.mean()) for s in per_trace])
    else:
        values = per_trace[0].to_numpy(float)
    return np.round(values, 6)


def _line(
    metric: str,
    name: str | None,
    before: np.ndarray,
    after: np.ndarray,
    sides: tuple[Side, Side],
    margin: float,
) -> DiffLine:
    """One figure's line: the ratio with its interval on the log scale when each side has two or more samples, all
    above 0; otherwise the sides' arithmetic means and why there is no interval."""
    subject = _LABELS[metric] if name is None else f"{metric} {name}"
    across = f"across {sides[0].interval_across} before, {sides[1].interval_across} after"
    if len(before) >= 2 and len(after) >= 2 and np.all(before > 0) and np.all(after > 0):
        b, a = Estimate.of(before), Estimate.of(after)
        verdict = RatioVerdict(ratio_interval(a, b), subject, "better", "worse", margin)
        low, high = verdict.interval.ci95_low, verdict.interval.ci95_high
        return DiffLine(
            metric,
            name,
            b.geomean,
            a.geomean,
            verdict.ratio,
            low,
            high,
            verdict.verdict,
            f"{verdict.reason} (lower is better; {across}){_more(b, a, verdict, sides)}",
        )
    return _line_without_interval(metric, name, before, after, subject, across)


def _line_without_interval(
    metric: str, name: str | None, before: np.ndarray, after: np.ndarray, subject: str, across: str
) -> DiffLine:
    """The line of a figure the log scale cannot hold (a single sample on a side, or a 0 ms sample): the means of the
    samples, "inconclusive" unless one side is 0 ms in every sample and the other above 0 in every one."""
    b, a = float(np.mean(before)), float(np.mean(after))
    said = f"{subject}: mean per step {b:.3f} ms before, {a:.3f} ms after"
    ratio = a / b if a > 0 and b > 0 else None
    if len(before) < 2 or len(after) < 2:
        which = " and ".join(w for w, x in (("before", before), ("after", after)) if len(x) < 2)
        return DiffLine(
            metric,
            name,
            b,
            a,
            ratio,
            None,
            None,
            "inconclusive",
            f"{said}: {which} {'have' if ' and ' in which else 'has'} a single value (1 trace of 1 "
            "step), too little data for an interval",
        )
    gone, new = np.all(after == 0) and np.all(before > 0), np.all(before == 0) and np.all(after > 0)
    if gone or new:  # an exact 0 over (or under) a positive estimate: the ratio is 0 (infinite) for any value of it
        word, which = ("better", "after") if gone else ("worse", "before")
        zero = 0.0 if gone else None
        return DiffLine(
            metric,
            name,
            b,
            a,
            zero,
            zero,
            zero,
            word,
            f"{said}: 0 ms {which} in every sample and above 0 in every other one: {word} (lower is better; {across})",
        )
    zeros = " and ".join(w for w, x in (("before", before), ("after", after)) if not np.all(x > 0))
    return DiffLine(
        metric,
        name,
        b,
        a,
        ratio,
        None,
        None,
        "inconclusive",
        f"{said}: {zeros} {'have' if ' and ' in zeros else 'has'} 0 ms samples, which the log scale cannot "
        f"hold, so no 95% interval",
    )


def _more(before: Estimate, after: Estimate, verdict: RatioVerdict, sides: tuple[Side, Side]) -> str:
    """For an undecided line: about how many samples per side (traces, or steps of one trace) would decide it."""
    if verdict.verdict != "inconclusive":
        return ""
    n = rounds_to_decide(np.hypot(before.log_std, after.log_std), after.mean_log - before.mean_log, verdict.margin)
    if n is None:
        return ""
    unit = sides[0].interval_across if sides[0].interval_across == sides[1].interval_across else "samples"
    have = min(before.n, after.n)
    return f"; too few {unit} to decide: about {max(n, have + 1)} per side at this spread (now {have})"


def _side(name: str, value) -> list:
    """``value`` (one path or Trace, or several) as a non-empty list."""
    items = [value] if isinstance(value, (str, os.PathLike, Trace)) else value
    try:
        items = list(items)
    except TypeError:
        raise InputError(name, f"{name} must be a trace path or Trace, or a list of them, got {value!r}") from None
    if not items:
        raise InputError(name, f"{name} must hold at least one trace, got none")
    for item in items:
        if not isinstance(item, (str, os.PathLike, Trace)):
            raise InputError(name, f"{name} must hold trace paths or Trace objects, got {item!r}")
    return items


def diff(before, after, *, top: int = 5, margin: float = EQUIVALENCE_MARGIN) -> TraceDiff:
    """Compare the ``after`` traces with the ``before`` traces per step (see the module doc).

    ``before`` and ``after`` are each a path, a :class:`Trace`, or a list of them (the same program's repeated
    runs). ``top``: how many kernels (cpu_ops on CPU-only traces) to list. Raises ValueError naming the file for an
    unreadable trace or one without ``ProfilerStep#N`` steps, and when CPU-only and CUDA traces are mixed.
    """
    top = integer_at_least("top", top, 1)
    margin = greater_than("margin", margin, 0.0)
    given = {"before": _side("before", before), "after": _side("after", after)}  # both checked before any load
    loaded = {which: [t if isinstance(t, Trace) else load_trace(t) for t in items] for which, items in given.items()}
    device = loaded["before"][0].device
    for trace in loaded["before"] + loaded["after"]:
        if trace.device != device:
            raise ValueError(
                f"{trace.path}: a {trace.device} trace, but {loaded['before'][0].path} is a {device} "
                "trace; diff compares traces of one kind"
            )
    figures = {which: [per_step(t) for t in traces] for which, traces in loaded.items()}
    before_side, after_side = (
        Side(tuple(t.path for t in loaded[w]), tuple(len(f[0]) for f in figures[w])) for w in ("before", "after")
    )
    sides = (before_side, after_side)
    lines = [
        _line(
            metric,
            None,
            _samples([f[0][metric] for f in figures["before"]]),
            _samples([f[0][metric] for f in figures["after"]]),
            sides,
            margin,
        )
        for metric in ("step_time", "busy", "idle")
    ]
    kind = "kernel" if device != "cpu" else "cpu_op"
    for key in ("phase", kind):
        per = {w: [f[1][key] for f in figures[w]] for w in ("before", "after")}
        names = set().union(*(t.columns for tables in per.values() for t in tables))
        mean = {n: sum(float(np.mean(_samples([t.get(n, _zeros(t)) for t in per[w]]))) for w in per) for n in names}
        ranked = sorted(names, key=lambda n: (-mean[n], n))
        for n in ranked if key == "phase" else ranked[:top]:
            b, a = (_samples([t.get(n, _zeros(t)) for t in per[w]]) for w in ("before", "after"))
            lines.append(_line(key, n, b, a, sides, margin))
    return TraceDiff(device, sides[0], sides[1], tuple(lines), margin)


def _zeros(table: pd.DataFrame) -> pd.Series:
    return pd.Series(0.0, index=table.index)


__all__ = ["DIFF_VERDICTS", "DiffLine", "Side", "TraceDiff", "diff"]
