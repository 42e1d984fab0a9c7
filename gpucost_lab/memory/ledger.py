"""The simplified training-memory budget (chapter 04): static memory plus resident activations.

GB here means 1e9 bytes. A model's weights, gradients and optimizer state are *static*: they stay
resident for the whole step. Activations saved for backward grow block by block during the forward
pass and peak at the last block, so the step's peak is ``static + activations per sample x microbatch``.
The budget keeps a reserve for the allocator's fragmentation and the framework's workspace.
Build a ledger from a real model with :func:`gpucost_lab.memory.from_model.measure_model_memory`.
What :meth:`MemoryLedger.at` returns, :class:`LedgerResult` and its rows, is in :mod:`gpucost_lab.memory.result`;
the course's example figures are in :mod:`gpucost_lab.memory.figures`; both are importable from here.

Activation checkpointing (``checkpointing=True``): each block keeps only its input for backward
(``checkpoint_keep_fraction`` of the activations the block would otherwise save), and backward
recomputes one block at a time. The peak is reached while recomputing the last block:
``(blocks - 1)`` kept inputs plus one whole block's activations, i.e.
``activations per block x ((blocks - 1) x keep + 1)``. The price is a second forward pass per step
(:data:`gpucost_lab.memory.figures.RECOMPUTE_STEP_TIME_FACTOR`, why 4/3 beside it).

The other knobs, each with its stated figures and sources in :mod:`gpucost_lab.memory.figures`: ``precision``
(``fp32``, ``bf16-mixed``, ``fp16-mixed``; :meth:`MemoryLedger.with_precision` converts the activations, and
:meth:`MemoryLedger.from_parameters` counts static memory from a parameter count and an optimizer), the
recomputation mode (``recompute="none" | "selective" | "full"``; ``checkpointing=True`` is ``"full"``), and
gradient accumulation (``accumulation_steps``: memory follows the microbatch, the global batch is microbatch x
steps, and each optimizer step takes ``1 + (K - 1) x microbatch_overhead_fraction`` of one batch's time).
:func:`plan_fixes` (in :mod:`gpucost_lab.memory.fixes`) lists the fixes for a global batch that does not fit.
With these knobs at their defaults the ledger is the simplified budget above, unchanged.

The whole step (``gradient_gb``, ``backward_working_gb_per_sample``; both 0 by default; measured by
:func:`gpucost_lab.memory.from_model.measure_model_memory` with ``backward_working=True`` and passed by
``ModelMemory.ledger(whole_step=True)``). Two things the simplified budget leaves out, found by measuring the peak
of real steps (``benchmarks/ledger_accuracy.py``, RESULTS.md):

- backward's working memory: while backward runs through a block it holds, besides the saved activations, the
  gradients of that block's activations (for a Linear-ReLU-Linear block, the ReLU's output gradient and its input
  gradient: 1.6 of the block's saved activations). It scales with the microbatch and adds to every peak.
- gradients between steps: ``zero_grad()`` (``set_to_none=True``, torch's default) frees the gradients after each
  optimizer step, and backward allocates them again block by block while it frees the activations. In a step of
  one microbatch the peak is then at backward's first block (all activations, one block's gradients) or its last
  (one block's activations, all gradients), whichever is higher. With accumulation (K > 1) the gradients stay
  resident from the first microbatch's backward on, as static memory counts them: accumulation raises the peak by
  up to the gradients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpucost_lab._validate import FLOAT_MAX, InputError, fraction, integer_at_least, non_negative, positive, too_large
from gpucost_lab.memory.figures import (
    COURSE_ACTIVATION_GB_PER_SAMPLE,
    COURSE_STATIC_GB,
    DEFAULT_DEVICE_GB,
    DEFAULT_RESERVE_FRACTION,
    MICROBATCH_OVERHEAD_FRACTION,
    RECOMPUTE_STEP_TIME_FACTOR,
    SELECTIVE_EXTRA_COMPUTE,
    SELECTIVE_SAVING_FRACTION,
    accumulation_step_time_factor,
    activation_scale,
    check_recompute,
    keep_fraction,
    microbatches,
    recompute_step_time_factor,
    static_memory,
)
from gpucost_lab.memory.result import LedgerBlock, LedgerResult
from gpucost_lab.precision import check_precision

__all__ = [
    "COURSE_ACTIVATION_GB_PER_SAMPLE",
    "COURSE_STATIC_GB",
    "DEFAULT_DEVICE_GB",
    "DEFAULT_RESERVE_FRACTION",
    "MAX_BLOCKS",
    "MAX_BUDGET_PER_SAMPLE",
    "MAX_MICROBATCH",
    "MAX_SELECTIVE_EXTRA_COMPUTE",
    "LedgerBlock",
    "LedgerResult",
    "MemoryLedger",
]

_TOLERANCE_GB = 1e-9  # one byte: absorbs float rounding at the exact budget edge
# The ledger prints a row per block: real models have at most a few hundred blocks (layers), and 1,000 rows are
# already more than anyone reads; 10,000,000 blocks took minutes to build and print.
MAX_BLOCKS = 1000
# Samples in a microbatch: far beyond any real one, and small enough that float arithmetic tells m from m + 1 samples
# (the fit test settles the exact count in a step or two).
MAX_MICROBATCH = 10**12
# Budget and static memory: at most 2**43 times one more sample's memory, where a float resolves a 512th of a sample
# at the budget's edge (with --static-gb 1e30 --device-gb 1e30 a sample was below the rounding: the search never ended).
MAX_BUDGET_PER_SAMPLE = 2.0**43
# Selective recomputation redoes part of what full recomputation does, never more (RECOMPUTE_STEP_TIME_FACTOR).
MAX_SELECTIVE_EXTRA_COMPUTE = RECOMPUTE_STEP_TIME_FACTOR - 1.0


@dataclass(frozen=True)
class MemoryLedger:
    """Training-memory budget of one device (chapter 04).

    ``MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34)`` is the course's example: a 24 GB
    device keeping a 10% reserve has a 21.6 GB budget, and 54 is the largest microbatch that fits.
    """

    static_gb: float  # weights + gradients + optimizer state, resident all step
    activation_gb_per_sample: float  # activations saved for backward, per sample, all blocks together
    device_gb: float = DEFAULT_DEVICE_GB  # device memory
    reserve_fraction: float = DEFAULT_RESERVE_FRACTION  # kept free for fragmentation and workspace, in [0, 1)
    blocks: int = 10  # equal-sized blocks the activations accumulate over
    # with checkpointing: a block's input as a fraction of the activations the block saves, in (0, 1]
    checkpoint_keep_fraction: float = 0.1
    # the precision activation_gb_per_sample is counted in; with_precision converts (figures)
    precision: str = "fp32"
    # selective recomputation: share of the activations saved, in [0, 1), and the extra compute (Korthikanti 2022)
    selective_saving_fraction: float = SELECTIVE_SAVING_FRACTION
    selective_extra_compute: float = SELECTIVE_EXTRA_COMPUTE
    # gradient accumulation: per-microbatch overhead over one batch's step time, in [0, 1) (measured, figures)
    microbatch_overhead_fraction: float = MICROBATCH_OVERHEAD_FRACTION
    # The whole step (both 0 by default: the simplified budget above). gradient_gb: the gradients within static_gb
    # that zero_grad() frees between optimizer steps; backward_working_gb_per_sample: what backward holds besides
    # the saved activations (the gradients of the activations of the block it is in). Module doc "The whole step".
    gradient_gb: float = 0.0
    backward_working_gb_per_sample: float = 0.0

    def __post_init__(self) -> None:
        non_negative("static_gb", self.static_gb)
        positive("activation_gb_per_sample", self.activation_gb_per_sample)
        positive("device_gb", self.device_gb)
        fraction("reserve_fraction", self.reserve_fraction)
        integer_at_least("blocks", self.blocks, 1, MAX_BLOCKS)
        fraction("checkpoint_keep_fraction", self.checkpoint_keep_fraction, include_zero=False, include_one=True)
        check_precision(self.precision)
        fraction("selective_saving_fraction", self.selective_saving_fraction)
        if (
            not 0
            <= non_negative("selective_extra_compute", self.selective_extra_compute)
            <= MAX_SELECTIVE_EXTRA_COMPUTE
        ):
            raise InputError(
                "selective_extra_compute",
                f"selective_extra_compute must be in [0, {MAX_SELECTIVE_EXTRA_COMPUTE:.6g}] (selective recomputation "
                f"redoes part of a forward; full recomputation redoes all of it, 1/3 of a step), got "
                f"{self.selective_extra_compute!r}",
            )
        fraction("microbatch_overhead_fraction", self.microbatch_overhead_fraction)
        non_negative("gradient_gb", self.gradient_gb)
        if self.gradient_gb > self.static_gb:
            raise InputError(
                "gradient_gb",
                f"gradient_gb must be at most static_gb={self.static_gb!r} (the gradients are part of "
                f"static memory), got {self.gradient_gb!r}",
            )
        non_negative("backward_working_gb_per_sample", self.backward_working_gb_per_sample)

    @classmethod
    def from_parameters(
        cls,
        parameters: int,
        activation_gb_per_sample: float,
        *,
        precision: str = "fp32",
        optimizer: str = "adamw",
        **kwargs,
    ) -> MemoryLedger:
        """A ledger whose static memory is counted from ``parameters`` (:func:`~gpucost_lab.memory.figures.
        static_memory`: 16 bytes per parameter with AdamW in every precision); ``activation_gb_per_sample`` is
        counted in ``precision``."""
        static = static_memory(parameters, precision, optimizer)
        return cls(
            static_gb=static.static_gb, activation_gb_per_sample=activation_gb_per_sample, precision=precision, **kwargs
        )

    def with_precision(self, precision: str) -> MemoryLedger:
        """The same run in ``precision``: activations scaled by the bytes per element (2 / 4 from fp32 to a mixed
        precision); static memory unchanged, as the Playbook counts the same bytes per parameter in each."""
        scale = activation_scale(self.precision, precision)
        return replace(self, precision=precision, activation_gb_per_sample=self.activation_gb_per_sample * scale)

    @property
    def budget_gb(self) -> float:
        """Usable memory: device x (1 - reserve)."""
        return self.device_gb * (1.0 - self.reserve_fraction)

    @staticmethod
    def _mode(checkpointing: bool, recompute: str | None) -> str:
        """The recomputation mode: ``recompute`` when given, else "full" with ``checkpointing``, else "none"."""
        if recompute is None:
            return "full" if checkpointing else "none"
        mode = check_recompute(recompute)
        if checkpointing and mode != "full":
            raise InputError(
                "recompute", f"recompute must be 'full' or None with checkpointing=True, got {recompute!r}"
            )
        return mode

    def _keep(self, mode: str) -> float:
        return keep_fraction(mode, self.checkpoint_keep_fraction, self.selective_saving_fraction)

    def _peak_activations_gb(self, microbatch: int, mode: str) -> float:
        if mode == "none":
            return self.activation_gb_per_sample * microbatch
        # one block's activations x ((blocks - 1) blocks' kept share + the block being recomputed)
        blocks_held = (self.blocks - 1) * self._keep(mode) + 1.0
        return self.activation_gb_per_sample * microbatch * blocks_held / self.blocks

    def _branches(self, mode: str, accumulation_steps: int) -> tuple[tuple[float, float], ...]:
        """The peak as ``max(intercept + slope x microbatch)`` over these (intercept, slope) pairs (module doc)."""
        working = self.backward_working_gb_per_sample
        acts = self._peak_activations_gb(1, mode) + working
        if self.gradient_gb == 0 or accumulation_steps > 1:  # gradients resident all step
            return ((self.static_gb, acts),)
        # zero_grad() freed the gradients: backward brings them back block by block while it frees activations,
        # so the peak is at backward's first block (all activations, one block's gradients) or its last (one
        # block's activations, all gradients)
        g = self.gradient_gb
        return (
            (self.static_gb - g + g / self.blocks, acts),
            (self.static_gb, self.activation_gb_per_sample / self.blocks + working),
        )

    def _peak(self, microbatch: int, mode: str, accumulation_steps: int) -> float:
        return max(c + s * microbatch for c, s in self._branches(mode, accumulation_steps))

    def peak_gb(
        self, microbatch: int, checkpointing: bool = False, *, recompute: str | None = None, accumulation_steps: int = 1
    ) -> float:
        """Static memory plus the peak activations at ``microbatch``: every block's activations, or with
        recomputation (``checkpointing`` is ``recompute="full"``) what all blocks but one kept plus one recomputed
        block. ``accumulation_steps`` matters only with ``gradient_gb`` (the whole step, module doc)."""
        mode = self._mode(bool(checkpointing), recompute)
        microbatch = integer_at_least("microbatch", microbatch, 1, MAX_MICROBATCH)
        k = integer_at_least("accumulation_steps", accumulation_steps, 1, MAX_MICROBATCH)
        self._check_finite(microbatch)
        return self._peak(microbatch, mode, k)

    def _check_finite(self, microbatch: int) -> None:
        """InputError naming the input when a row of the ledger at ``microbatch`` would overflow."""
        a, m, static = self.activation_gb_per_sample, microbatch, self.static_gb
        if math.isfinite(a * m * self.blocks) and math.isfinite(static + a * m):  # the rows' largest terms
            return
        given = f"activation_gb_per_sample={a!r}, microbatch={m}, blocks={self.blocks}"
        if static > a * m:
            raise too_large("static_gb", static, FLOAT_MAX - a * m, given, "the peak memory overflows")
        given = f"static_gb={static!r}, microbatch={m}, blocks={self.blocks}"
        raise too_large(
            "activation_gb_per_sample", a, (FLOAT_MAX - static) / m / self.blocks, given, "the peak memory overflows"
        )

    def _check_resolution(self, per_sample_gb: float, static_gb: float) -> None:
        """InputError naming the input when the budget (or static memory) is so much larger than one sample's memory
        that float arithmetic cannot tell a microbatch from the next (:data:`MAX_BUDGET_PER_SAMPLE`)."""
        limit = per_sample_gb * MAX_BUDGET_PER_SAMPLE
        if max(self.budget_gb, static_gb) <= limit:
            return
        beyond = "float arithmetic cannot tell a microbatch from one a sample larger"
        a = self.activation_gb_per_sample
        if static_gb > self.budget_gb:
            raise too_large("static_gb", self.static_gb, limit, f"activation_gb_per_sample={a!r}", beyond)
        raise too_large(
            "device_gb",
            self.device_gb,
            limit / (1.0 - self.reserve_fraction),
            f"activation_gb_per_sample={a!r}, reserve_fraction={self.reserve_fraction!r}",
            beyond,
        )

    def _within_budget(self, total_gb: float) -> bool:
        return total_gb <= self.budget_gb + _TOLERANCE_GB

    def max_microbatch(
        self, checkpointing: bool = False, *, recompute: str | None = None, accumulation_steps: int = 1
    ) -> int:
        """Largest microbatch whose peak fits the budget (0 when even static memory does not fit)."""
        mode = self._mode(bool(checkpointing), recompute)
        k = integer_at_least("accumulation_steps", accumulation_steps, 1, MAX_MICROBATCH)
        branches = self._branches(mode, k)
        if any(self.budget_gb - c < 0 for c, _ in branches):
            return 0
        free_gb, per_sample_gb = min(((self.budget_gb - c, s) for c, s in branches), key=lambda b: b[0] / b[1])
        if free_gb + _TOLERANCE_GB > per_sample_gb * MAX_MICROBATCH:
            a = self.activation_gb_per_sample
            given = (
                f"activation_gb_per_sample={a!r} (or activation_gb_per_sample >= "
                f"{(free_gb + _TOLERANCE_GB) / MAX_MICROBATCH * a / per_sample_gb:.6g} at this device_gb)"
            )
            limit = ((self.budget_gb - free_gb) + per_sample_gb * MAX_MICROBATCH - _TOLERANCE_GB) / (
                1.0 - self.reserve_fraction
            )
            raise too_large(
                "device_gb",
                self.device_gb,
                limit,
                given,
                f"the largest microbatch that fits passes {MAX_MICROBATCH:.0e} samples",
            )
        self._check_resolution(min(s for _, s in branches), max(c for c, _ in branches))
        m = math.floor((free_gb + _TOLERANCE_GB) / per_sample_gb)
        # the division can land a hair either side of an exact edge: settle it with the fit test itself
        while self._within_budget(self._peak(m + 1, mode, k)):
            m += 1
        while m > 0 and not self._within_budget(self._peak(m, mode, k)):
            m -= 1
        return m

    def _row(self, block: int, activations_gb: float, static_gb: float | None = None) -> LedgerBlock:
        total_gb = (self.static_gb if static_gb is None else static_gb) + activations_gb
        return LedgerBlock(block, activations_gb, total_gb, "fits" if self._within_budget(total_gb) else "over budget")

    def at(
        self, microbatch: int, checkpointing: bool = False, *, recompute: str | None = None, accumulation_steps: int = 1
    ) -> LedgerResult:
        """Evaluate the ledger at ``microbatch``: per-block rows, peak, verdict and headroom.

        With recomputation (``checkpointing`` is ``recompute="full"``) the forward rows hold what blocks 1..k
        kept, and the ``recompute`` row is backward's peak: what (blocks - 1) blocks kept + the last block
        recomputed. ``accumulation_steps`` K runs K microbatches per optimizer step: the memory is the
        microbatch's, the global batch microbatch x K, and ``step_time_factor`` includes K's overhead.
        """
        mode = self._mode(bool(checkpointing), recompute)
        k = integer_at_least("accumulation_steps", accumulation_steps, 1, MAX_MICROBATCH)
        peak_gb = self.peak_gb(microbatch, recompute=mode, accumulation_steps=k)
        recompute_factor = recompute_step_time_factor(mode, self.selective_extra_compute)
        # the forward's static memory: without the gradients when zero_grad() freed them (the whole step)
        forward_static_gb = self.static_gb - (self.gradient_gb if k == 1 else 0.0)
        if mode != "none":
            per_block_gb = self.activation_gb_per_sample * microbatch / self.blocks
            kept = [per_block_gb * self._keep(mode) * block for block in range(1, self.blocks + 1)]
        else:
            kept = [
                self.activation_gb_per_sample * microbatch * block / self.blocks for block in range(1, self.blocks + 1)
            ]
        rows = [self._row(block, gb, forward_static_gb) for block, gb in enumerate(kept, start=1)]
        backward_row = self._row(self.blocks, peak_gb - self.static_gb)  # backward's peak, above static memory
        whole_step = bool(self.gradient_gb or self.backward_working_gb_per_sample)
        return LedgerResult(
            microbatch=microbatch,
            budget_gb=self.budget_gb,
            peak_gb=peak_gb,
            fits=self._within_budget(peak_gb),
            headroom_gb=self.budget_gb - peak_gb,
            max_microbatch=self.max_microbatch(recompute=mode, accumulation_steps=k),
            blocks=tuple(rows),
            checkpointing=mode == "full",
            recompute_step_time_factor=recompute_factor,  # 1.0 without recomputation
            recompute=backward_row if mode != "none" else None,
            checkpointing_saves_gb=self.peak_gb(microbatch, accumulation_steps=k) - peak_gb if mode != "none" else 0.0,
            recomputation=mode,
            precision=self.precision,
            accumulation_steps=k,
            global_batch=microbatch * k,
            step_time_factor=accumulation_step_time_factor(k, self.microbatch_overhead_fraction) * recompute_factor,
            backward=backward_row if mode == "none" and whole_step else None,
        )

    def smallest_accumulation(self, global_batch: int, *, recompute: str = "none") -> int | None:
        """The fewest microbatches K whose microbatch, ceil(global_batch / K), fits; None when none does (not
        even a microbatch of 1)."""
        b = integer_at_least("global_batch", global_batch, 1, MAX_MICROBATCH)
        if b <= self.max_microbatch(recompute=recompute):
            return 1
        # several microbatches keep the gradients resident between them (matters only with gradient_gb)
        largest = self.max_microbatch(recompute=recompute, accumulation_steps=2)
        return None if largest == 0 else max(2, math.ceil(b / largest))

    def at_global_batch(
        self, global_batch: int, *, accumulation_steps: int | None = None, recompute: str = "none"
    ) -> LedgerResult:
        """The ledger for ``global_batch`` samples per optimizer step run as ``accumulation_steps`` microbatches of
        ceil(global_batch / K); without K, the smallest K that fits (K = global_batch, microbatches of 1, when
        none does: the result then says it does not fit)."""
        b = integer_at_least("global_batch", global_batch, 1, MAX_MICROBATCH)
        if accumulation_steps is None:
            accumulation_steps = self.smallest_accumulation(b, recompute=recompute) or b
        microbatch = microbatches(b, accumulation_steps)
        return replace(self.at(microbatch, recompute=recompute, accumulation_steps=accumulation_steps), global_batch=b)
