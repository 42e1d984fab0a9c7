"""The simplified training-memory budget (chapter 04): static memory plus resident activations.

GB here means 1e9 bytes. A model's weights, gradients and optimizer state are *static*: they stay
resident for the whole step. Activations saved for backward grow block by block during the forward
pass and peak at the last block, so the step's peak is ``static + activations per sample x microbatch``.
The budget keeps a reserve for the allocator's fragmentation and the framework's workspace.
Build a ledger from a real model with :func:`gpucost_lab.model_memory.measure_model_memory`.

Activation checkpointing (``checkpointing=True``): each block keeps only its input for backward
(``checkpoint_keep_fraction`` of the activations the block would otherwise save), and backward
recomputes one block at a time. The peak is reached while recomputing the last block:
``(blocks - 1)`` kept inputs plus one whole block's activations, i.e.
``activations per block x ((blocks - 1) x keep + 1)``. The price is a second forward pass per step
(:data:`RECOMPUTE_STEP_TIME_FACTOR`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pandas as pd

from ._validate import FLOAT_MAX, fraction, integer_at_least, non_negative, positive, too_large

_TOLERANCE_GB = 1e-9  # one byte: absorbs float rounding at the exact budget edge
# The ledger prints a row per block: real models have at most a few hundred blocks (layers), and 1,000 rows are
# already more than anyone reads; 10,000,000 blocks took minutes to build and print.
MAX_BLOCKS = 1000
# Samples in a microbatch: far beyond any real one, and small enough that float arithmetic tells m from m + 1 samples
# (the fit test settles the exact count in a step or two).
MAX_MICROBATCH = 10**12

# Assumption (stated, not measured): recomputing the forward pass adds about one forward to every
# step, and a forward is about 1/3 of a forward+backward step's FLOPs (backward ~ 2 x forward), so a
# checkpointed step takes (1 + 1/3) = 4/3 of the time of the step without checkpointing.
RECOMPUTE_STEP_TIME_FACTOR = 4.0 / 3.0


@dataclass(frozen=True)
class LedgerBlock:
    """One row of the ledger: the memory resident once the forward pass has run through ``block``."""

    block: int
    activations_gb: float
    total_gb: float
    state: str  # "fits" or "over budget"


@dataclass(frozen=True)
class LedgerResult:
    """The ledger evaluated at one microbatch size."""

    microbatch: int
    budget_gb: float
    peak_gb: float
    fits: bool
    headroom_gb: float
    max_microbatch: int
    blocks: tuple[LedgerBlock, ...]
    # activation checkpointing (see the module docstring); the defaults describe a ledger without it
    checkpointing: bool = False
    recompute_step_time_factor: float = 1.0  # step time relative to no checkpointing
    recompute: LedgerBlock | None = None  # backward's peak row: recomputing the last block
    checkpointing_saves_gb: float = 0.0  # peak without checkpointing - this peak

    @property
    def rows(self) -> tuple[LedgerBlock, ...]:
        """Every row in the order memory is reached: the forward rows, then the recompute row (if any)."""
        return self.blocks if self.recompute is None else (*self.blocks, self.recompute)

    @property
    def first_over_budget(self) -> LedgerBlock | None:
        """The first row whose resident memory crosses the budget, or None when the step fits."""
        return next((b for b in self.rows if b.state != "fits"), None)

    def table(self) -> pd.DataFrame:
        """The per-block rows as a DataFrame (the nonvisual view of the slider).

        With checkpointing a ``phase`` column tells the forward rows from the backward recompute row.
        """
        if not self.checkpointing:
            return pd.DataFrame([asdict(b) for b in self.blocks])
        phases = ["forward"] * len(self.blocks) + ["backward recompute"] * (self.recompute is not None)
        return pd.DataFrame([{**asdict(b), "phase": p} for b, p in zip(self.rows, phases)])

    def to_dict(self) -> dict:
        """JSON-ready dict with the CLI's keys (the checkpointing keys only when checkpointing)."""
        d = asdict(self)
        d["blocks"] = [asdict(b) for b in self.blocks]
        if self.checkpointing:
            d["recompute"] = asdict(self.recompute) if self.recompute is not None else None
        else:
            for key in ("checkpointing", "recompute_step_time_factor", "recompute", "checkpointing_saves_gb"):
                del d[key]
        return d


