"""Profile a short, representative window of a step function (chapters 01 and 02).

Profiling every step distorts the workload; ``torch.profiler.schedule(wait, warmup, active)`` records
only a few steps after the profiler itself has warmed up.

The CPU build of torch logs every profiler start and stop from C++ straight to the process's stderr (file
descriptor 2), e.g. ``USDT:2026-01-01 12:00:00 123:123 SyncActivityProfilerHandler.cpp:52] profiler_start``: noise
under a notebook cell, which no Python setting turns off. :func:`quiet_profiler_log` drops those lines around the
profiler's own calls (start, step, stop) and passes everything else written to stderr meanwhile through.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator

import pandas as pd
from torch.profiler import ProfilerActivity, profile, schedule

from gpucost_lab._validate import integer_at_least

OPERATOR_COLUMNS = ["name", "calls", "self_time_s", "total_time_s", "self_time_share"]
# Kineto's log lines: "USDT:" (profiler_start, profiler_stop) always, "STAGE:" at a lower KINETO_LOG_LEVEL
_PROFILER_LOG_LINE = re.compile(rb"^(?:USDT|STAGE):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ [\w.]+:\d+\] ")


def _flush_stderr() -> None:
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stderr.flush()


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


@contextlib.contextmanager
def quiet_profiler_log() -> Iterator[None]:
    """Drop the profiler's start/stop log lines (module docstring) written to file descriptor 2 inside the block.

    Whatever else reaches file descriptor 2 meanwhile is written there when the block ends. Keep the block to the
    profiler's own calls: the step being profiled should write to the real stderr as it goes."""
    _flush_stderr()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to guard
        saved = None
    if saved is None:
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            _flush_stderr()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            lines = captured.read().splitlines(keepends=True)
            _write_all(2, b"".join(line for line in lines if not _PROFILER_LOG_LINE.match(line)))


def profile_window(
    step: Callable[[], object],
    *,
    device: str = "cpu",
    wait: int = 1,
    warmup: int = 1,
    active: int = 5,
    record_shapes: bool = False,
    profile_memory: bool = True,
    with_stack: bool = False,
    trace_path: str | os.PathLike | None = None,
) -> profile:
    """Run ``wait + warmup + active`` steps under the profiler, recording the ``active`` ones.

    With ``trace_path`` (``.json`` or ``.json.gz``) the Chrome/Kineto trace is written there; open it
    in Perfetto. Returns the finished profiler, for :func:`operator_table` and :func:`peak_allocated_bytes`.
    """
    integer_at_least("wait", wait, 0)
    integer_at_least("warmup", warmup, 0)
    integer_at_least("active", active, 1)
    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    prof = profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
    )
    with quiet_profiler_log():  # what `with profile(...)` does, its log lines dropped
        prof.start()
    try:
        for _ in range(wait + warmup + active):
            step()
            with quiet_profiler_log():
                prof.step()
    finally:
        with quiet_profiler_log():
            prof.stop()
    if trace_path is not None:
        prof.export_chrome_trace(str(trace_path))
    return prof


def operator_table(
    prof: profile, top: int | None = 10, on_device: bool = False, by_input_shape: bool = False
) -> pd.DataFrame:
    """Operators by self time, widest first: ``name, calls, self_time_s, total_time_s, self_time_share``.

    ``on_device=True`` ranks by time on the accelerator (kernels) instead of CPU time. ``by_input_shape=True``
    (a profile recorded with ``record_shapes=True``) gives one row per operator and input shapes, as
    ``key_averages(group_by_input_shape=True)`` groups them, with an ``input_shapes`` column after ``name``.
    """
    rows = []
    for e in prof.key_averages(group_by_input_shape=by_input_shape):
        if e.key.startswith("ProfilerStep"):  # the step markers, not operators
            continue
        self_us = e.self_device_time_total if on_device else e.self_cpu_time_total
        total_us = e.device_time_total if on_device else e.cpu_time_total
        rows.append((e.key, str(e.input_shapes), e.count, self_us / 1e6, total_us / 1e6))
    table = pd.DataFrame(rows, columns=[OPERATOR_COLUMNS[0], "input_shapes", *OPERATOR_COLUMNS[1:4]])
    if not by_input_shape:
        table = table.drop(columns="input_shapes")
    total_self_s = table["self_time_s"].sum()
    table["self_time_share"] = table["self_time_s"] / total_self_s if total_self_s > 0 else 0.0
    table = table.sort_values("self_time_s", ascending=False, kind="stable").reset_index(drop=True)
    return table if top is None else table.head(top)


def peak_allocated_bytes(prof: profile, device_type: int = 0) -> int:
    """Peak of the allocator's running total during the recorded steps, from ``[memory]`` events.

    ``device_type`` 0 is the CPU, 1 is CUDA. Allocations made before profiling started are not in
    the running total, so this is memory allocated *within* the window.
    """
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            events = json.load(f).get("traceEvents", [])
    finally:
        os.unlink(path)
    totals = [
        e["args"]["Total Allocated"]
        for e in events
        if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == device_type
    ]
    return int(max(totals, default=0))
