"""The simulator's eval_checkpoint_heavy scenario run in full (a long simulation): eval and checkpoint take about 55%
of the wall time, measured on the written trace and as the cost against the same run without them, the checkpoint's
write and copies by hand; and the ground-truth phase totals (gpucost_lab.simulate.write) agree with the annotations
the trace holds. (The other scenarios and knobs: tests/simulate/test_run.py and test_write.py.)
"""

import dataclasses
from collections import defaultdict

import pytest

from gpucost_lab import timeline
from gpucost_lab.simulate.config import SCENARIOS
from gpucost_lab.simulate.trace import TRACE_START_US
from gpucost_lab.simulate.write import phase_totals_us, simulate

from .helpers import events, load

pytestmark = pytest.mark.slow


def test_eval_and_checkpoint_take_about_55_percent_of_the_wall_time(tmp_path):
    config = SCENARIOS["eval_checkpoint_heavy"]
    trace = load(config, tmp_path)
    ev = trace.events
    wall_us = (ev["ts_us"] + ev["dur_us"]).max() - ev["ts_us"].min()
    phases = timeline.phases(trace).set_index("name")["total_us"]
    assert 0.50 <= (phases["eval"] + phases["checkpoint"]) / wall_us <= 0.60
    assert timeline.phases(trace).set_index("name")["count"][["eval", "checkpoint"]].tolist() == [4, 1]
    # the same share as a cost: how much longer the run takes than without eval and checkpoint
    plain = load(dataclasses.replace(config, eval_every=0, checkpoint_every=0), tmp_path, "plain.json.gz")
    plain_wall_us = (plain.events["ts_us"] + plain.events["dur_us"]).max() - plain.events["ts_us"].min()
    assert 0.50 <= 1 - plain_wall_us / wall_us <= 0.60
    # the checkpoint: (weights + two Adam moments) x 4 bytes copied back, then written at 3 GB/s
    state_bytes = 8 * (2048 * 2048 + 2048) * 12
    write = events(simulate(config), "cpu_op", "checkpoint_write")
    assert len(write) == 1 and write[0]["dur"] == pytest.approx(state_bytes / 3e9 * 1e6, rel=0.06)
    dtoh = timeline.memcpy_summary(trace).set_index("direction").loc["DtoH", "total_bytes"]
    assert dtoh == state_bytes + (4 + 4) * 4  # + 4 loss reads before the evals and 4 metric reads, 4 bytes each


def test_phase_totals_match_the_annotations_in_the_trace():
    config = SCENARIOS["eval_checkpoint_heavy"]
    trace, totals = simulate(config), phase_totals_us(config)
    sums = defaultdict(float)
    for e in events(trace, "user_annotation"):
        sums[e["name"]] += e["dur"]
    for phase in ("forward", "backward", "optimizer", "eval", "checkpoint"):
        assert totals[phase] == pytest.approx(sums[phase], abs=1e-3 * config.steps)
    end_us = max(e["ts"] + e.get("dur", 0) for e in trace["traceEvents"])
    assert totals["wall"] == pytest.approx(end_us - TRACE_START_US, abs=1e-3)
    assert set(totals) == {
        "data",
        "h2d_copy",
        "forward",
        "backward",
        "optimizer",
        "item_sync",
        "eval",
        "checkpoint",
        "wall",
    }
