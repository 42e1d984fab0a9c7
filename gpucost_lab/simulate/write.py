"""A seeded, simulated single-GPU training loop that writes a torch.profiler (Kineto) trace (chapter 02).

Most learners have no GPU, and a CPU-only torch trace has no kernels, copies or CUDA syncs. ``simulate`` runs a
small discrete-event model of one training process on a simulated clock (no sleeps, no torch) and returns the trace
a real ``torch.profiler`` export would hold, for ``gpucost_lab.timeline``, Perfetto or TensorBoard to read. Each
knob of :class:`~gpucost_lab.simulate.config.SimConfig` creates one recognisable bottleneck;
:data:`~gpucost_lab.simulate.config.SCENARIOS` names them.

What it models:
- the main thread: one ``ProfilerStep#N`` per step holding the DataLoader's ``__next__``, the batch's
  host-to-device copy and the "forward", "backward" and "optimizer" phases, each kernel launched by a
  ``cudaLaunchKernel`` inside its ``aten::`` op; then the optional ``loss.item()`` sync, "eval" and "checkpoint";
- data-loader workers (one process each) decoding batches ahead, ``PREFETCH_FACTOR`` batches per worker handed
  out round-robin as torch's DataLoader does; with ``num_workers=0`` the main thread decodes each batch itself;
- one CUDA stream (7) running kernels and copies in launch order, none before its launch call ends; kernel time
  = max(FLOPs / peak, bytes / bandwidth) / ROOFLINE_EFFICIENCY + KERNEL_LATENCY_US, from the catalog's figures;
- the batch's copy issued on that same stream, as ``x.to("cuda", non_blocking=...)`` issues it on the current
  stream: from pinned memory (``non_blocking=True``) the host call returns at once and the copy starts when the
  kernels queued before it have ended, so it never overlaps a kernel; from pageable memory the call holds the host
  until the copy has ended, at a lower bandwidth (CUDA Runtime API, "API synchronization behavior": the stream is
  synchronized first and the data staged through a pinned buffer). Overlapping a copy with kernels needs a second
  stream, which the simulator leaves out (below);
- the driver's launch queue: at most LAUNCH_QUEUE_DEPTH pending GPU operations, then the launch call blocks;
- a loss read (``loss.item()``: a sync) every step with ``item_sync``, otherwise only before eval and checkpoint,
  as a loop that logs its loss there does, so no queued training work leaks into those phases' annotations;
- ``[memory]`` events for the input batch, the activations and the gradient buffer; weights, gradients and Adam
  state are resident before the trace starts and only counted in "Total Allocated".

What it leaves out: the pin-memory thread, autograd's own backward thread, the caching allocator's reuse of
blocks, other streams, GPU-side variation (only CPU durations are jittered), eval data loading (the validation set
is taken to be resident on the GPU), PCIe generations other than 4.0, and kernel names of GPUs other than Ampere.
The same seed and knobs give a byte-identical file.

Where it lives: the knobs and the machine's figures in :mod:`gpucost_lab.simulate.config`, the model itself in
:mod:`gpucost_lab.simulate.run`, the trace's format in :mod:`gpucost_lab.simulate.trace`; this module runs it and
writes the file.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path

from gpucost_lab._validate import InputError, output_file
from gpucost_lab.atomic import atomic_write_stream
from gpucost_lab.simulate.config import SCENARIOS, SimConfig
from gpucost_lab.simulate.run import SimRun
from gpucost_lab.simulate.trace import NS_PER_US

_HEALTHY = SCENARIOS["healthy"]  # the default run: SimConfig()


def simulate(config: SimConfig = _HEALTHY) -> dict:
    """The whole trace of one simulated run, as a JSON-ready dict in torch.profiler's (Kineto's) format."""
    return SimRun(config).run()


def phase_totals_us(config: SimConfig = _HEALTHY) -> dict[str, float]:
    """Ground truth: main-thread microseconds in each phase, and "wall", from the trace's start to the end of
    its last event on any thread or stream. "data" is the DataLoader's ``__next__`` (waiting and, with no
    workers, decoding); "h2d_copy" the batch's copy call; "forward", "backward", "optimizer", "eval" and
    "checkpoint" their annotations; "item_sync" the loss reads (``loss.item()``) between optimizer and eval.
    While the GPU runs behind, a phase's main-thread time is its launch time, not its GPU time."""
    run = SimRun(config)
    run.run()
    return {**{name: ns / NS_PER_US for name, ns in run.phase_ns.items()}, "wall": run.end / NS_PER_US}


_CHUNK_EVENTS = 10_000  # events encoded at a time: the JSON is never held whole (about 270 bytes an event)


def _json_pieces(trace: dict):
    """The compact JSON of ``trace`` (as ``json.dumps(trace, separators=(",", ":"))`` writes it), in pieces of
    :data:`_CHUNK_EVENTS` events; each event is dropped from ``trace`` once encoded."""
    events = trace["traceEvents"]
    head = json.dumps({**trace, "traceEvents": []}, separators=(",", ":"))
    at = head.index('"traceEvents":[]') + len('"traceEvents":[')
    yield head[:at].encode()
    for i in range(0, len(events), _CHUNK_EVENTS):
        piece = json.dumps(events[i : i + _CHUNK_EVENTS], separators=(",", ":"))[1:-1]
        events[i : i + _CHUNK_EVENTS] = [None] * len(events[i : i + _CHUNK_EVENTS])  # freed as they are written
        yield (b"," if i else b"") + piece.encode()
    yield head[at:].encode()


def _write_json(trace: dict, f, compress: bool) -> None:
    if not compress:
        for piece in _json_pieces(trace):
            f.write(piece)
        return
    with gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as z:  # same header on every Python
        for piece in _json_pieces(trace):
            z.write(piece)


def trace_bytes(config: SimConfig = _HEALTHY, compress: bool = False) -> bytes:
    """The trace file's exact bytes: compact JSON, gzipped with mtime 0 and no file name when ``compress``."""
    buffer = io.BytesIO()
    _write_json(simulate(config), buffer, compress)
    return buffer.getvalue()


def trace_path(path: str | os.PathLike, name: str = "path") -> Path:
    """``path`` as a Path if a trace can be written there; else ValueError naming ``name`` (see ``output_file``)."""
    if not Path(path).name.endswith((".json", ".json.gz")):
        raise InputError(name, f"{name} must end with .json or .json.gz, got {str(path)!r}")
    return output_file(name, path)


def write_trace(config: SimConfig, path: str | os.PathLike) -> Path:
    """Write the trace to ``path`` (``.json`` or ``.json.gz``) atomically (:mod:`gpucost_lab.atomic`).
    Returns the path."""
    path = trace_path(path)
    trace = simulate(config)
    return atomic_write_stream(path, lambda f: _write_json(trace, f, path.name.endswith(".gz")))


__all__ = ["phase_totals_us", "simulate", "trace_bytes", "trace_path", "write_trace"]
