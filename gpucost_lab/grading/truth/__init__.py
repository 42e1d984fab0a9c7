"""The labs' expected answers, computed by the grader from its own copy of the learner's job (the lab "Profile a
training loop", chapter 05's method).

A lab's hidden tests run in the grader's process (:mod:`gpucost_lab.grading.checks`) and read their truth here, from
``job.loop()`` of the setup cell the grader ran itself with the learner's id, never from an object of the learner's
kernel. A graded kernel cannot import this package: its sandbox mounts an empty, read-only folder over this one
(:func:`gpucost_lab.grading.kernel_command.truth_folder`), so no call a learner's code can make there returns an
expected answer.

The lab's loop runs each step's calls in the order of its table, :data:`LAB_ORDER`: the step's loss is logged right
after the step, then the loop evaluates and checkpoints when due. Chapter 05's ``run_instrumented`` logs last, so its
timer is not the lab's (same totals, another sequence of calls): section 1 asks for the learner's own loop.
"""

from __future__ import annotations

import pandas as pd

from gpucost_lab.loop.phases import CHECKPOINT, DATA, EVAL, FORWARD_BACKWARD, LOGGING, PhaseTimer
from gpucost_lab.loop.simulated import SimulatedTrainingLoop

#: Each step's calls in the lab's loop, in order; eval and checkpoint only when the loop says one is due.
LAB_ORDER = (DATA, FORWARD_BACKWARD, LOGGING, EVAL, CHECKPOINT)


def lab_timer(loop: SimulatedTrainingLoop) -> PhaseTimer:
    """``loop`` (unrun) run as the lab's table says, every call inside its phase of a fresh timer on its clock."""
    timer = PhaseTimer(clock=loop.clock)
    calls = {
        DATA: loop.load_batch,
        FORWARD_BACKWARD: loop.forward_backward,
        LOGGING: loop.log_metrics,
        EVAL: loop.evaluate,
        CHECKPOINT: loop.save_checkpoint,
    }
    due = {EVAL: loop.should_evaluate, CHECKPOINT: loop.should_checkpoint}
    for step in range(1, loop.steps + 1):
        for phase in LAB_ORDER:
            if phase in due and not due[phase](step):
                continue
            with timer.phase(phase):
                calls[phase]()
    return timer


def lab_balance(loop: SimulatedTrainingLoop) -> pd.DataFrame:
    """The true balance of ``loop``'s whole run at its own price: ``phase, seconds, share, calls, cost_usd``."""
    return lab_timer(loop).balance(price_per_hour_usd=loop.price_per_hour_usd)


def lab_wall_s(loop: SimulatedTrainingLoop) -> float:
    """The simulated seconds of ``loop``'s whole run."""
    return lab_timer(loop).wall_s
