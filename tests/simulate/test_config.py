"""gpucost_lab.simulate.config: the simulated run's knobs, their checks and the event count, against hand counts and
the events a run writes.
"""

import dataclasses
import math

import pytest

from gpucost_lab.simulate.config import MAX_TRACE_EVENTS, SCENARIOS, SimConfig, trace_events
from gpucost_lab.simulate.write import simulate


def test_scenarios_change_only_their_knob():
    base = SimConfig()
    changed = {
        name: {f.name for f in dataclasses.fields(SimConfig) if getattr(config, f.name) != getattr(base, f.name)}
        for name, config in SCENARIOS.items()
    }
    assert changed == {
        "healthy": set(),
        "dataloader_stall": {"num_workers"},
        "pageable_copies": {"pin_memory"},
        "item_sync": {"item_sync"},
        "mixed_precision": {"mixed_precision"},
        "eval_checkpoint_heavy": {"steps", "eval_every", "eval_batches", "checkpoint_every"},
    }


# ----------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "field, value",
    [
        ("seed", -1),
        ("steps", 0),
        ("steps", 2.5),
        ("steps", 10_001),
        ("batch_size", 0),
        ("num_workers", -1),
        ("num_workers", 65),
        ("pin_memory", "yes"),
        ("item_sync", 1),
        ("eval_every", -1),
        ("eval_batches", 0),
        ("checkpoint_every", -2),
        ("mixed_precision", None),
        ("layers", 0),
        ("hidden", True),
        ("sample_bytes", 0),
        ("decode_us_per_sample", -1.0),
        ("decode_us_per_sample", math.nan),
    ],
)
def test_bad_values_name_the_field_and_the_value(field, value):
    with pytest.raises(ValueError, match=field) as info:
        SimConfig(**{field: value})
    assert repr(value) in str(info.value)


def test_unknown_gpu_and_a_model_too_big_for_it_are_refused():
    with pytest.raises(ValueError, match="gpu must be one of.*'TPU v9'"):  # SimConfig's field, not the catalog's
        SimConfig(gpu="TPU v9")
    with pytest.raises(ValueError, match="layers, hidden and batch_size need"):
        SimConfig(gpu="L4", layers=100, hidden=8192)  # 100 x 67M parameters x 16 bytes = 107 GB > 24 GB
    assert SimConfig(gpu="NVIDIA H100 80GB HBM3").gpu == "NVIDIA H100 80GB HBM3"


def test_config_is_frozen_and_integral_floats_are_normalised():
    config = SimConfig(steps=4.0)
    assert config.steps == 4 and isinstance(config.steps, int)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.steps = 5


# ----------------------------------------------------------------------------------------------- the event count
SMALL_RUN = dict(steps=3, layers=2, hidden=256, batch_size=8)


@pytest.mark.parametrize(
    "knobs, expected",
    [
        # 3 steps of 2 layers: 3 x (34 x 2 + 20) = 264 events; 3 lane names for the main thread, the stream and
        # each of the 4 workers: 18
        ({}, 282),
        ({"item_sync": True}, 282 + 3 * 7),  # a loss read (7 events) in every step
        # one eval of 3 batches, after step 2: its loss read 7, 3 x (14 x 2 + 5) forward events and 8 more
        ({"eval_every": 2, "eval_batches": 3}, 282 + 7 + 3 * 33 + 8),
        ({"checkpoint_every": 3}, 282 + 7 + 30 * 2 + 2),  # one checkpoint after step 3, its loss read before it
        ({"num_workers": 0}, 282 - 4 * 3),  # no worker lanes
    ],
)
def test_the_event_count_by_hand_is_what_the_run_writes(knobs, expected):
    config = SimConfig(**{**SMALL_RUN, **knobs})
    assert trace_events(config) == expected == len(simulate(config)["traceEvents"])


def test_an_eval_and_a_checkpoint_on_the_same_step_count_one_loss_read_too_many():
    # steps 2 and 4 hold both: the one loss read before them is counted for each (7 events too many, twice)
    config = SimConfig(**{**SMALL_RUN, "steps": 4, "eval_every": 2, "checkpoint_every": 2})
    assert trace_events(config) - len(simulate(config)["traceEvents"]) == 2 * 7


def test_a_run_past_the_event_budget_names_the_knob_and_its_largest_value():
    # 100 layers: 34 x 100 + 20 = 3,420 events a step and 18 lane names; (2,000,000 - 18) // 3,420 = 584 steps
    with pytest.raises(ValueError, match="steps must be <= 584 with layers=100, ") as err:
        SimConfig(steps=10_000, layers=100, hidden=64)
    assert err.value.field == "steps" and str(err.value).endswith("got 10000")
    assert f"{MAX_TRACE_EVENTS:,} events" in str(err.value)
    assert trace_events(SimConfig(steps=584, layers=100, hidden=64)) <= MAX_TRACE_EVENTS  # the limit itself runs
    # evals making most of the events: the eval batches are named first. 10 steps of 2 layers (880), 10 loss reads
    # (70), 18 lane names and 10 evals of 8 + 33 x eval_batches events: 1,048 + 330 x eval_batches <= 2,000,000
    with pytest.raises(ValueError, match="eval_batches must be <= 6057 with steps=10, layers=2, ") as err:
        SimConfig(steps=10, layers=2, eval_every=1, eval_batches=10_000)
    assert err.value.field == "eval_batches"
