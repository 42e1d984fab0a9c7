"""What each call of the simulated training loop costs, derived from the GPU-timeline simulator (chapter 05,
"profile to decision", and the lab "Profile a Training Loop").

Where the durations come from: the GPU-timeline simulator (:mod:`gpucost_lab.simulate.write`), the same model (8 x
Linear(2048, 2048), batch 64, on an A100 80GB) that chapter 02's traces show, timed as a *synchronized* phase
timer sees it (:func:`phase_costs`):

- "data" and "forward_backward" per step: the simulator scenario run with ``item_sync=True`` (a sync after every
  step, as the timer's synchronize is), taken as the difference between a 24-step and a 12-step run divided by
  12, so the data loader's one-off start-up (the first batch decoded while nothing is queued) drops out.
  forward_backward = host-to-device copy + forward + backward + optimizer + the wait for the GPU at the sync.
- "eval" per held-out batch and "checkpoint" per save: the scenario's model run with the simulator's
  eval_checkpoint_heavy schedule (eval every 20 of 80 steps on 16 batches; one checkpoint), the eval and
  checkpoint totals divided by their counts. Eval data is resident on the GPU, as in the simulator.
- "logging": one ``loss.item()`` on a drained stream, the simulator's host costs (op overhead + copy call + sync
  call = 23 us).
- GPU busy (for :meth:`gpucost_lab.loop.simulated.SimulatedTrainingLoop.utilization`): the simulator's kernel time
  inside each phase, as a share of it; the GPU computes only in forward_backward (~81%: the rest is the batch's
  copy and launch lead) and eval (~99.6%); the checkpoint's device-to-host copies use the copy engine, not the
  SMs, so they count as idle, as ``nvidia-smi``'s utilization (time with a kernel running) counts them.

Scaling: every simulated microsecond becomes a millisecond (:data:`TIME_SCALE` = 1000), so a training step takes
~2.1 s and a checkpoint ~3 minutes, the sizes of a nightly run. That is a stated assumption of the exercise, not a
model of a larger job: a model 1000x larger would not load its batches 1000x slower (loading depends on the data
and the loader, not the model), so its balance would differ. What the uniform stretch keeps is each phase's share
of wall time as the simulator measured it for its small model, the quantity the chapter reasons with.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from functools import cache

from gpucost_lab._validate import one_of
from gpucost_lab.simulate.config import (
    CHECKPOINT_STATES,
    MEMCPY_CALL_US,
    OP_OVERHEAD_US,
    PINNED_COPY_BYTES_PER_S,
    SCENARIOS,
    SYNC_CALL_US,
    SimConfig,
)
from gpucost_lab.simulate.write import phase_totals_us, simulate

TIME_SCALE = 1000.0  # loop seconds per simulated second: one simulated microsecond becomes one millisecond
_SHORT_STEPS, _LONG_STEPS = 12, 24  # the two simulator runs whose difference gives one steady-state step
_FORWARD_BACKWARD_PARTS = ("h2d_copy", "forward", "backward", "optimizer", "item_sync")
_EVAL_CHECKPOINT_SCHEDULE = SCENARIOS["eval_checkpoint_heavy"]  # its eval / checkpoint schedule gives their costs


@dataclass(frozen=True)
class PhaseCosts:
    """Base seconds per call of each phase (after TIME_SCALE, before levers and jitter) and the GPU's busy share
    inside the phases where it computes; derived from the simulator by :func:`phase_costs`."""

    sim_scenario: str
    data_s: float  # per step
    data_with_workers_s: float  # per step with the healthy scenario's 4 workers (the more_loader_workers lever)
    forward_backward_s: float  # per step, synchronized
    eval_batch_s: float  # per held-out batch
    checkpoint_s: float  # per blocking save
    logging_s: float  # per step
    forward_backward_busy_share: float  # kernel time / forward_backward time
    eval_busy_share: float  # kernel time / eval time
    async_checkpoint_blocking_share: float  # state bytes at pinned-copy bandwidth / a blocking save


def _scaled(us: float) -> float:
    return us * 1e-6 * TIME_SCALE


@cache
def _totals(config: SimConfig) -> dict[str, float]:
    return phase_totals_us(config)


def _kernel_us(trace: dict, windows: list[tuple[float, float]] | None = None) -> float:
    """Kernel microseconds in ``trace``, all of them or only the parts inside the (sorted, disjoint) windows."""
    kernels = [(e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    if windows is None:
        return sum(end - start for start, end in kernels)
    starts = [w[0] for w in windows]
    total = 0.0
    for start, end in kernels:
        i = bisect.bisect_right(starts, start) - 1
        for w_start, w_end in windows[max(i, 0) : i + 2]:
            total += max(0.0, min(end, w_end) - max(start, w_start))
    return total


def _train_step_us(config: SimConfig) -> tuple[float, float, float]:
    """Steady-state (data, forward_backward, kernel) microseconds of one synchronized training step."""
    return _train_step_us_of(replace(config, steps=1, item_sync=True, eval_every=0, eval_batches=1, checkpoint_every=0))


@cache
def _train_step_us_of(base: SimConfig) -> tuple[float, float, float]:
    short, long = _totals(replace(base, steps=_SHORT_STEPS)), _totals(replace(base, steps=_LONG_STEPS))
    n = _LONG_STEPS - _SHORT_STEPS
    data_us = (long["data"] - short["data"]) / n
    forward_backward_us = sum(long[k] - short[k] for k in _FORWARD_BACKWARD_PARTS) / n
    kernel_us = _kernel_us(simulate(replace(base, steps=_SHORT_STEPS))) / _SHORT_STEPS  # GPU time is not jittered
    return data_us, forward_backward_us, kernel_us


def _eval_checkpoint_us(config: SimConfig) -> tuple[float, float, float, float]:
    """(eval microseconds per held-out batch, checkpoint microseconds per save, eval's kernel share, the
    pinned-copy share of a save) for ``config``'s model, on the simulator's eval_checkpoint_heavy schedule.
    Eval and checkpoint never touch the data loader, so its settings are taken from that scenario too."""
    sched = _EVAL_CHECKPOINT_SCHEDULE
    return _eval_checkpoint_us_of(
        replace(
            config,
            **{
                k: getattr(sched, k)
                for k in (
                    "seed",
                    "steps",
                    "eval_every",
                    "eval_batches",
                    "checkpoint_every",
                    "item_sync",
                    "num_workers",
                    "pin_memory",
                    "decode_us_per_sample",
                )
            },
        )
    )


@cache
def _eval_checkpoint_us_of(heavy: SimConfig) -> tuple[float, float, float, float]:
    totals = _totals(heavy)
    evals, checkpoints = heavy.steps // heavy.eval_every, heavy.steps // heavy.checkpoint_every
    checkpoint_us = totals["checkpoint"] / checkpoints
    trace = simulate(heavy)
    eval_windows = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in trace["traceEvents"]
        if e.get("cat") == "user_annotation" and e["name"] == "eval"
    )
    state_bytes = heavy.layers * (heavy.hidden**2 + heavy.hidden) * 4 * len(CHECKPOINT_STATES)  # fp32 each
    return (
        totals["eval"] / (evals * heavy.eval_batches),
        checkpoint_us,
        _kernel_us(trace, eval_windows) / totals["eval"],
        state_bytes / PINNED_COPY_BYTES_PER_S * 1e6 / checkpoint_us,
    )


@cache
def phase_costs(sim_scenario: str) -> PhaseCosts:
    """Per-call phase durations of a loop built on the simulator scenario ``sim_scenario`` (see the module
    docstring for the derivation). Computed once (well under a second of simulation), then cached."""
    one_of("sim_scenario", sim_scenario, SCENARIOS)
    config = SCENARIOS[sim_scenario]
    data_us, forward_backward_us, kernel_us = _train_step_us(config)
    data_with_workers_us, _, _ = _train_step_us(SCENARIOS["healthy"])
    eval_batch_us, checkpoint_us, eval_busy_share, async_share = _eval_checkpoint_us(config)
    return PhaseCosts(
        sim_scenario=sim_scenario,
        data_s=_scaled(data_us),
        data_with_workers_s=_scaled(data_with_workers_us),
        forward_backward_s=_scaled(forward_backward_us),
        eval_batch_s=_scaled(eval_batch_us),
        checkpoint_s=_scaled(checkpoint_us),
        logging_s=_scaled(OP_OVERHEAD_US + MEMCPY_CALL_US + SYNC_CALL_US),
        forward_backward_busy_share=min(1.0, kernel_us / forward_backward_us),
        eval_busy_share=min(1.0, eval_busy_share),
        async_checkpoint_blocking_share=min(1.0, async_share),
    )


__all__ = ["PhaseCosts", "TIME_SCALE", "phase_costs"]
