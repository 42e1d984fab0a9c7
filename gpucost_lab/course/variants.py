"""Per-learner variants of the labs: in a graded class each learner's workload numbers derive from their id.

A lab's setup cell calls :func:`lab_variant`; the numbers it returns (the simulated job's schedule, the price, the
window, the memory reserve, ...) are the learner's own, so answers copied from another learner, or the numbers
from a run of ``solutions/``, are wrong for them while the method still applies. The same id gives the same
numbers everywhere: in the learner's JupyterLab, in ``gpucost-lab self-check`` and when the lab is graded, where
the grader sets the id itself (:data:`LEARNER_ENV` in the sandboxed kernel and in its own checks).

Lab 2's memory plan runs on a **scaled device** (:attr:`PlanLab.device_kb`): the course's MLP needs about 100 kB
where the team's model needs 24 GB, so the device is scaled down with it, sized from the MLP's measured bytes
(:data:`PLAN_MODEL_MEMORY`) so that its batch of 64 does not fit and the largest microbatch is in the tens, the
squeeze the team's model is in on its GPU.

Which id: :data:`LEARNER_ENV` when it is set (an empty value means none), else ``JUPYTERHUB_USER`` (the hub's
user name, which nbgrader's exchange uses as the student id). Without an id the lab is the **self-study** one:
the numbers its text was written with. Each learner's numbers are drawn from a hash of the lab and the id, then
kept only where every question has one clear answer that differs from the self-study answer by more than the
checks' tolerance.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import random
from dataclasses import dataclass
from types import EllipsisType

from gpucost_lab._validate import InputError
from gpucost_lab.cost import DEFAULT_PRICE_PER_HOUR_USD
from gpucost_lab.loop.phases import PhaseTimer
from gpucost_lab.loop.simulated import (
    LOOP_LEVERS,
    LOOP_SCENARIOS,
    LoopScenario,
    SimulatedTrainingLoop,
    run_instrumented,
)
from gpucost_lab.memory.figures import DEFAULT_RESERVE_FRACTION
from gpucost_lab.simulate.config import SCENARIOS, SimConfig

LEARNER_ENV = "GPUCOST_LAB_LEARNER"
LABS = ("profile_training_loop", "optimization_plan")
MAX_LEARNER_CHARS = 200
PRICES_USD = (1.60, 1.85, 2.35, 2.60, 2.95, 3.40)  # per accelerator-hour; never the self-study 2.10
_MIN_SHARE_GAP = 0.02  # a learner's shares differ from the self-study ones by at least this (the checks allow 0.005)
_MIN_PHASE_RATIO = 1.25  # the largest overhead phase takes at least 25% more time than the next
_MIN_WINDOW_MARGIN_H = 0.1  # no lever's improved run ends within 6 minutes of the window
# Lab 2's memory plan. What measure_model_memory reads off ClassificationTask().model() (32 -> 128 -> 8, 5,256
# parameters) training on a batch of 64 with SGD and momentum: weights, gradients and momentum, 4 bytes per
# parameter each (63,072 bytes static), and 640 bytes of activations per sample (the fp32 input, 32 values, and
# the hidden layer, 128 values, saved for backward). tests/course/test_variants.py measures them again.
PLAN_MODEL_MEMORY = dict(
    parameter_bytes=21_024,
    gradient_bytes=21_024,
    optimizer_state_bytes=21_024,
    activation_bytes=64 * 640,
    batch_size=64,
)
# Each learner's scaled device: whole kB, kept where the largest microbatch is 20 to 31 (so the smallest
# accumulation is 3 or 4 microbatches, never the self-study lab's 2) and the budget is not within 16 bytes of a
# microbatch's peak (one clear answer).
_PLAN_DEVICE_KB = tuple(range(80, 106))  # 80 to 105 kB
_PLAN_MICROBATCH_RANGE = (20, 31)
_PLAN_EDGE_BYTES = 16


def current_learner() -> str | None:
    """The learner's id from the environment (:data:`LEARNER_ENV`, else ``JUPYTERHUB_USER``), or None."""
    if LEARNER_ENV in os.environ:
        value = os.environ[LEARNER_ENV]
    else:
        value = os.environ.get("JUPYTERHUB_USER", "")
    return check_learner(value.strip() or None)


def check_learner(learner: str | None) -> str | None:
    if learner is None:
        return None
    if (
        not isinstance(learner, str)
        or not learner.strip()
        or len(learner) > MAX_LEARNER_CHARS
        or not learner.isprintable()
    ):
        raise InputError(
            "learner",
            f"learner must be a printable id of 1 to {MAX_LEARNER_CHARS} characters, or None for the "
            f"self-study lab, got {learner!r}",
        )
    return learner.strip()


