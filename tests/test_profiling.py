"""A short profiler window on the CPU: the schedule records only the active steps."""

import gzip
import json

import torch

from gpucost_lab.profiling import OPERATOR_COLUMNS, operator_table, peak_allocated_bytes, profile_window


def _step_factory():
    model, x = torch.nn.Linear(64, 64), torch.randn(32, 64)
    calls = []

    def step():
        calls.append(1)
        model(x).relu().sum().backward()

    return step, calls


def test_schedule_runs_wait_warmup_active_and_records_active(tmp_path):
    step, calls = _step_factory()
    path = tmp_path / "trace.json.gz"
    prof = profile_window(step, wait=1, warmup=2, active=3, trace_path=path)
    assert len(calls) == 1 + 2 + 3
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = {e["name"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")}
    assert len(steps) == 3  # the three active steps, numbered after the wait and warm-up ones
    table = operator_table(prof, top=None)
    assert list(table.columns) == OPERATOR_COLUMNS
    assert not table["name"].str.startswith("ProfilerStep").any()
    addmm = table[table["name"] == "aten::addmm"]
    assert int(addmm["calls"].iloc[0]) == 3  # one Linear forward per recorded step
    assert table["self_time_share"].sum() == 1.0 or abs(table["self_time_share"].sum() - 1.0) < 1e-9
    assert list(table["self_time_s"]) == sorted(table["self_time_s"], reverse=True)


def test_peak_allocation_covers_the_steps_tensors():
    step, _ = _step_factory()
    prof = profile_window(step, wait=0, warmup=1, active=2)
    # each step allocates at least its 32 x 64 fp32 output (8,192 B) and the 64 x 64 weight gradient
    assert peak_allocated_bytes(prof) >= 32 * 64 * 4 + 64 * 64 * 4
