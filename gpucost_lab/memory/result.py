"""The memory ledger's answer at one microbatch (chapter 04): :class:`LedgerResult` and its per-block rows,
:class:`LedgerBlock`, as :meth:`gpucost_lab.memory.ledger.MemoryLedger.at` returns them.

Each row is the memory resident once the forward pass has run through a block; with recomputation (or the whole
step, :mod:`gpucost_lab.memory.ledger`) one more row holds backward's peak. :meth:`LedgerResult.table` is the per-block
table the ledger widget shows beside its bar, :meth:`LedgerResult.to_dict` the CLI's ``ledger --json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd


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
    # the other knobs (module doc); the defaults describe the simplified ledger
    recomputation: str = "none"  # "none", "selective" or "full" (checkpointing is "full")
    precision: str = "fp32"
    accumulation_steps: int = 1
    global_batch: int = 0  # samples per optimizer step: microbatch x accumulation_steps unless given
    step_time_factor: float = 1.0  # optimizer-step time over one batch of the global batch without recomputation
    backward: LedgerBlock | None = None  # without recomputation, the whole step's backward peak row (module doc)

    @property
    def rows(self) -> tuple[LedgerBlock, ...]:
        """Every row in the order memory is reached: the forward rows, then the recompute row (if any)."""
        last = self.recompute if self.recompute is not None else self.backward
        return self.blocks if last is None else (*self.blocks, last)

    @property
    def first_over_budget(self) -> LedgerBlock | None:
        """The first row whose resident memory crosses the budget, or None when the step fits."""
        return next((b for b in self.rows if b.state != "fits"), None)

    def table(self) -> pd.DataFrame:
        """The per-block rows as a DataFrame (the nonvisual view of the slider), indexed by ``block`` (1 to blocks,
        as the chapter says "block 10"): ``table.loc[10]`` is block 10's row.

        With recomputation a ``phase`` column tells the forward rows from the backward recompute row, which is
        the last block's again (its index is that block's number too).
        """
        if self.recompute is None and self.backward is None:
            table = pd.DataFrame([asdict(b) for b in self.blocks], columns=list(LedgerBlock.__dataclass_fields__))
        else:
            last = "backward recompute" if self.recompute is not None else "backward"
            phases = ["forward"] * len(self.blocks) + [last]
            table = pd.DataFrame([{**asdict(b), "phase": p} for b, p in zip(self.rows, phases)])
        return table.set_index("block")

    def to_dict(self) -> dict:
        """JSON-ready dict with the CLI's keys (the recomputation keys only with recomputation)."""
        d = asdict(self)
        d["blocks"] = [asdict(b) for b in self.blocks]
        if self.backward is None:
            del d["backward"]
        if self.recompute is not None:
            d["recompute"] = asdict(self.recompute)
        else:
            for key in ("checkpointing", "recompute_step_time_factor", "recompute", "checkpointing_saves_gb"):
                del d[key]
        return d
