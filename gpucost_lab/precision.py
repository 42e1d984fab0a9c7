"""The training precisions, named once for the whole course: the memory ledger counts their bytes (chapter 04,
:mod:`gpucost_lab.memory.figures`) and the quality runs train in them (chapters 03 and 06,
:mod:`gpucost_lab.quality.train`).

- ``fp32``: every tensor in float32.
- ``bf16-mixed``: bfloat16 mixed precision: the matmuls, and the activations they save, in 16 bits; the master
  weights and the optimizer state in fp32. PyTorch runs it under ``torch.autocast(dtype=torch.bfloat16)``.
- ``fp16-mixed``: the same in float16, plus a loss scale (``torch.amp.GradScaler``) so that small gradients do not
  underflow; the course runs it on CUDA only.

The names say the idea, mixed precision, not the PyTorch mechanism that implements it (autocast, AMP), so the ledger
that only counts bytes and the runs that train share them.
"""

from __future__ import annotations

from gpucost_lab._validate import InputError, one_of

PRECISIONS = ("fp32", "bf16-mixed", "fp16-mixed")


def check_precision(precision: object, device: str | None = None) -> str:
    """``precision`` if it is one of :data:`PRECISIONS`; with a ``device`` (already resolved: "cpu", "cuda:0"),
    also that a run can train in it there: fp16-mixed needs CUDA. The memory ledger names no device (it counts
    bytes, it runs nothing)."""
    name = one_of("precision", precision, PRECISIONS)
    if device is not None and name == "fp16-mixed" and not str(device).startswith("cuda"):
        raise InputError(
            "precision",
            f"precision 'fp16-mixed' needs CUDA (device='cuda'), got device={device!r}; "
            "on the CPU use 'fp32' or 'bf16-mixed'",
        )
    return name


__all__ = ["PRECISIONS", "check_precision"]
