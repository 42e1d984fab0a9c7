"""A profiler window of one request (chapter 08, "Profile the service"): where a server's time for a request goes,
phase by phase and operator by operator, without a server.

:func:`profile_request` runs in this process the functions the model server runs for one request (``app.py``): the
body's JSON decoded (``receive_decode``; the server's phase also reads the body off the socket, which here is
already in memory), the rows checked and made a float32 tensor (``preprocess``, with ``stall="pause"`` the pause on
every ``pause_every``-th request, counted from 1 as the server counts, the warm-up requests included), the model on
a batch of this one request (``model``, ``torch.cat`` of it as the batcher does) and the outputs turned into JSON
with the configuration's stall (``serialize``). The server's ``queue`` and ``send`` phases have no counterpart in one
process. After ``warmup`` requests (torch's first calls allocate and pick kernels), one request runs under
``torch.profiler.profile`` (CPU activity), each phase inside a ``torch.profiler.record_function`` named as the
server's phase; the server itself carries no such labels (outside a profiler they are still calls on every request).

``phases_ms`` is each label's CPU time total from the profiler's ``key_averages``: the time from entering its window
to leaving it on this thread (a sleep included, as the server's own stamps count it), in ms. ``top_ops``: the
operators by self CPU time (the phase labels themselves left out: they are ``phases_ms``). ``trace_path``: the
Chrome trace of the profiled request, which ``gpucost_lab.timeline.load_trace`` reads. Torch runs on one thread for
the call, as a server worker does (``instances.py``), and gets its former thread count back after.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from gpucost_lab._validate import InputError, integer_at_least, output_file
from gpucost_lab.atomic import atomic_write_bytes
from gpucost_lab.measure.profiling import quiet_profiler_log
from gpucost_lab.serve.app import decode_body, preprocess_inputs, serialize
from gpucost_lab.serve.client import encode_rows
from gpucost_lab.serve.config import MAX_ROWS_PER_REQUEST, MAX_SEED, ServeConfig
from gpucost_lab.serve.model import build_model, example_inputs, forward

PROFILED_PHASES = ("receive_decode", "preprocess", "model", "serialize")  # the server's phases one process has
TOP_OPS_COLUMNS = ["name", "calls", "self_cpu_ms", "cpu_total_ms"]
# Warm-up requests: torch's first calls settle within a few; a hundred only delay the profile (and, with a pause every
# few requests, would decide for the caller which request is profiled).
MAX_WARMUP = 100
TOP_OPS = 10  # operators kept in top_ops by default
MAX_TOP_OPS = 1000  # more rows than one request's distinct operators


@dataclass(frozen=True)
class RequestProfile:
    """One request profiled (module docstring): its configuration, each phase's CPU time in ms, and the operators
    by self CPU time."""

    config: ServeConfig
    phases_ms: dict[str, float]
    top_ops: pd.DataFrame

    def table(self) -> pd.DataFrame:
        """One row per phase: ``phase``, ``ms`` and ``share`` (of the four phases' sum, the request's time here)."""
        total_ms = sum(self.phases_ms.values())
        rows = [
            {"phase": name, "ms": ms, "share": ms / total_ms if total_ms > 0 else 0.0}
            for name, ms in self.phases_ms.items()
        ]
        return pd.DataFrame(rows, columns=["phase", "ms", "share"])

    def slowest_phase(self) -> str:
        """The phase that took the longest."""
        return max(self.phases_ms, key=lambda name: self.phases_ms[name])

    def text(self) -> str:
        """The table as a sentence, then the slowest phase and the top operator."""
        table = self.table()
        parts = ", ".join(f"{row.phase} {row.ms:.3f} ms ({row.share:.0%})" for row in table.itertuples())
        lines = [
            f"one request, stall {self.config.stall!r}: {parts}",
            f"slowest phase: {self.slowest_phase()}",
        ]
        if not self.top_ops.empty:
            top = self.top_ops.iloc[0]
            lines.append(
                f"top operator by self CPU time: {top['name']}, {int(top['calls'])} calls, {top['self_cpu_ms']:.3f} ms"
            )
        return "\n".join(lines)


def _request(model: torch.nn.Module, body: bytes, config: ServeConfig, number: int) -> None:
    """The server's work for one request (``app.py``'s ``infer`` and its batcher), each phase a labelled window."""
    with record_function("receive_decode"):
        inputs = decode_body(body)
    with record_function("preprocess"):
        tensor = preprocess_inputs(inputs, config.input_width)
        if config.stall == "pause" and number % config.pause_every == 0:
            time.sleep(config.pause_ms / 1000.0)  # as the server: a blocking stop
    with record_function("model"):
        outputs = forward(model, torch.cat([tensor]))
    with record_function("serialize"):
        serialize(outputs, config.stall)


def _top_ops(prof: profile, top: int) -> tuple[dict[str, float], pd.DataFrame]:
    """Each phase label's CPU time total (ms) and the other entries of ``key_averages`` by self CPU time."""
    phases_ms = dict.fromkeys(PROFILED_PHASES, 0.0)
    rows = []
    for event in prof.key_averages():
        if event.key in phases_ms:
            phases_ms[event.key] = event.cpu_time_total / 1000.0
        elif not event.key.startswith("ProfilerStep"):
            rows.append((event.key, event.count, event.self_cpu_time_total / 1000.0, event.cpu_time_total / 1000.0))
    table = pd.DataFrame(rows, columns=TOP_OPS_COLUMNS)
    table = table.sort_values("self_cpu_ms", ascending=False, kind="stable").head(top).reset_index(drop=True)
    return phases_ms, table


