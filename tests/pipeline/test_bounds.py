"""gpucost_lab.pipeline.bounds: the decode work of a measured run and the input named when it is too long, against
hand computations of the filter passes."""

import pytest

from gpucost_lab import InputError
from gpucost_lab.pipeline.bounds import (
    DECODE_FIXED_PASSES,
    MAX_BATCH_SIZE,
    MAX_BATCHES,
    MAX_DECODE_PASSES,
    MAX_DECODE_WORK,
    MAX_REPEATS,
    check_run,
    decode_work,
)


def test_the_decode_work_by_hand():
    # 2 settings x (1 warm-up + 2 x 4 timed) epochs x 6 batches x 32 samples x (8 + 4) passes = 41,472
    assert DECODE_FIXED_PASSES == 8
    assert decode_work(2, batch_size=32, batches=6, repeats=4, decode_passes=4) == 2 * 9 * 6 * 32 * 12 == 41_472
    check_run(2, batch_size=32, batches=6, repeats=4, decode_passes=4)  # well within the budget: no error


def test_a_run_exactly_at_the_budget_passes_and_one_batch_more_does_not():
    # 1 setting, 5 epochs (repeats 2), batch 4,096, no extra pass: 163,840 passes a batch; 18 batches = 2,949,120
    per_batch = 1 * 5 * 4096 * 8
    assert MAX_DECODE_WORK == 3_000_000 and MAX_DECODE_WORK // per_batch == 18
    check_run(1, batch_size=4096, batches=18, repeats=2, decode_passes=0)
    with pytest.raises(InputError) as err:
        check_run(1, batch_size=4096, batches=19, repeats=2, decode_passes=0)
    assert err.value.field == "batches"
    assert str(err.value) == (
        "batches must be <= 18 with batch_size=4096, repeats=2, decode_passes=0 and 1 setting(s): beyond it the run "
        "decodes more than 3,000,000 filter passes (about a minute), got 19"
    )


def test_the_batch_size_is_named_when_no_number_of_batches_fits():
    # 1,000 batches of 4,096 over 201 epochs (repeats 100): not even one batch of 4,096 fits (201 x 4,096 x 8 =
    # 6,586,368); a batch of 3,000,000 // (201 x 1,000 x 8) = 1 sample does
    with pytest.raises(InputError, match=r"^batch_size must be <= 1 with batches=1000, ") as err:
        check_run(1, batch_size=4096, batches=1000, repeats=100, decode_passes=0)
    assert err.value.field == "batch_size"


def test_settings_whose_smallest_run_is_too_long_name_the_workers():
    # 1,000 batches of 4,096, 201 epochs, 108 passes: none of batches, batch_size, repeats or decode_passes can be
    # lowered enough, so the settings must be fewer
    with pytest.raises(InputError, match="workers must name fewer settings: 3 settings") as err:
        check_run(3, batch_size=4096, batches=1000, repeats=100, decode_passes=100)
    assert err.value.field == "workers"


@pytest.mark.parametrize(
    "field, value",
    [
        ("batches", 0),
        ("batches", MAX_BATCHES + 1),
        ("repeats", 1),  # two rounds at least, for an interval
        ("repeats", MAX_REPEATS + 1),
        ("batch_size", 0),
        ("batch_size", MAX_BATCH_SIZE + 1),
        ("decode_passes", -1),
        ("decode_passes", MAX_DECODE_PASSES + 1),
        ("batches", 2.5),
    ],
)
def test_each_size_is_checked_against_its_own_bound(field, value):
    knobs = {"batch_size": 1, "batches": 1, "repeats": 2, "decode_passes": 0, field: value}
    with pytest.raises(InputError) as err:
        check_run(1, **knobs)
    assert err.value.field == field and repr(value) in str(err.value)
