"""A short profiler window on the CPU: the schedule records only the active steps, and the profiler's log lines
(torch's C++ writes them to file descriptor 2) stay out of the learner's output."""

import contextlib
import gzip
import json
import os
import re
import sys
import tempfile

import pytest
import torch

from gpucost_lab.measure.profiling import (
    OPERATOR_COLUMNS,
    operator_table,
    peak_allocated_bytes,
    profile_window,
    quiet_profiler_log,
)
from gpucost_lab.memory.from_model import measure_model_memory


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


@contextlib.contextmanager
def _fd2_captured():
    """Everything written to file descriptor 2 inside the block (C++ included), as a list holding one bytes."""
    got = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield got
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            got.append(captured.read())


def test_torch_profiler_on_this_build_logs_its_start_and_stop_to_fd_2():
    # what the package's helpers guard against: a bare torch.profiler run writes lines like
    # "USDT:2026-01-01 12:00:00 123:123 SyncActivityProfilerHandler.cpp:52] profiler_start" (C++, straight to fd 2)
    with _fd2_captured() as got:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            torch.ones(4).sum()
    if b"profiler_start" not in got[0]:
        pytest.skip("this torch build logs nothing when the profiler starts")
    assert re.search(rb"^USDT:.*\] profiler_start$", got[0], re.MULTILINE), got[0]


def test_profile_window_and_the_memory_measurement_write_nothing_to_fd_2():
    step, calls = _step_factory()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with _fd2_captured() as got:
        prof = profile_window(step, wait=1, warmup=1, active=2)
        operator_table(prof)
        peak_allocated_bytes(prof)
        measure_model_memory(model, (torch.randn(4, 8),), backward_working=True)  # its own profiler run
    assert got == [b""]
    assert len(calls) == 4 and "aten::addmm" in set(operator_table(prof, top=None)["name"])  # still profiled


def test_quiet_profiler_log_drops_only_the_profilers_lines():
    chatter = b"USDT:2026-12-01 14:13:42 14525:14525 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
    stage = b"STAGE:2026-12-01 14:13:53 14666:14666 SyncActivityProfilerHandler.cpp:51] Completed Stage: Warm Up\n"
    with _fd2_captured() as got:
        with quiet_profiler_log():
            os.write(2, b"a warning of the step\n" + chatter + stage + b"USDT: said by someone else\n")
    assert got[0].decode().splitlines() == ["a warning of the step", "USDT: said by someone else"]


def test_quiet_profiler_log_restores_fd_2_when_the_block_raises():
    before = os.fstat(2)
    with pytest.raises(RuntimeError), quiet_profiler_log():
        os.write(2, b"kept\n")
        raise RuntimeError("inside")
    after = os.fstat(2)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
