"""A deterministic simulated training loop for the learner to instrument (chapter 05, "profile to decision", and
the lab "Profile a Training Loop").

:class:`SimulatedTrainingLoop` has the calls of a real loop (``load_batch``, ``forward_backward``, ``evaluate``,
``save_checkpoint``, ``log_metrics``) but no sleeps: each call advances a simulated clock, ``loop.clock``, by its
phase's duration, so ``PhaseTimer(clock=loop.clock)`` times it exactly and a whole night's run takes a fraction
of a second. :func:`run_instrumented` is the instrumented loop chapter 05 shows. The loop hands out no truth of its
own: the lab's expected answers are the grader's (:mod:`gpucost_lab.grading.truth`, from its own copy of the loop).

Where the durations come from: the GPU-timeline simulator, the model chapter 02's traces show, timed as a
synchronized phase timer sees it and scaled so one simulated microsecond becomes a loop millisecond
(:mod:`gpucost_lab.loop.costs` derives them). Phase names are :data:`gpucost_lab.loop.phases.PHASES`.

Every call's duration is its base duration times uniform(0.95, 1.05) (the simulator's CPU_JITTER), the k-th draw
of a ``random.Random`` per phase seeded with ``f"{seed}:{phase}"`` for the k-th call of that phase **in the current
pass** of the loop: the k-th eval of a run lasts the same whatever the other phases did, so a loop with a lever
applied is compared call for call with the loop without it, and a learner who runs the whole loop again (a cell
re-run, or copied and run) replays the same durations. A pass ends after ``steps`` batches; the next
``load_batch`` starts a new one, whose history (and utilization) starts again at 0 s. The clock itself runs on.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from gpucost_lab._validate import InputError, integer_at_least, one_of, positive
from gpucost_lab.cost import DEFAULT_PRICE_PER_HOUR_USD
from gpucost_lab.loop.costs import phase_costs
from gpucost_lab.loop.phases import CHECKPOINT, DATA, EVAL, FORWARD_BACKWARD, LOGGING, PHASES, balance_table
from gpucost_lab.simulate.config import CPU_JITTER, SCENARIOS

JITTER = CPU_JITTER  # each call lasts its base duration x uniform(1 - JITTER, 1 + JITTER)
MAX_STEPS = 1_000_000


@dataclass(frozen=True)
class LoopScenario:
    """A loop's schedule; its per-call durations come from the simulator scenario ``sim_scenario``."""

    name: str
    sim_scenario: str  # a key of gpucost_lab.simulate.write.SCENARIOS
    steps: int
    eval_every: int  # an eval after every k-th step (1-based)
    eval_batches: int  # held-out batches per eval
    checkpoint_every: int  # a checkpoint after every k-th step
    description: str


LOOP_SCENARIOS: dict[str, LoopScenario] = {
    "healthy": LoopScenario(
        "healthy",
        "healthy",
        steps=2000,
        eval_every=250,
        eval_batches=64,
        checkpoint_every=1000,
        description="4 loader workers keep batches ready; the GPU step dominates; eval and checkpoint are rare",
    ),
    "data_stall": LoopScenario(
        "data_stall",
        "dataloader_stall",
        steps=2000,
        eval_every=250,
        eval_batches=64,
        checkpoint_every=1000,
        description="num_workers=0: the main thread decodes every batch while the GPU waits",
    ),
    "eval_checkpoint_heavy": LoopScenario(
        "eval_checkpoint_heavy",
        "eval_checkpoint_heavy",
        steps=2000,
        eval_every=25,
        eval_batches=64,
        checkpoint_every=100,
        description="eval every 25 steps on 64 held-out batches, a blocking checkpoint every 100 steps",
    ),
}

LOOP_LEVERS: dict[str, tuple[str, str]] = {  # name -> (the phase it targets, what it does)
    "eval_less_often": (EVAL, "evaluate every 4x as many steps"),
    "smaller_eval_set": (EVAL, "evaluate on a quarter of the held-out batches: each eval 4x shorter"),
    "async_checkpoint": (
        CHECKPOINT,
        "copy the state to pinned host memory, write it to disk in the background: "
        "the loop blocks only for the copy (~8% of a blocking save)",
    ),
    "checkpoint_less_often": (CHECKPOINT, "checkpoint every 2x as many steps"),
    "more_loader_workers": (
        DATA,
        "4 data-loader workers decode ahead, as in the simulator's healthy scenario "
        "(no change where the loader already keeps up)",
    ),
}