@dataclass(frozen=True)
class MemoryLedger:
    """Training-memory budget of one device (chapter 04).

    ``MemoryLedger(static_gb=3.2, activation_gb_per_sample=0.34)`` is the course's example: a 24 GB
    device keeping a 10% reserve has a 21.6 GB budget, and 54 is the largest microbatch that fits.
    """

    static_gb: float  # weights + gradients + optimizer state, resident all step
    activation_gb_per_sample: float  # activations saved for backward, per sample, all blocks together
    device_gb: float = 24.0  # device memory
    reserve_fraction: float = 0.10  # kept free for fragmentation and workspace, in [0, 1)
    blocks: int = 10  # equal-sized blocks the activations accumulate over
    # with checkpointing: a block's input as a fraction of the activations the block saves, in (0, 1]
    checkpoint_keep_fraction: float = 0.1

    def __post_init__(self) -> None:
        non_negative("static_gb", self.static_gb)
        positive("activation_gb_per_sample", self.activation_gb_per_sample)
        positive("device_gb", self.device_gb)
        fraction("reserve_fraction", self.reserve_fraction)
        integer_at_least("blocks", self.blocks, 1, MAX_BLOCKS)
        fraction("checkpoint_keep_fraction", self.checkpoint_keep_fraction, include_zero=False, include_one=True)

    @property
    def budget_gb(self) -> float:
        """Usable memory: device x (1 - reserve)."""
        return self.device_gb * (1.0 - self.reserve_fraction)

    def _peak_activations_gb(self, microbatch: int, checkpointing: bool) -> float:
        if not checkpointing:
            return self.activation_gb_per_sample * microbatch
        # one block's activations x ((blocks - 1) kept inputs + the block being recomputed)
        blocks_held = (self.blocks - 1) * self.checkpoint_keep_fraction + 1.0
        return self.activation_gb_per_sample * microbatch * blocks_held / self.blocks

    def peak_gb(self, microbatch: int, checkpointing: bool = False) -> float:
        """Static memory plus the peak activations at ``microbatch``: every block's activations, or
        with ``checkpointing`` the kept inputs of all blocks but one plus one recomputed block."""
        microbatch = integer_at_least("microbatch", microbatch, 1, MAX_MICROBATCH)
        self._check_finite(microbatch)
        return self.static_gb + self._peak_activations_gb(microbatch, bool(checkpointing))

    def _check_finite(self, microbatch: int) -> None:
        """ValueError naming the input when a row of the ledger at ``microbatch`` would overflow."""
        a, m, static = self.activation_gb_per_sample, microbatch, self.static_gb
        if math.isfinite(a * m * self.blocks) and math.isfinite(static + a * m):  # the rows' largest terms
            return
        given = f"activation_gb_per_sample={a!r}, microbatch={m}, blocks={self.blocks}"
        if static > a * m:
            raise too_large("static_gb", static, FLOAT_MAX - a * m, given, "the peak memory overflows")
        given = f"static_gb={static!r}, microbatch={m}, blocks={self.blocks}"
        raise too_large("activation_gb_per_sample", a, (FLOAT_MAX - static) / m / self.blocks, given,
                        "the peak memory overflows")

    def _within_budget(self, total_gb: float) -> bool:
        return total_gb <= self.budget_gb + _TOLERANCE_GB

    def max_microbatch(self, checkpointing: bool = False) -> int:
        """Largest microbatch whose peak fits the budget (0 when even static memory does not fit)."""
        checkpointing = bool(checkpointing)
        free_gb = self.budget_gb - self.static_gb
        if free_gb < 0:
            return 0
        per_sample_gb = self._peak_activations_gb(1, checkpointing)
        if free_gb + _TOLERANCE_GB > per_sample_gb * MAX_MICROBATCH:
            a = self.activation_gb_per_sample
            given = (f"activation_gb_per_sample={a!r} (or activation_gb_per_sample >= "
                     f"{(free_gb + _TOLERANCE_GB) / MAX_MICROBATCH * a / per_sample_gb:.6g} at this device_gb)")
            limit = (self.static_gb + per_sample_gb * MAX_MICROBATCH - _TOLERANCE_GB) / (1.0 - self.reserve_fraction)
            raise too_large("device_gb", self.device_gb, limit, given,
                            f"the largest microbatch that fits passes {MAX_MICROBATCH:.0e} samples")
        m = math.floor((free_gb + _TOLERANCE_GB) / per_sample_gb)
        # the division can land a hair either side of an exact edge: settle it with the fit test itself
        while self._within_budget(self.static_gb + self._peak_activations_gb(m + 1, checkpointing)):
            m += 1
        while m > 0 and not self._within_budget(self.static_gb + self._peak_activations_gb(m, checkpointing)):
            m -= 1
        return m

    def _row(self, block: int, activations_gb: float) -> LedgerBlock:
        total_gb = self.static_gb + activations_gb
        return LedgerBlock(block, activations_gb, total_gb, "fits" if self._within_budget(total_gb) else "over budget")

    def at(self, microbatch: int, checkpointing: bool = False) -> LedgerResult:
        """Evaluate the ledger at ``microbatch``: per-block rows, peak, verdict and headroom.

        With ``checkpointing`` the forward rows hold the kept inputs of blocks 1..k, and the
        ``recompute`` row is backward's peak: (blocks - 1) kept inputs + the last block recomputed.
        """
        checkpointing = bool(checkpointing)
        peak_gb = self.peak_gb(microbatch, checkpointing)
        if checkpointing:
            per_block_gb = self.activation_gb_per_sample * microbatch / self.blocks
            keep = self.checkpoint_keep_fraction
            rows = [self._row(block, per_block_gb * keep * block) for block in range(1, self.blocks + 1)]
            extras = dict(checkpointing=True, recompute_step_time_factor=RECOMPUTE_STEP_TIME_FACTOR,
                          recompute=self._row(self.blocks, peak_gb - self.static_gb),
                          checkpointing_saves_gb=self.peak_gb(microbatch) - peak_gb)
        else:
            rows = []
            for block in range(1, self.blocks + 1):
                activations_gb = self.activation_gb_per_sample * microbatch * block / self.blocks
                rows.append(self._row(block, activations_gb))
            extras = {}
        return LedgerResult(
            microbatch=microbatch,
            budget_gb=self.budget_gb,
            peak_gb=peak_gb,
            fits=self._within_budget(peak_gb),
            headroom_gb=self.budget_gb - peak_gb,
            max_microbatch=self.max_microbatch(checkpointing),
            blocks=tuple(rows),
            **extras,
        )
