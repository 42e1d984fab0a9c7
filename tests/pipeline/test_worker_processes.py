"""gpucost_lab.pipeline.loader and compare with loader worker processes (chapter 07), on a counting clock: settings
with workers run (and bad worker counts are refused), workers feed bitwise the same batches as the main thread, and
a change of worker count timed on a counting clock is "same". (Everything in the main thread:
tests/pipeline/test_loader.py and test_compare.py.)
"""

from __future__ import annotations

import pytest

from gpucost_lab import InputError
from gpucost_lab.pipeline.compare import compare_configs, same_batches
from gpucost_lab.pipeline.loader import LoaderConfig, measure_pipeline, measure_settings

from .helpers import counting_clock

pytestmark = pytest.mark.slow


def test_settings_with_workers_run_and_bad_counts_are_refused():
    measured = measure_settings((0, 1), batches=1, repeats=2, clock=counting_clock(0.5))
    assert [m.config.label for m in measured] == ["workers=0", "workers=1"]
    for workers in ((-1,), (65,), ()):
        with pytest.raises(InputError) as err:
            measure_settings(workers)
        assert err.value.field == "workers"
    for kwargs, field in (({"batches": 0}, "batches"), ({"repeats": 1}, "repeats"), ({"device": "tpu"}, "device")):
        with pytest.raises(InputError) as err:
            measure_pipeline(LoaderConfig(), **kwargs)
        assert err.value.field == field


def test_workers_feed_bitwise_the_same_batches_as_the_main_thread():
    assert same_batches(LoaderConfig(batch_size=4), LoaderConfig(batch_size=4, num_workers=2, prefetch_factor=1))
    assert not same_batches(LoaderConfig(batch_size=4), LoaderConfig(batch_size=8))


def test_a_timed_change_on_a_counting_clock_is_the_same():
    # a block reads the clock twice whatever it runs: every block 0.5 s on both sides, ratio 1 with no spread at all,
    # an interval [1, 1] inside the 5% margin: "same"
    result = compare_configs(
        LoaderConfig(batch_size=4),
        LoaderConfig(batch_size=4, num_workers=1),
        batches=1,
        rounds=2,
        clock=counting_clock(0.5),
    )
    assert result.change == "num_workers 0 -> 1" and result.comparison.rounds == 2
    assert result.comparison.time_ratio == pytest.approx(1.0)
    assert result.verdict == "same" and result.cost_verdict == "same"
    assert result.comparison.baseline_contract.units_per_step == 4