def _cumulative(intervals: np.ndarray):
    """t -> seconds covered by the sorted, disjoint (start, end) rows of ``intervals`` before t."""
    if len(intervals) == 0:
        return lambda t: np.zeros_like(t, dtype=float)
    durations = intervals[:, 1] - intervals[:, 0]
    before = np.concatenate([[0.0], np.cumsum(durations)[:-1]])
    xp = intervals.ravel()
    fp = np.column_stack([before, before + durations]).ravel()
    return lambda t: np.interp(t, xp, fp, left=0.0, right=fp[-1])


class SimulatedTrainingLoop:
    """One scenario's training loop on a simulated clock; deterministic for (scenario, steps, seed, levers).

    ``scenario`` is a name in :data:`LOOP_SCENARIOS` or a :class:`LoopScenario` of its own (the lab's per-learner
    schedules, :mod:`gpucost_lab.course.variants`). ``steps`` defaults to the scenario's. ``levers``
    (names in :data:`LOOP_LEVERS`) are applied at construction;
    :meth:`with_lever` returns a new loop with one more. ``price_per_hour_usd`` (a stated assumption) prices
    :meth:`window_balance`.
    """

    def __init__(
        self,
        scenario: str | LoopScenario = "eval_checkpoint_heavy",
        steps: int | None = None,
        seed: int = 0,
        price_per_hour_usd: float = DEFAULT_PRICE_PER_HOUR_USD,
        levers: tuple[str, ...] = (),
    ):
        if isinstance(scenario, LoopScenario):  # a schedule of its own (a lab's per-learner variant)
            base = scenario
            one_of("scenario.sim_scenario", base.sim_scenario, SCENARIOS)
            for name in ("steps", "eval_every", "eval_batches", "checkpoint_every"):
                integer_at_least(f"scenario.{name}", getattr(base, name), 1)
        else:
            base = LOOP_SCENARIOS[one_of("scenario", scenario, LOOP_SCENARIOS)]
        steps = base.steps if steps is None else integer_at_least("steps", steps, 1)
        if steps > MAX_STEPS:
            raise InputError("steps", f"steps must be an integer in [1, {MAX_STEPS}], got {steps!r}")
        self.scenario, self.steps, self._base = base.name, steps, base
        self.seed = integer_at_least("seed", seed, 0)
        self.price_per_hour_usd = positive("price_per_hour_usd", price_per_hour_usd)
        if isinstance(levers, str):
            levers = (levers,)
        self.levers = tuple(levers)
        for name in self.levers:
            one_of("lever", name, LOOP_LEVERS)
        if len(set(self.levers)) != len(self.levers):
            raise InputError("levers", f"levers must not repeat a lever, got {self.levers!r}")
        on = set(self.levers)
        self.schedule = replace(
            base,
            steps=steps,
            eval_every=base.eval_every * (4 if "eval_less_often" in on else 1),
            eval_batches=max(1, base.eval_batches // (4 if "smaller_eval_set" in on else 1)),
            checkpoint_every=base.checkpoint_every * (2 if "checkpoint_less_often" in on else 1),
        )
        costs = phase_costs(base.sim_scenario)
        self.costs = costs
        self.per_call_s: dict[str, float] = {  # base duration of one call, levers applied, before jitter
            DATA: min(costs.data_s, costs.data_with_workers_s) if "more_loader_workers" in on else costs.data_s,
            FORWARD_BACKWARD: costs.forward_backward_s,
            EVAL: costs.eval_batch_s * self.schedule.eval_batches,
            CHECKPOINT: costs.checkpoint_s
            * (costs.async_checkpoint_blocking_share if "async_checkpoint" in on else 1.0),
            LOGGING: costs.logging_s,
        }
        self._busy_share = {FORWARD_BACKWARD: costs.forward_backward_busy_share, EVAL: costs.eval_busy_share}
        self._rngs = {phase: random.Random(f"{self.seed}:{phase}") for phase in PHASES}
        self._draws: dict[str, list[float]] = {phase: [] for phase in PHASES}  # the k-th call's factor, drawn once
        self._calls = dict.fromkeys(PHASES, 0)  # calls of each phase in the current pass
        self._now = 0.0
        self._pass_start = 0.0
        self._history: list[tuple[str, float, float]] = []  # times from the current pass's start
        self._busy: list[tuple[str, float, float]] = []

    def __repr__(self) -> str:
        return (
            f"SimulatedTrainingLoop(scenario={self.scenario!r}, steps={self.steps}, seed={self.seed}, "
            f"price_per_hour_usd={self.price_per_hour_usd:g}, levers={self.levers!r})"
        )

    # -- the calls a training loop makes; each advances the clock -----------------------------------------------
    def _factor(self, phase: str) -> float:
        """The jitter of this call: the k-th draw of the phase's own sequence for its k-th call in this pass."""
        if phase == DATA and self._calls[DATA] == self.steps:  # a whole pass is done: this batch starts another
            self._calls = dict.fromkeys(PHASES, 0)
            self._pass_start = self._now
            self._history, self._busy = [], []
        k = self._calls[phase]
        self._calls[phase] += 1
        draws = self._draws[phase]
        while len(draws) <= k:
            draws.append(self._rngs[phase].uniform(1 - JITTER, 1 + JITTER))
        return draws[k]

    def _advance(self, phase: str) -> None:
        factor = self._factor(phase)
        start = self._now
        self._now = start + self.per_call_s[phase] * factor
        origin = self._pass_start
        self._history.append((phase, start - origin, self._now - origin))
        share = self._busy_share.get(phase)
        if share:  # the kernels queue behind the first launches and the call returns when they are done
            self._busy.append((phase, self._now - origin - share * (self._now - start), self._now - origin))

    def load_batch(self) -> None:
        """Wait for the next training batch ("data")."""
        self._advance(DATA)

    def forward_backward(self) -> None:
        """Copy the batch, forward, backward and optimizer step, synchronized ("forward_backward")."""
        self._advance(FORWARD_BACKWARD)

    def evaluate(self) -> None:
        """Forward passes over the held-out batches ("eval")."""
        self._advance(EVAL)

    def save_checkpoint(self) -> None:
        """Save weights and optimizer state ("checkpoint"); blocking unless the async_checkpoint lever is on."""
        self._advance(CHECKPOINT)

    def log_metrics(self) -> None:
        """Read the loss and log it ("logging")."""
        self._advance(LOGGING)

    def clock(self) -> float:
        """Simulated seconds since the loop started: pass it to ``PhaseTimer(clock=loop.clock)``."""
        return self._now

    def _step(self, step: int) -> int:
        step = integer_at_least("step", step, 1)
        if step > self.steps:
            raise InputError("step", f"step must be an integer in [1, {self.steps}] (1-based), got {step!r}")
        return step

    def should_evaluate(self, step: int) -> bool:
        """Whether the loop evaluates after 1-based ``step``: every ``schedule.eval_every`` steps."""
        return self._step(step) % self.schedule.eval_every == 0

    def should_checkpoint(self, step: int) -> bool:
        """Whether the loop saves a checkpoint after 1-based ``step``: every ``schedule.checkpoint_every`` steps."""
        return self._step(step) % self.schedule.checkpoint_every == 0

    # -- what happened -----------------------------------------------------------------------------------------
    @property
    def history(self) -> pd.DataFrame:
        """Every call so far: ``phase, start_s, end_s, duration_s``."""
        frame = pd.DataFrame(self._history, columns=["phase", "start_s", "end_s"]).astype(
            {"start_s": float, "end_s": float}
        )
        frame["duration_s"] = frame["end_s"] - frame["start_s"]
        return frame

    @property
    def device_busy_intervals(self) -> pd.DataFrame:
        """When the simulated GPU ran kernels so far (only inside forward_backward and eval):
        ``phase, start_s, end_s``."""
        return pd.DataFrame(self._busy, columns=["phase", "start_s", "end_s"]).astype(
            {"start_s": float, "end_s": float}
        )

    def utilization(self, bin_s: float) -> pd.DataFrame:
        """GPU utilization (share of the bin with a kernel running) in consecutive bins of ``bin_s`` seconds over
        the current pass so far (the last bin may be shorter), with the phase that took most of each bin (on a tie, the
        first in :data:`PHASES`): ``start_s, end_s, gpu_utilization, phase``."""
        bin_s = positive("bin_s", bin_s)
        total = self._now - self._pass_start  # this pass's
        if not self._history or total <= 0:
            raise ValueError(
                "the loop has not run yet: run it (run_instrumented(loop, timer), or your own loop) "
                "before asking for its utilization",
            )
        n = max(1, math.ceil(total / bin_s))
        edges = np.minimum(np.arange(n + 1, dtype=float) * bin_s, total)
        edges = edges[np.concatenate([[True], np.diff(edges) > 0])]  # no empty last bin
        lo, hi = edges[:-1], edges[1:]

        def covered(rows) -> np.ndarray:
            cum = _cumulative(np.asarray([(s, e) for _, s, e in rows], dtype=float).reshape(-1, 2))
            return cum(hi) - cum(lo)

        busy = covered(self._busy)
        per_phase = np.vstack([covered([r for r in self._history if r[0] == p]) for p in PHASES])
        return pd.DataFrame(
            {
                "start_s": lo,
                "end_s": hi,
                "gpu_utilization": np.clip(busy / (hi - lo), 0.0, 1.0),
                "phase": np.asarray(PHASES)[np.argmax(per_phase, axis=0)],
            }
        )

    def window_balance(self, start_s: float, end_s: float) -> pd.DataFrame:
        """The balance a profile of only ``[start_s, end_s]`` of the run so far would report: each call's time
        inside the window, by phase (:func:`gpucost_lab.loop.phases.balance_table`; ``calls``: calls overlapping it)."""
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start_s, end_s))
        if not numbers or not 0 <= start_s < end_s <= self._now:  # NaN and infinities fail the comparisons
            raise InputError(
                "end_s",
                f"the window must lie inside the run so far, 0 <= start_s < end_s <= {self._now:g} s, "
                f"got start_s={start_s!r}, end_s={end_s!r}",
            )
        seconds, calls = dict.fromkeys(PHASES, 0.0), dict.fromkeys(PHASES, 0)
        for phase, start, end in self._history:
            inside = min(end, end_s) - max(start, start_s)
            if inside > 0:
                seconds[phase] += inside
                calls[phase] += 1
        seen = [p for p in PHASES if calls[p]]
        return balance_table(
            {p: seconds[p] for p in seen}, {p: calls[p] for p in seen}, end_s - start_s, self.price_per_hour_usd
        )

    def with_lever(self, name: str) -> SimulatedTrainingLoop:
        """A new, unrun loop with the same scenario, steps, seed and price, and lever ``name`` added."""
        one_of("lever", name, LOOP_LEVERS)
        if name in self.levers:
            raise InputError("lever", f"lever {name!r} is already applied to this loop (levers={self.levers!r})")
        return SimulatedTrainingLoop(self._base, self.steps, self.seed, self.price_per_hour_usd, self.levers + (name,))


