"""The training-memory ledger's stated figures (chapter 04): bytes per parameter by precision and optimizer,
activation bytes by precision, what activation recomputation saves and costs, and how gradient accumulation
stretches the optimizer step. :class:`gpucost_lab.memory.ledger.MemoryLedger` uses them; each figure carries its source.
The precisions are the course's (:data:`gpucost_lab.precision.PRECISIONS`).

Static memory (weights, gradients, a master copy, optimizer state) is counted as the Ultra-Scale Playbook counts
it (Hugging Face, "The Ultra-Scale Playbook: Training LLMs on GPU Clusters", 2025, section "Memory usage in
Transformers"), per parameter:

============  =======  =========  ===========  ===================================  =====
precision     weights  gradients  fp32 master  optimizer state (fp32)               total
============  =======  =========  ===========  ===================================  =====
fp32          4        4          0            sgd 0, sgd-momentum 4, adamw 4 + 4   8/12/16
bf16-mixed    2        2          4            the same                             8/12/16
fp16-mixed    2        2          4            the same                             8/12/16
============  =======  =========  ===========  ===================================  =====

So bf16-mixed with AdamW is 2 (bf16 weights) + 2 (bf16 gradients) + 4 (fp32 master weights) + 4 + 4 (Adam's
two fp32 moments) = 16 bytes per parameter, the same as fp32: as the Playbook notes, mixed precision moves static
bytes between components rather than saving them (and costs 4 more per parameter where gradients are accumulated
in fp32, a variant this ledger does not model). What mixed precision saves is activation memory: activations are
kept in 16 bits, 2 bytes per element against fp32's 4 (the Playbook's and Korthikanti et al.'s count), so
:func:`activation_scale` halves the activations per sample. That is an upper bound on the saving, a stated
assumption: under autocast the outputs of ops on PyTorch's float32 list (softmax, layer_norm, the losses) stay
4 bytes, and autocast caches a 16-bit copy of each weight it casts (PyTorch documentation, "Automatic Mixed
Precision package - torch.amp", the autocast op reference and ``cache_enabled``); measure a real model
(chapter 04, section 3, and ``tests/memory/test_from_model.py``). fp16-mixed needs the same memory as
bf16-mixed plus a loss scale (one number); either changes the arithmetic, so a run switched to it needs a
quality-parity check.

Activation recomputation (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models", arXiv:2205.05198):

- ``selective``: recompute only the attention core (QK^T, softmax, its dropout, the product with V), whose saved
  activations are ``5as/h`` of a transformer layer's ``34 + 5as/h`` bytes per token per hidden unit (a heads,
  s sequence length, h hidden size; :func:`selective_saving_fraction`). For GPT-3 175B (a 96, s 2048, h 12288)
  that is 80 / 114 = 70% of the activation memory saved for 2.7% more FLOPs, the paper's figures and this
  ledger's defaults (:data:`SELECTIVE_SAVING_FRACTION`, :data:`SELECTIVE_EXTRA_COMPUTE`).
- ``full``: each block keeps only its input and backward recomputes the block: one more forward per step, so the
  step takes :data:`RECOMPUTE_STEP_TIME_FACTOR` (4/3) as long; why 4/3: beside the constant.

Either way the peak is reached in backward, while the last block is recomputed: the other blocks hold what they
kept (``1 - saving`` of their activations for selective, their input for full) and the last block holds all of
its activations again: ``activations per block x ((blocks - 1) x keep + 1)``.

Gradient accumulation: a global batch of B runs as K microbatches of B/K with one optimizer step. Memory follows
the microbatch (gradients are added into the buffers static memory already holds); steps to a quality target
follow the global batch. The time of one optimizer step follows the model measured in
``benchmarks/accumulation_timing.py`` (figures in ``benchmarks/RESULTS.md``, "Gradient accumulation: step time"):

    T(B, K) = o + K x c + B x p        (per step, per microbatch, per sample)

so ``step_time_factor(K) = T(B, K) / T(B, 1) = 1 + (K - 1) x f`` with ``f = c / T(B, 1)``, the per-microbatch
overhead as a fraction of the one-batch step (:data:`MICROBATCH_OVERHEAD_FRACTION`, measured; pass your own).
The factors multiply: ``accumulation x recomputation``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpucost_lab._validate import fraction, integer_at_least, non_negative, one_of
from gpucost_lab.precision import check_precision

BYTES_PER_GB = 1e9

OPTIMIZERS = ("sgd", "sgd-momentum", "adamw")
RECOMPUTE_MODES = ("none", "selective", "full")

# (weights, gradients, fp32 master copy) bytes per parameter: the Ultra-Scale Playbook's accounting (module doc).
_WEIGHT_GRAD_MASTER_BYTES = {"fp32": (4, 4, 0), "bf16-mixed": (2, 2, 4), "fp16-mixed": (2, 2, 4)}
# fp32 optimizer state per parameter: SGD none; SGD with momentum one buffer; AdamW two moments (exp_avg,
# exp_avg_sq). torch keeps them in the parameter's dtype, fp32 here (the master copy's, under mixed precision).
OPTIMIZER_STATE_BYTES = {"sgd": 0, "sgd-momentum": 4, "adamw": 8}
# bytes per saved activation element: fp32, or 16-bit under mixed precision (Playbook; Korthikanti et al. 2022).
ACTIVATION_BYTES = {"fp32": 4, "bf16-mixed": 2, "fp16-mixed": 2}

# Korthikanti et al. 2022, GPT-3 175B: selective recomputation saves 70% of activation memory (80 of 34 + 80
# bytes per token per hidden unit, 5as/h = 5 x 96 x 2048 / 12288 = 80) for 2.7% more FLOPs.
SELECTIVE_SAVING_FRACTION = 0.70
SELECTIVE_EXTRA_COMPUTE = 0.027
# Full recomputation's step time over the step without, an assumption stated, not measured: recomputing adds one
# forward to every step, and a forward is about 1/3 of a forward + backward step's FLOPs (backward ~ 2 x forward),
# so the step takes 1 + 1/3 = 4/3 as long. Korthikanti et al. 2022 measure 30-40% more for full recomputation.
# Selective recomputation redoes part of that forward, never more (ledger.MAX_SELECTIVE_EXTRA_COMPUTE).
RECOMPUTE_STEP_TIME_FACTOR = 4.0 / 3.0
# Measured (benchmarks/accumulation_timing.py; RESULTS.md, "Gradient accumulation: step time"): per-microbatch
# overhead c over the one-batch step T(B, 1), MLP 784-1024-1024-10, AdamW, fp32, global batch 64, 1 thread on
# this course's 2-core CPU.
MICROBATCH_OVERHEAD_FRACTION = 0.15

# The course's ledger (chapter 04), the defaults of MemoryLedger, the CLI's `ledger` and the ledger widget: 3.2 GB
# static and 0.34 GB of activations per sample on a 24 GB device keeping 10% free (fragmentation and workspace): a
# 21.6 GB budget, in which 54 samples fit.
COURSE_STATIC_GB = 3.2
COURSE_ACTIVATION_GB_PER_SAMPLE = 0.34
DEFAULT_DEVICE_GB = 24.0
DEFAULT_RESERVE_FRACTION = 0.10


@dataclass(frozen=True)
class StaticMemory:
    """Static memory of ``parameters`` trained in ``precision`` with ``optimizer``, by component (bytes per
    parameter from the Playbook's accounting, module doc); GB = 1e9 bytes."""

    parameters: int
    precision: str
    optimizer: str
    weight_bytes_per_parameter: int
    gradient_bytes_per_parameter: int
    master_bytes_per_parameter: int
    optimizer_state_bytes_per_parameter: int

    @property
    def bytes_per_parameter(self) -> int:
        return (
            self.weight_bytes_per_parameter
            + self.gradient_bytes_per_parameter
            + self.master_bytes_per_parameter
            + self.optimizer_state_bytes_per_parameter
        )

    @property
    def static_gb(self) -> float:
        return self.parameters * self.bytes_per_parameter / BYTES_PER_GB

    def breakdown_gb(self) -> dict[str, float]:
        """GB per component: ``weights_gb``, ``gradients_gb``, ``master_weights_gb``, ``optimizer_state_gb``."""
        n = self.parameters / BYTES_PER_GB
        return {
            "weights_gb": n * self.weight_bytes_per_parameter,
            "gradients_gb": n * self.gradient_bytes_per_parameter,
            "master_weights_gb": n * self.master_bytes_per_parameter,
            "optimizer_state_gb": n * self.optimizer_state_bytes_per_parameter,
        }

    def to_dict(self) -> dict:
        return {
            "parameters": self.parameters,
            "precision": self.precision,
            "optimizer": self.optimizer,
            "bytes_per_parameter": self.bytes_per_parameter,
            "static_gb": self.static_gb,
            **self.breakdown_gb(),
        }


def check_recompute(recompute: object) -> str:
    return one_of("recompute", recompute, RECOMPUTE_MODES)


def static_memory(parameters: int, precision: str = "fp32", optimizer: str = "adamw") -> StaticMemory:
    """Weights + gradients + master copy + optimizer state of ``parameters`` parameters.

    ``static_memory(10**9, "bf16-mixed", "adamw").static_gb`` is 16.0: 2 + 2 + 4 + 4 + 4 bytes per parameter.
    """
    parameters = integer_at_least("parameters", parameters, 1, 10**15)
    weights, grads, master = _WEIGHT_GRAD_MASTER_BYTES[check_precision(precision)]
    state = OPTIMIZER_STATE_BYTES[one_of("optimizer", optimizer, OPTIMIZERS)]
    return StaticMemory(parameters, precision, optimizer, weights, grads, master, state)


def activation_scale(from_precision: str, to_precision: str) -> float:
    """Factor on activations per sample when a run moves from one precision to another (2 / 4 = 0.5 from fp32 to
    either mixed precision)."""
    return ACTIVATION_BYTES[check_precision(to_precision)] / ACTIVATION_BYTES[check_precision(from_precision)]


def selective_saving_fraction(sequence_length: int, hidden_size: int, heads: int) -> float:
    """Share of a transformer layer's activation memory that selective recomputation saves: ``5as/h`` of
    ``34 + 5as/h`` (Korthikanti et al. 2022). GPT-3 175B (s 2048, h 12288, a 96): 80 / 114 = 0.702."""
    s = integer_at_least("sequence_length", sequence_length, 1)
    h = integer_at_least("hidden_size", hidden_size, 1)
    a = integer_at_least("heads", heads, 1)
    attention = 5.0 * a * s / h
    return attention / (34.0 + attention)


def keep_fraction(recompute: str, checkpoint_keep_fraction: float, selective_saving: float) -> float:
    """Share of a block's activations the block keeps for backward under ``recompute``."""
    mode = check_recompute(recompute)
    if mode == "none":
        return 1.0
    return 1.0 - selective_saving if mode == "selective" else checkpoint_keep_fraction


def recompute_step_time_factor(recompute: str, selective_extra_compute: float = SELECTIVE_EXTRA_COMPUTE) -> float:
    """Step time with ``recompute`` over the step without: 1, 1 + extra compute (selective), or
    :data:`RECOMPUTE_STEP_TIME_FACTOR` (full)."""
    mode = check_recompute(recompute)
    if mode == "none":
        return 1.0
    if mode == "selective":
        return 1.0 + non_negative("selective_extra_compute", selective_extra_compute)
    return RECOMPUTE_STEP_TIME_FACTOR


def accumulation_step_time_factor(
    accumulation_steps: int, microbatch_overhead_fraction: float = MICROBATCH_OVERHEAD_FRACTION
) -> float:
    """Time of one optimizer step over K microbatches relative to one batch of the same global batch:
    ``1 + (K - 1) x f`` (module doc). K = 2 at the measured f = 0.15: 1.15."""
    k = integer_at_least("accumulation_steps", accumulation_steps, 1)
    f = fraction("microbatch_overhead_fraction", microbatch_overhead_fraction)
    return 1.0 + (k - 1) * f


def microbatches(global_batch: int, accumulation_steps: int) -> int:
    """The (largest) microbatch when ``global_batch`` samples run as ``accumulation_steps`` microbatches:
    ceil(B / K); the last one is smaller when K does not divide B."""
    b = integer_at_least("global_batch", global_batch, 1)
    k = integer_at_least("accumulation_steps", accumulation_steps, 1, b)
    return math.ceil(b / k)
