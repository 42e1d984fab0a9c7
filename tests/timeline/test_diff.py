"""``timeline.diff`` on the smallest inputs: one step is too little data for an interval, a CPU trace against itself
compares its operators with no direction, and bad sides name their field. The verdicts on simulated traces and the
CLI are tests/timeline/test_diff_verdicts.py.

The expected values are computed straight from the trace JSON, not through the code under test.
"""

import dataclasses

import pytest
import torch

from gpucost_lab.measure.profiling import profile_window
from gpucost_lab.simulate import write as simulate
from gpucost_lab.simulate.config import SCENARIOS
from gpucost_lab.timeline import diff

from .helpers import NO_DIRECTION, step_times_ms


def test_one_step_is_too_little_data(tmp_path):
    a, b = (
        simulate.write_trace(dataclasses.replace(SCENARIOS[s], steps=1), tmp_path / f"{s}.json")
        for s in ("dataloader_stall", "healthy")
    )
    result = diff(a, b)
    step = result.line("step_time")
    assert step.ratio == pytest.approx(step_times_ms(b)[0] / step_times_ms(a)[0], rel=1e-6)
    assert step.ci95_low is None and step.verdict == "inconclusive"
    assert "single value" in step.reason
    assert "too little data" in result.text()


def test_cpu_traces_compare_operators(tmp_path):
    x = torch.randn(64, 64)
    path = tmp_path / "cpu.json.gz"
    profile_window(lambda: x @ x, wait=0, warmup=1, active=3, trace_path=path)
    result = diff(path, path, top=2)
    assert result.device == "cpu" and result.before.steps == (3,)
    assert [ln.metric for ln in result.lines][:3] == ["step_time", "busy", "idle"]
    assert 1 <= sum(ln.metric == "cpu_op" for ln in result.lines) <= 2
    assert all(ln.verdict in NO_DIRECTION for ln in result.lines)  # the same trace: ratio 1, whatever its noise


@pytest.mark.parametrize(
    "before, after, field",
    [
        ([], "x.json", "before"),
        ("x.json", [3], "after"),
    ],
)
def test_bad_sides_name_the_field(before, after, field):
    with pytest.raises(ValueError, match=f"^{field} must"):
        diff(before, after)
