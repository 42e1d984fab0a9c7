"""gpucost_lab.memory.figures (the stated figures and their formulas) against hand computations (chapter 04).

Stated figures:
  bytes per parameter (Ultra-Scale Playbook): fp32 = 4 weights + 4 grads; bf16/fp16-mixed = 2 + 2 + 4 fp32 master;
    plus optimizer state: sgd 0, sgd-momentum 4, adamw 4 + 4
  selective recomputation: saves 0.70 of the activations (keep 0.3), +2.7% compute (Korthikanti et al. 2022)
  accumulation: step x (1 + (K - 1) x 0.15)
"""

import pytest

from gpucost_lab.memory.figures import (
    MICROBATCH_OVERHEAD_FRACTION,
    SELECTIVE_EXTRA_COMPUTE,
    SELECTIVE_SAVING_FRACTION,
    accumulation_step_time_factor,
    selective_saving_fraction,
    static_memory,
)
from gpucost_lab.memory.ledger import MemoryLedger

from .helpers import COURSE


def test_stated_defaults():
    assert SELECTIVE_SAVING_FRACTION == 0.70 and SELECTIVE_EXTRA_COMPUTE == 0.027
    assert MICROBATCH_OVERHEAD_FRACTION == 0.15


# --- static memory from a parameter count -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "precision,optimizer,per_parameter",
    [
        ("fp32", "sgd", 8),
        ("fp32", "sgd-momentum", 12),
        ("fp32", "adamw", 16),  # 4 + 4 (+ 4) (+ 4 + 4)
        ("bf16-mixed", "sgd", 8),
        ("bf16-mixed", "sgd-momentum", 12),
        ("bf16-mixed", "adamw", 16),  # 2 + 2 + 4 (+ ...)
        ("fp16-mixed", "sgd", 8),
        ("fp16-mixed", "sgd-momentum", 12),
        ("fp16-mixed", "adamw", 16),
    ],
)
def test_bytes_per_parameter(precision, optimizer, per_parameter):
    assert static_memory(1000, precision, optimizer).bytes_per_parameter == per_parameter


def test_bf16_mixed_adamw_is_16_bytes_per_parameter():
    # 1e9 parameters: 2 GB bf16 weights + 2 GB bf16 grads + 4 GB fp32 master + 4 + 4 GB Adam moments = 16 GB
    s = static_memory(10**9, "bf16-mixed", "adamw")
    assert s.static_gb == pytest.approx(16.0)
    assert s.breakdown_gb() == pytest.approx(
        {"weights_gb": 2.0, "gradients_gb": 2.0, "master_weights_gb": 4.0, "optimizer_state_gb": 8.0}
    )
    fp32 = static_memory(10**9, "fp32", "adamw")  # 4 + 4 + 0 + 8
    assert fp32.breakdown_gb() == pytest.approx(
        {"weights_gb": 4.0, "gradients_gb": 4.0, "master_weights_gb": 0.0, "optimizer_state_gb": 8.0}
    )


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(parameters=0), "parameters"),
        (dict(parameters=2.5), "parameters"),
        (dict(parameters=10, precision="fp8"), "precision"),
        (dict(parameters=10, optimizer="adam"), "optimizer"),
    ],
)
def test_static_memory_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        static_memory(**kwargs)


# --- step time --------------------------------------------------------------------------------------------------------


def test_accumulation_step_time_model():
    assert accumulation_step_time_factor(1) == 1.0
    assert accumulation_step_time_factor(4, 0.15) == pytest.approx(1.45)  # 1 + 3 x 0.15
    assert accumulation_step_time_factor(8, 0.05) == pytest.approx(1.35)  # 1 + 7 x 0.05
    assert COURSE.at(10, accumulation_steps=6).step_time_factor == pytest.approx(1.75)  # 1 + 5 x 0.15
    custom = MemoryLedger(3.2, 0.34, microbatch_overhead_fraction=0.1)
    assert custom.at(10, accumulation_steps=3).step_time_factor == pytest.approx(1.2)  # 1 + 2 x 0.1


# --- selective recomputation ------------------------------------------------------------------------------------------


def test_selective_saving_fraction_formula():
    # Korthikanti et al. 2022: 5as/h / (34 + 5as/h); GPT-3 175B: 5 x 96 x 2048 / 12288 = 80 -> 80 / 114
    assert selective_saving_fraction(2048, 12288, 96) == pytest.approx(80 / 114)
    assert round(selective_saving_fraction(2048, 12288, 96), 2) == SELECTIVE_SAVING_FRACTION
    # s 64, h 128, a 4: 5 x 4 x 64 / 128 = 10 -> 10 / 44
    assert selective_saving_fraction(64, 128, 4) == pytest.approx(10 / 44)
