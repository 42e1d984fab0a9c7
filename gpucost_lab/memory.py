"""The simplified training-memory budget (chapter 04): static memory plus resident activations.

GB here means 1e9 bytes. A model's weights, gradients and optimizer state are *static*: they stay
resident for the whole step. Activations saved for backward grow block by block during the forward
pass and peak at the last block, so the step's peak is ``static + activations per sample x microbatch``.
The budget keeps a reserve for the allocator's fragmentation and the framework's workspace.
Build a ledger from a real model with :func:`gpucost_lab.model_memory.measure_model_memory`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pandas as pd

from ._validate import fraction, integer_at_least, non_negative, positive

_TOLERANCE_GB = 1e-9  # one byte: absorbs float rounding at the exact budget edge


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

    def table(self) -> pd.DataFrame:
        """The per-block rows as a DataFrame (the nonvisual view of the slider)."""
        return pd.DataFrame([asdict(b) for b in self.blocks])

    def to_dict(self) -> dict:
        """JSON-ready dict with the CLI's keys."""
        d = asdict(self)
        d["blocks"] = [asdict(b) for b in self.blocks]
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

    def __post_init__(self) -> None:
        non_negative("static_gb", self.static_gb)
        positive("activation_gb_per_sample", self.activation_gb_per_sample)
        positive("device_gb", self.device_gb)
        fraction("reserve_fraction", self.reserve_fraction)
        integer_at_least("blocks", self.blocks, 1)

    @property
    def budget_gb(self) -> float:
        """Usable memory: device x (1 - reserve)."""
        return self.device_gb * (1.0 - self.reserve_fraction)

    def peak_gb(self, microbatch: int) -> float:
        """Static memory plus every block's activations at ``microbatch``."""
        microbatch = integer_at_least("microbatch", microbatch, 1)
        return self.static_gb + self.activation_gb_per_sample * microbatch

    def _within_budget(self, total_gb: float) -> bool:
        return total_gb <= self.budget_gb + _TOLERANCE_GB

    def max_microbatch(self) -> int:
        """Largest microbatch whose peak fits the budget (0 when even static memory does not fit)."""
        free_gb = self.budget_gb - self.static_gb
        if free_gb < 0:
            return 0
        m = math.floor(free_gb / self.activation_gb_per_sample)
        # the division can land a hair either side of an exact edge: settle it with the fit test itself
        while self._within_budget(self.static_gb + self.activation_gb_per_sample * (m + 1)):
            m += 1
        while m > 0 and not self._within_budget(self.static_gb + self.activation_gb_per_sample * m):
            m -= 1
        return m

    def at(self, microbatch: int) -> LedgerResult:
        """Evaluate the ledger at ``microbatch``: per-block rows, peak, verdict and headroom."""
        peak_gb = self.peak_gb(microbatch)
        rows = []
        for block in range(1, self.blocks + 1):
            activations_gb = self.activation_gb_per_sample * microbatch * block / self.blocks
            total_gb = self.static_gb + activations_gb
            state = "fits" if self._within_budget(total_gb) else "over budget"
            rows.append(LedgerBlock(block, activations_gb, total_gb, state))
        return LedgerResult(
            microbatch=microbatch,
            budget_gb=self.budget_gb,
            peak_gb=peak_gb,
            fits=self._within_budget(peak_gb),
            headroom_gb=self.budget_gb - peak_gb,
            max_microbatch=self.max_microbatch(),
            blocks=tuple(rows),
        )