def _rng(lab: str, learner: str) -> random.Random:
    digest = hashlib.sha256(f"gpucost-lab/{lab}/{learner}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _whose(learner: str | None) -> str:
    return f"learner {learner!r}" if learner else "the self-study lab (no learner id)"


@dataclass(frozen=True)
class LoopLab:
    """The numbers of the lab "Profile a training loop"."""

    learner: str | None
    schedule: LoopScenario  # the simulated job's schedule (steps, eval and checkpoint cadence)
    seed: int  # the loop's duration jitter
    price_per_hour_usd: float
    window_hours: float  # the nightly window the job must fit in

    def loop(self) -> SimulatedTrainingLoop:
        """A fresh, unrun loop of this job."""
        return SimulatedTrainingLoop(self.schedule, seed=self.seed, price_per_hour_usd=self.price_per_hour_usd)

    def __str__(self) -> str:
        s = self.schedule
        return (
            f"Your job ({_whose(self.learner)}): {s.steps} steps, eval every {s.eval_every} steps on "
            f"{s.eval_batches} held-out batches, a checkpoint every {s.checkpoint_every} steps; "
            f"${self.price_per_hour_usd:.2f} per accelerator-hour; a {self.window_hours:g}-hour window"
        )


@dataclass(frozen=True)
class PlanLab:
    """The numbers of the lab "Single-GPU optimization plan"."""

    learner: str | None
    stall_config: SimConfig  # the stalled job's simulator knobs (the "dataloader_stall" scenario, its decode time)
    train_seed: int  # model initialisation and batch order of both training runs
    reserve_fraction: float  # the share of the GPU kept free
    price_per_hour_usd: float
    nightly_samples: int
    window_hours: float
    device_kb: int = 100  # the memory plan's scaled device (module doc), in kB (1,000 bytes)

    @property
    def device_gb(self) -> float:
        """The scaled device in GB (1e9 bytes), as :class:`~gpucost_lab.memory.ledger.MemoryLedger` takes it."""
        return self.device_kb / 1e6

    def __str__(self) -> str:
        return (
            f"Your job ({_whose(self.learner)}): decode {self.stall_config.decode_us_per_sample:g} us per sample, "
            f"training seed {self.train_seed}, a {self.device_kb} kB scaled device with "
            f"{self.reserve_fraction:.0%} in reserve, "
            f"${self.price_per_hour_usd:.2f} per accelerator-hour, {self.nightly_samples:,} samples a night "
            f"in a {self.window_hours:g}-hour window"
        )


SELF_STUDY_LOOP = LoopLab(
    None,
    LOOP_SCENARIOS["eval_checkpoint_heavy"],
    seed=0,
    price_per_hour_usd=DEFAULT_PRICE_PER_HOUR_USD,
    window_hours=2.5,
)
SELF_STUDY_PLAN = PlanLab(
    None,
    SCENARIOS["dataloader_stall"],
    train_seed=0,
    reserve_fraction=DEFAULT_RESERVE_FRACTION,
    price_per_hour_usd=DEFAULT_PRICE_PER_HOUR_USD,
    nightly_samples=2_000_000_000,
    window_hours=8.0,
    device_kb=100,
)


def _run(loop) -> tuple[dict, float]:
    """(share of the run by phase, wall hours) of ``loop``'s whole run, timed as chapter 05 times it."""
    timer = run_instrumented(loop, PhaseTimer(clock=loop.clock))
    return {phase: s / timer.wall_s for phase, s in timer.seconds.items()}, timer.wall_s / 3600


@functools.lru_cache(maxsize=1)
def _self_study_shares() -> dict:
    """The self-study job's phase shares (its text's numbers, public)."""
    return _run(SELF_STUDY_LOOP.loop())[0]


def _windows(lab: LoopLab) -> list[float]:
    """The windows (hours) ``lab`` may get: none where its questions would not each have one clear answer far from
    the self-study one. Only whether and where a job is admissible leaves here, never its answers."""
    (shares, wall_h), study = _run(lab.loop()), _self_study_shares()
    small, big = sorted((shares["eval"], shares["checkpoint"]))
    largest = "eval" if shares["eval"] > shares["checkpoint"] else "checkpoint"
    if big < _MIN_PHASE_RATIO * small or big <= _MIN_PHASE_RATIO * max(shares["data"], shares["logging"]):
        return []
    if (
        abs(small + big - study["eval"] - study["checkpoint"]) < _MIN_SHARE_GAP
        or abs(shares[largest] - study[largest]) < _MIN_SHARE_GAP
    ):
        return []
    after = [_run(lab.loop().with_lever(name))[1] for name, (phase, _) in LOOP_LEVERS.items() if phase == largest]
    # quarter hours from 80% of the best improved run to the whole run, away from every improved run's end
    return [
        w / 4
        for w in range(int(min(after) * 3.2), int(wall_h * 4) + 1)
        if all(abs(w / 4 - a) >= _MIN_WINDOW_MARGIN_H for a in after)
    ]


def _loop_lab(learner: str) -> LoopLab:
    rng = _rng("profile_training_loop", learner)
    base = SELF_STUDY_LOOP.schedule
    while True:  # the first admissible draw: deterministic for the id
        schedule = dataclasses.replace(
            base,
            name=f"{base.name}:{learner}",
            eval_every=rng.choice((20, 25, 40, 50)),
            eval_batches=rng.choice((32, 48, 64, 96, 128)),
            checkpoint_every=rng.choice((50, 80, 100, 125, 200, 250)),
        )
        lab = LoopLab(
            learner, schedule, seed=rng.randrange(1, 2**31), price_per_hour_usd=rng.choice(PRICES_USD), window_hours=0.0
        )
        windows = _windows(lab)
        if windows:
            return dataclasses.replace(lab, window_hours=rng.choice(windows))


def plan_ledger(device_kb: int, reserve_fraction: float):
    """The memory ledger of lab 2's MLP (:data:`PLAN_MODEL_MEMORY`) on a ``device_kb`` scaled device, built as the
    lab builds it: one block (recomputation cannot free the one hidden tensor, which the second layer keeps)."""
    from gpucost_lab.memory.from_model import ModelMemory

    return ModelMemory(**PLAN_MODEL_MEMORY).ledger(
        device_gb=device_kb / 1e6, reserve_fraction=reserve_fraction, blocks=1
    )


def _plan_device_fits(device_kb: int, reserve_fraction: float) -> bool:
    """Whether a learner's device gives a largest microbatch in range, clear of the budget's edges."""
    ledger = plan_ledger(device_kb, reserve_fraction)
    m = ledger.max_microbatch()
    low, high = _PLAN_MICROBATCH_RANGE
    edge_gb = _PLAN_EDGE_BYTES / 1e9
    return (
        low <= m <= high
        and ledger.peak_gb(m) <= ledger.budget_gb - edge_gb
        and ledger.peak_gb(m + 1) >= ledger.budget_gb + edge_gb
    )


def _plan_lab(learner: str) -> PlanLab:
    rng = _rng("optimization_plan", learner)
    stall = dataclasses.replace(
        SCENARIOS["dataloader_stall"],
        seed=rng.randrange(1, 2**31),
        decode_us_per_sample=float(rng.choice((55, 65, 95, 110, 125))),
    )
    lab = PlanLab(
        learner,
        stall,
        train_seed=rng.randrange(1, 20),
        reserve_fraction=rng.choice((0.05, 0.08, 0.15, 0.2)),
        price_per_hour_usd=rng.choice(PRICES_USD),
        nightly_samples=rng.choice((1_000_000_000, 1_500_000_000, 3_000_000_000, 4_000_000_000)),
        window_hours=float(rng.choice((4, 6, 10, 12))),
    )
    # drawn last, so the numbers drawn before it are what they were before the scaled device existed
    devices = [kb for kb in _PLAN_DEVICE_KB if _plan_device_fits(kb, lab.reserve_fraction)]
    return dataclasses.replace(lab, device_kb=rng.choice(devices))


def lab_variant(lab: str, learner: str | None | EllipsisType = ...) -> LoopLab | PlanLab:
    """The numbers of ``lab`` (one of :data:`LABS`) for ``learner``: by default the id in the environment
    (:func:`current_learner`); None gives the self-study lab."""
    if lab not in LABS:
        raise InputError("lab", f"lab must be one of {', '.join(map(repr, LABS))}, got {lab!r}")
    learner = current_learner() if learner is ... else check_learner(learner)
    if lab == "profile_training_loop":
        return SELF_STUDY_LOOP if learner is None else _loop_lab(learner)
    return SELF_STUDY_PLAN if learner is None else _plan_lab(learner)


__all__ = [
    "LABS",
    "LEARNER_ENV",
    "LoopLab",
    "PLAN_MODEL_MEMORY",
    "PlanLab",
    "SELF_STUDY_LOOP",
    "SELF_STUDY_PLAN",
    "current_learner",
    "lab_variant",
    "plan_ledger",
]