def run_instrumented(loop: SimulatedTrainingLoop, timer):
    """Run ``loop`` from its start with every phase inside ``timer.phase(name)``; returns ``timer``.

    ``timer`` is a :class:`gpucost_lab.loop.phases.PhaseTimer` on the loop's clock, ``PhaseTimer(clock=loop.clock)``;
    its wall time is then the loop's whole run. Each step's calls are data, forward_backward, eval and checkpoint when
    due, then logging (chapter 05's loop; the lab's logs before eval and checkpoint).
    """
    if not isinstance(loop, SimulatedTrainingLoop):
        raise InputError("loop", f"loop must be a SimulatedTrainingLoop, got {type(loop).__name__}")
    if loop.clock() != 0.0 or loop.history.shape[0]:
        raise InputError(
            "loop",
            f"loop has already run to {loop.clock():g} s; build a new SimulatedTrainingLoop (or use "
            "loop.with_lever) to run it again",
        )
    for step in range(1, loop.steps + 1):
        with timer.phase(DATA):
            loop.load_batch()
        with timer.phase(FORWARD_BACKWARD):
            loop.forward_backward()
        if loop.should_evaluate(step):
            with timer.phase(EVAL):
                loop.evaluate()
        if loop.should_checkpoint(step):
            with timer.phase(CHECKPOINT):
                loop.save_checkpoint()
        with timer.phase(LOGGING):
            loop.log_metrics()
    return timer


__all__ = [
    "LOOP_LEVERS",
    "LOOP_SCENARIOS",
    "LoopScenario",
    "SimulatedTrainingLoop",
    "run_instrumented",
]