def _export(prof: profile, path: Path) -> None:
    """The profile's Chrome trace written to ``path`` (gzip when it ends in ``.gz``), atomically."""
    suffix = ".json.gz" if path.name.endswith(".gz") else ".json"
    fd, temporary = tempfile.mkstemp(suffix=suffix)
    os.close(fd)
    try:
        prof.export_chrome_trace(temporary)
        atomic_write_bytes(path, Path(temporary).read_bytes(), name="trace_path")
    finally:
        os.unlink(temporary)


def profile_request(
    config: ServeConfig,
    *,
    rows: int = 1,
    seed: int = 0,
    warmup: int = 3,
    trace_path: str | os.PathLike | None = None,
    top: int = TOP_OPS,
) -> RequestProfile:
    """Profile one request of ``rows`` seeded input rows to ``config``'s model after ``warmup`` unprofiled ones
    (module docstring); with ``trace_path``, its Chrome trace is written there. ``top``: the operators kept.

    Raises InputError for a bad argument (before any work).
    """
    if not isinstance(config, ServeConfig):
        raise InputError("config", f"config must be a ServeConfig, got {type(config).__name__}")
    rows = integer_at_least("rows", rows, 1, MAX_ROWS_PER_REQUEST)
    seed = integer_at_least("seed", seed, 0, MAX_SEED)
    warmup = integer_at_least("warmup", warmup, 0, MAX_WARMUP)
    top = integer_at_least("top", top, 1, MAX_TOP_OPS)
    target = output_file("trace_path", trace_path) if trace_path is not None else None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = build_model(config)
        body = encode_rows(example_inputs(config, rows, seed).tolist())
        for number in range(1, warmup + 1):
            _request(model, body, config, number)
        prof = profile(activities=[ProfilerActivity.CPU])
        with quiet_profiler_log():
            prof.start()
        try:
            _request(model, body, config, warmup + 1)
        finally:
            with quiet_profiler_log():
                prof.stop()
    finally:
        torch.set_num_threads(threads)
    phases_ms, top_ops = _top_ops(prof, top)
    if target is not None:
        _export(prof, target)
    return RequestProfile(config=config, phases_ms=phases_ms, top_ops=top_ops)
