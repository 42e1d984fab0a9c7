"""gpucost_lab.quality.seeds (SeedRuns, train_over_seeds) on hand-built studies and against one train_to_target per
seed."""

import dataclasses
import json

import pytest

from gpucost_lab.quality.parity import check_parity
from gpucost_lab.quality.seeds import SeedRuns, train_over_seeds
from gpucost_lab.quality.train import train_to_target

from .helpers import SMALL, seeded, study

# ---- hand-built studies ----------------------------------------------------------------------------------------------


def test_seed_runs_expose_steps_and_accuracy_per_seed_in_seed_order():
    runs = SeedRuns((seeded(2, 113, 0.853), seeded(0, 85, 0.856), seeded(1, 67, 0.854)))
    assert runs.seeds == (0, 1, 2) and runs.reached_all and runs.missed_seeds == () and runs.budget_steps == 300
    assert runs.steps_to_target_values == (85, 67, 113)
    assert runs.accuracy_at_budget_values == (0.856, 0.854, 0.853)
    assert runs.mean_accuracy_at_budget == pytest.approx((0.856 + 0.854 + 0.853) / 3)  # 0.854333...
    d = runs.to_dict()
    assert d["seeds"] == [0, 1, 2] and d["steps_to_target"] == [85, 67, 113] and d["missed_seeds"] == []
    assert d["accuracy_at_budget"] == [0.856, 0.854, 0.853] and len(d["runs"]) == 3
    assert d["target_resolution_steps"] == [85, 67, 113]  # hand-built: nothing evaluated before the target
    json.dumps(d)


def test_steps_to_target_values_need_every_seed_to_reach_it():
    runs = study((0.84, 0.85, 0.83), missed=(0, 2))
    assert not runs.reached_all and runs.missed_seeds == (0, 2)
    assert runs.steps_to_target_per_seed == (None, 67, None)
    with pytest.raises(ValueError, match="steps_to_target_values needs every seed.*seeds 0, 2 .*within 300 steps"):
        _ = runs.steps_to_target_values
    assert runs.to_dict()["steps_to_target"] == [None, 67, None]


def test_seed_runs_without_a_budget_have_no_accuracy_at_budget():
    runs = SeedRuns(
        tuple(dataclasses.replace(seeded(s), budget_steps=None, accuracy_at_budget=None) for s in (0, 1, 2))
    )
    with pytest.raises(ValueError, match="budget_steps must be an integer"):
        _ = runs.accuracy_at_budget_values
    assert runs.to_dict()["accuracy_at_budget"] is None
    with pytest.raises(ValueError, match="baseline.budget_steps must be an integer, got None"):
        check_parity(runs, study((0.855,) * 3))


@pytest.mark.parametrize(
    "runs,message",
    [
        ((), "runs must hold at least one"),
        ((seeded(0), "run"), r"runs\[1\] must be a TrainResult"),
        ((dataclasses.replace(seeded(0), seed=None),), r"runs\[0\].seed must be an integer"),
        ((seeded(0), seeded(0)), "distinct seeds"),
        ((seeded(0), seeded(1, precision="bf16-mixed")), r"runs\[\*\].precision must be the same"),
        ((seeded(0), seeded(1, budget=200)), r"runs\[\*\].budget_steps must be the same"),
        ((seeded(0), seeded(1, batch=128)), r"runs\[\*\].batch_size must be the same"),
    ],
)
def test_a_seed_study_is_one_config_over_distinct_seeds(runs, message):
    with pytest.raises(ValueError, match=message):
        SeedRuns(runs)


# ---- real runs -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seeds,kwargs,message",
    [
        ((0, 1), {}, "seeds must be a sequence of at least 3 distinct integers >= 0, got \\(0, 1\\)"),
        ((0, 0, 1), {}, "seeds must be a sequence"),
        ((-1, 0, 1), {}, "seeds must be a sequence"),
        (3, {}, "seeds must be a sequence"),
        ((0, 1, 2.5), {}, "seeds must be a sequence"),
        ((0, 1, 2), {"seed": 4}, "seed must not be given"),
        ((0, 1, 2), {"min_seeds": 0}, "min_seeds"),
        ((0, 1, 2), {"budget_steps": 0}, "budget_steps must be an integer >= 1"),
    ],
)
def test_bad_seed_studies_name_the_field(seeds, kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_over_seeds(SMALL, seeds, **kwargs)


def test_train_over_seeds_is_one_train_to_target_per_seed():
    runs = train_over_seeds(SMALL, (2, 0, 1), budget_steps=40, lr=0.05)
    assert runs.seeds == (0, 1, 2) and runs.budget_steps == 40
    for seed, run in zip(runs.seeds, runs.runs):
        assert run == train_to_target(SMALL, seed=seed, budget_steps=40, lr=0.05)
    assert len(set(runs.accuracy_at_budget_values)) > 1  # another initialisation, another model
    assert train_over_seeds(SMALL, (5,), min_seeds=1, max_steps=20).seeds == (5,)
